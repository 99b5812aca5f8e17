#!/usr/bin/env python3
"""Distributed load on one machine (issue 16): 1, 2 and 4 local shards (`attack -shard
I/N -start-at T`) against the built-in simulator, at one total rate, merged by `report`:

  1. the total rate held: merged achieved rate against asked (goal: within 0.5%);
  2. the merged report's p50/p99 latency and send lag p99 beside a single process's at the
     same total rate, in the same run;
  3. the merged request count against the one-machine count (they must be equal).

The simulator runs on CPU 1; the shards share CPU 0 (one event-loop thread each), so the
N = 1 row is the single-process baseline under the same conditions. Traffic goes to
127.0.0.1 only; every run is bounded by -duration.

Usage: bench/distributed/run.py [--rate 4000] [--seconds 10] [--shards 1,2,4]
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import GENERATOR_CPU, LOADLAB, OUT, ROOT, SERVER_CPU, free_port, sh  # noqa: E402

RECIPE = '{"route": "/*", "body": "hello", "stages": [{"at": 0, "status": 200, "latency": 0}]}'
# Time for every shard to read its targets and warm its connections before time zero.
START_MARGIN_S = 2.0


def simulator():
    """The simulator, one thread pinned to SERVER_CPU, answering 200 at once."""
    recipe = os.path.join(OUT, "distributed-recipe.json")
    with open(recipe, "w") as f:
        f.write(RECIPE)
    port = free_port()
    proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, LOADLAB, "simulate", recipe,
                             f"-addr=127.0.0.1:{port}", "-threads=1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return proc, f"http://127.0.0.1:{port}/"


def sharded_run(url, rate, seconds, count):
    """`count` shards started together; returns the merged JSON report and the files."""
    targets = os.path.join(OUT, "distributed-targets.txt")
    with open(targets, "w") as f:
        f.write(f"GET {url}\n")
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=START_MARGIN_S)
    start_at = at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    files, procs = [], []
    for index in range(count):
        path = os.path.join(OUT, f"distributed-{count}-{index}.llr")
        files.append(path)
        procs.append(subprocess.Popen(
            ["taskset", "-c", GENERATOR_CPU, LOADLAB, "attack", f"-targets={targets}",
             f"-rate={rate}", f"-duration={seconds}s", "-threads=1", "-quiet", "-seed=1",
             f"-shard={index}/{count}", f"-start-at={start_at}", f"-output={path}"],
            stderr=subprocess.PIPE))
    for proc in procs:
        _, err = proc.communicate(timeout=seconds + START_MARGIN_S + 60)
        if proc.returncode != 0:
            sys.exit(f"a shard failed ({proc.returncode}): {err.decode()[-500:]}")
    report = subprocess.run([LOADLAB, "report", "-type=json", *files], check=True,
                            capture_output=True, text=True)
    if report.stderr.strip():
        print("   " + report.stderr.strip().replace("\n", "\n   "), flush=True)
    return json.loads(report.stdout)


def row(label, report, asked_total):
    extra = report["loadlab"]
    lat = report["latencies"]
    return {"label": label, "requests": report["requests"], "rate": report["rate"],
            "asked": extra.get("asked_rate") or asked_total, "ratio": extra.get("rate_ratio", 0),
            "p50_us": lat["50th"] / 1e3, "p99_us": lat["99th"] / 1e3,
            "lag_p99_us": extra.get("send_lag", {}).get("99th", 0) / 1e3}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=int, default=4000, help="total requests per second")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--shards", default="1,2,4")
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    print("== building (release)", flush=True)
    sh("cargo", "build", "--release", "-q", "-p", "loadlab", cwd=ROOT)
    server, url = simulator()
    rows = []
    try:
        for count in [int(n) for n in args.shards.split(",")]:
            print(f"== {count} shard(s), {args.rate}/s in all for {args.seconds}s", flush=True)
            rows.append(row(f"{count} shard(s)", sharded_run(url, args.rate, args.seconds, count), args.rate))
    finally:
        server.terminate()
        server.wait()
    base = rows[0]
    print()
    print(f"total {args.rate} req/s for {args.seconds}s against the simulator (CPU {SERVER_CPU}); "
          f"shards on CPU {GENERATOR_CPU}; first row is the baseline")
    print(f"   {'run':<12} {'requests':>9} {'rate':>10} {'asked':>10} {'held':>8} "
          f"{'p50 µs':>8} {'p99 µs':>8} {'lag p99 µs':>11}  vs baseline")
    for r in rows:
        same = "same count" if r["requests"] == base["requests"] else f"COUNT DIFFERS ({r['requests'] - base['requests']:+d})"
        print(f"   {r['label']:<12} {r['requests']:>9} {r['rate']:>10.2f} {r['asked']:>10.2f} "
              f"{r['ratio'] * 100:>7.2f}% {r['p50_us']:>8.0f} {r['p99_us']:>8.0f} {r['lag_p99_us']:>11.0f}  "
              f"{same}, p50 {r['p50_us'] / max(base['p50_us'], 1e-9):.2f}x, p99 {r['p99_us'] / max(base['p99_us'], 1e-9):.2f}x")
    worst = min(r["ratio"] for r in rows)
    print(f"   worst rate held: {worst * 100:.2f}% of asked (goal >= 99.5%)")


if __name__ == "__main__":
    main()
