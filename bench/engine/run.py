#!/usr/bin/env python3
"""Engine benchmark: the `loadlab attack` figures of DESIGN.md section 8, with the peers
measured in the same run against the same server.

Set-up: nginx (Debian's nginx-light) with one worker pinned to CPU 1, answering a small
body; every generator pinned to CPU 0. Figures:

  1. CPU per request: loadlab, open model at 20k req/s, vs wrk (closed model, 1 thread,
     50 connections, as fast as it goes); vegeta at 10k req/s and hey as extra peers.
  2. The highest open-model rate loadlab holds within 0.5% of asked (rate sweep).
  3. Send lag p99 at 50k req/s.
  4. Peak RSS over a long run at 50k req/s, and record bytes per request.

  6. The cost of -trace per request: off, on at 1% (-trace-sample=0.01), on at 100%, and
     on at 100% with a -trace-state beside each traceparent, at 20k req/s, alternating,
     three rounds, medians and ratios to off (--trace-only runs this section alone).

  0. With --baseline BIN (another loadlab build, e.g. the last release): CPU per request and
     send lag of both builds at 20k and 50k req/s, alternating, three rounds each, medians
     and ratios: how a change (a refactor, say) shows "the same figures within noise";
     --baseline-only runs this section alone.

Usage: bench/engine/run.py [--seconds N] [--long-seconds N] [--rates 50000,100000,...] [--baseline BIN [--baseline-only]] [--trace-only]
Installs wrk and nginx-light with apt-get when missing; vegeta via bench/lib/vegeta.sh.
Everything goes to loopback. Output: a table with goals and ratios.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

from benchlib import LOADLAB, OUT, ROOT, Nginx, ensure_packages, free_port, hey, loadlab, run_loadlab, sh, vegeta, wrk  # noqa: E402

GENERATOR_CPU, SERVER_CPU = "0", "1"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--long-seconds", type=int, default=60)
    parser.add_argument("--rates", default="50000,60000,70000,75000,80000,90000,100000,150000")
    parser.add_argument("--baseline", help="another loadlab binary to measure beside this build")
    parser.add_argument("--baseline-only", action="store_true", help="only section 0, this build vs --baseline")
    parser.add_argument("--trace-only", action="store_true", help="only section 6, the cost of -trace")
    args = parser.parse_args()
    if args.baseline_only and not args.baseline:
        parser.error("--baseline-only needs --baseline BIN")
    os.makedirs(OUT, exist_ok=True)
    ensure_packages()
    print("== building loadlab (release)", flush=True)
    sh("cargo", "build", "--release", "-q", "-p", "loadlab", cwd=ROOT)
    print(f"== machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    server = Nginx()
    try:
        run_all(server.url, args)
    finally:
        server.stop()


def run_all(url, args):
    s = args.seconds
    if args.trace_only:
        trace_cost(url, s)
        return
    if args.baseline:
        against_baseline(url, args.baseline, s)
        if args.baseline_only:
            return
    print(f"== 1. CPU per request ({s}s each; generators on CPU {GENERATOR_CPU}, nginx on CPU {SERVER_CPU})", flush=True)
    peers = [wrk(url, s), loadlab(url, 20000, s)]
    peers += [p for p in (vegeta(url, 10000, s), hey(url, s)) if p]
    for p in peers:
        print(f"   {p['tool']:<26} {p['rate']:>10.0f} req/s   {p['cpu_us']:6.2f} CPU-µs/request", flush=True)
    ours, theirs = peers[1]["cpu_us"], peers[0]["cpu_us"]
    print(f"   loadlab / wrk CPU per request: {ours / theirs:.2f}x (goal <= 1.00)", flush=True)

    print(f"== 2-3. rate sweep ({s}s each): achieved within 0.5% of asked, send lag p99, CPU per request "
          f"(falls with the rate: below saturation each send wakes a sleeping worker and nginx)", flush=True)
    held, lag_at_50k = 0, None
    for rate in [int(r) for r in args.rates.split(",")]:
        r = loadlab(url, rate, s)
        ok = r["ratio"] >= 0.995
        held = rate if ok else held
        if rate == 50000:
            lag_at_50k = r["lag_p99_us"]
        print(f"   asked {rate:>7}/s  achieved {r['rate']:>10.0f}/s ({r['ratio'] * 100:6.2f}%)  "
              f"lag p99 {r['lag_p99_us']:>9.1f} µs  {r['cpu_us']:5.2f} CPU-µs/req  success {r['success'] * 100:.1f}%  "
              f"{'held' if ok else 'NOT held'}", flush=True)
    print(f"   highest rate held within 0.5%: {held}/s (goal >= 150000)")
    if lag_at_50k is not None:
        print(f"   send lag p99 at 50k/s: {lag_at_50k:.1f} µs (goal <= 200)")

    print(f"== 4. {args.long_seconds}s at 50k/s: memory and record size", flush=True)
    long = loadlab(url, 50000, args.long_seconds, keep=os.path.join(OUT, "long.llr"))
    print(f"   peak RSS {long['rss_mib']:.1f} MiB (goal <= 64), record {long['bytes_per_request']:.2f} bytes/request "
          f"(goal <= 16), achieved {long['ratio'] * 100:.2f}%, lag p99 {long['lag_p99_us']:.1f} µs")
    os.remove(os.path.join(OUT, "long.llr"))
    connections_10k(args.seconds)
    trace_cost(url, s)


def against_baseline(url, baseline, seconds, rounds=3):
    """This build beside BASELINE, alternating so that drift on the shared machine hits both."""
    print(f"== 0. this build vs baseline {baseline} ({seconds}s each, {rounds} rounds, medians)", flush=True)
    for rate in (20000, 50000):
        runs = {"this build": [], "baseline": []}
        for _ in range(rounds):
            runs["this build"].append(loadlab(url, rate, seconds))
            runs["baseline"].append(loadlab(url, rate, seconds, binary=baseline))
        median = {name: {key: statistics.median(r[key] for r in rs) for key in ("cpu_us", "lag_p99_us", "ratio")}
                  for name, rs in runs.items()}
        for name, m in median.items():
            print(f"   {rate:>6}/s {name:<11} {m['cpu_us']:6.2f} CPU-µs/request  lag p99 {m['lag_p99_us']:8.1f} µs  "
                  f"achieved {m['ratio'] * 100:6.2f}%", flush=True)
        spread = [r["cpu_us"] for rs in runs.values() for r in rs]
        print(f"   {rate:>6}/s this/baseline CPU per request: "
              f"{median['this build']['cpu_us'] / median['baseline']['cpu_us']:.3f}x "
              f"(all rounds {min(spread):.2f}..{max(spread):.2f} µs)", flush=True)


def trace_cost(url, seconds, rate=20000, rounds=3):
    """-trace off, at 1%, at 100% and at 100% with -trace-state, alternating so that drift
    hits all of them alike."""
    print(f"== 6. the cost of -trace per request ({rate}/s, {seconds}s each, {rounds} rounds, medians)", flush=True)
    rows = {"off": [], "-trace 1%": ["-trace", "-trace-sample=0.01"], "-trace 100%": ["-trace"],
            "+tracestate": ["-trace", "-trace-state=loadlab=bench,tenant@sys=0af7651916cd43dd"]}
    runs = {name: [] for name in rows}
    for _ in range(rounds):
        for name, flags in rows.items():
            runs[name].append(run_loadlab(url, [f"-rate={rate}", f"-duration={seconds}s", "-seed=1", *flags],
                                          f"loadlab {name}"))
    median = {name: {key: statistics.median(r[key] for r in rs)
                     for key in ("cpu_us", "lag_p99_us", "ratio", "bytes_per_request")}
              for name, rs in runs.items()}
    off = median["off"]["cpu_us"]
    for name, m in median.items():
        print(f"   {name:<12} {m['cpu_us']:6.2f} CPU-µs/request ({m['cpu_us'] / off:.3f}x off)  "
              f"lag p99 {m['lag_p99_us']:8.1f} µs  achieved {m['ratio'] * 100:6.2f}%  "
              f"record {m['bytes_per_request']:.2f} bytes/request", flush=True)
    spread = [r["cpu_us"] for rs in runs.values() for r in rs]
    print(f"   all rounds {min(spread):.2f}..{max(spread):.2f} CPU-µs/request", flush=True)


def connections_10k(seconds):
    """10k requests in flight (so 10k open connections): 10k req/s against our simulator
    answering after 1 s, on CPU 1."""
    print(f"== 5. 10k open connections ({seconds}s at 10000/s, 1 s server latency)", flush=True)
    recipe = os.path.join(OUT, "one_second.json")
    with open(recipe, "w") as f:
        f.write('{"route": "/*", "body": "ok", "stages": [{"at": 0, "status": 200, "latency": "1s"}]}')
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", SERVER_CPU, LOADLAB, "simulate", recipe, f"-addr=127.0.0.1:{port}", "-threads=1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        r = run_loadlab(f"http://127.0.0.1:{port}/", ["-rate=10000", f"-duration={seconds}s", "-connections=20000"], "10k in flight")
        print(f"   peak RSS {r['rss_mib']:.1f} MiB (goal <= 128) with ~10000 connections open, achieved {r['ratio'] * 100:.2f}%, "
              f"success {r['success'] * 100:.1f}%", flush=True)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
