#!/usr/bin/env python3
"""One run steered as one over 16 local shards (issue 27): `attack -steer` shards on
loopback, `loadlab steer` merging them, the live view and the stop rules on. Measures:

  1. the coordinator's CPU and peak memory, per shard and per second of run;
  2. the live figures' bandwidth (bytes per shard-second, from the coordinator's verdict);
  3. the delay from a stop rule's condition to the last shard stopping: the simulator's
     latency rises at a known instant; the rule `p50 > 20ms for 2s` must hold 2 s, then
     fires on the merged figures; the shards' end blocks say when each stopped.

The simulator runs on CPU 1; the shards share CPU 0 (one event-loop thread each); the
coordinator is not pinned. Traffic goes to 127.0.0.1 only; every run is bounded by
-duration and the coordinator by -deadline.

Usage: bench/distributed/steer.py [--shards 16] [--rate 4000] [--rise-at 8]
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import GENERATOR_CPU, LOADLAB, OUT, SERVER_CPU, free_port  # noqa: E402

START_MARGIN_S = 3.0
RULE = "p50 > 20ms for 2s"


def simulator(rise_at_s):
    """Answers after 1 ms until `rise_at_s` on its clock, then after 30 ms."""
    recipe = os.path.join(OUT, "steer-recipe.json")
    with open(recipe, "w") as f:
        json.dump({"route": "/*", "body": "hello", "stages": [
            {"at": 0, "status": 200, "latency": "1ms"},
            {"at": f"{rise_at_s}s", "status": 200, "latency": "30ms"}]}, f)
    port = free_port()
    started = time.time()
    proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, LOADLAB, "simulate", recipe,
                             f"-addr=127.0.0.1:{port}", "-threads=1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return proc, f"http://127.0.0.1:{port}/", started + rise_at_s


def start_shards(url, count, rate, seconds):
    targets = os.path.join(OUT, "steer-targets.txt")
    with open(targets, "w") as f:
        f.write(f"GET {url}\n")
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=START_MARGIN_S)
    start_at = at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    shards = []
    for index in range(count):
        port = free_port()
        path = os.path.join(OUT, f"steer-{count}-{index}.llr")
        proc = subprocess.Popen(
            ["taskset", "-c", GENERATOR_CPU, LOADLAB, "attack", f"-targets={targets}",
             f"-rate={rate}", f"-duration={seconds}s", "-threads=1", "-quiet", "-seed=1",
             f"-stop-when={RULE}", f"-shard={index}/{count}", f"-start-at={start_at}",
             f"-steer=127.0.0.1:{port}", f"-output={path}"],
            stderr=subprocess.DEVNULL)
        shards.append((proc, port, path))
    return shards, at.timestamp()


def coordinator(ports):
    """`loadlab steer` over the shards; returns (cpu_s, peak_rss_kib, wall_s, stderr)."""
    started = time.time()
    proc = subprocess.Popen([LOADLAB, "steer", *[f"127.0.0.1:{p}" for p in ports],
                             "-deadline=120s", "-wait=20s"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = proc.stderr.read().decode()
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss, time.time() - started, stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--rate", type=int, default=4000, help="whole-run requests/s")
    parser.add_argument("--rise-at", type=float, default=8.0, help="run second the latency rises")
    parser.add_argument("--seconds", type=int, default=40)
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    sim, url, _ = simulator(args.rise_at + START_MARGIN_S + 0.5)
    try:
        shards, zero = start_shards(url, args.shards, args.rate, args.seconds)
        rise_unix = zero + args.rise_at
        cpu_s, rss_kib, wall_s, stderr = coordinator([port for _, port, _ in shards])
        for proc, _, _ in shards:
            proc.wait(timeout=60)
    finally:
        sim.terminate()
        sim.wait()
    reports = [json.loads(subprocess.run([LOADLAB, "report", "-type=json", path],
                                         capture_output=True, text=True).stdout)
               for _, _, path in shards]
    last_end_unix = max(datetime.datetime.fromisoformat(r["end"].replace("Z", "+00:00")).timestamp()
                        for r in reports)
    print(stderr[-3000:])
    run_s = max(0.1, wall_s)
    fired = re.search(r"fired at (\d+(?:\.\d+)?)s", stderr)
    stopped = re.search(r"every shard stopped within ([^ ]+) of the stop", stderr)
    band = re.search(r"\((\d+) bytes per shard-second\)", stderr)
    print(f"\n{args.shards} shards, {args.rate} req/s in all, rule '{RULE}', latency rise at run second {args.rise_at}")
    print(f"coordinator: {cpu_s:.3f} CPU-s over {wall_s:.1f} s = {cpu_s / run_s * 1000:.1f} ms CPU per second, "
          f"{cpu_s / run_s / args.shards * 1e6:.0f} µs CPU per shard-second; peak RSS {rss_kib / 1024:.1f} MiB")
    if band:
        print(f"live figures: {band.group(1)} bytes per shard-second")
    if fired:
        fired_unix = zero + float(fired.group(1))
        print(f"rule fired at run second {fired.group(1)} (condition from {args.rise_at}, held 2 s)")
        print(f"from the rule's firing instant to the last response of the last shard: "
              f"{(last_end_unix - fired_unix) * 1000:.0f} ms; from the condition's start: "
              f"{(last_end_unix - rise_unix) * 1000:.0f} ms")
    if stopped:
        print(f"from the stop going out to the last shard's final answer: {stopped.group(1)}")
    stops = sorted({json.dumps(r.get("run", {}).get("stop", "")) for r in reports})
    print(f"shard stop reasons: {stops}")


if __name__ == "__main__":
    main()
