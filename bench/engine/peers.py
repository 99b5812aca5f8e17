#!/usr/bin/env python3
"""Engine against its open-model peers (issue 13): loadlab beside wrk2 and oha (rate mode)
at the same asked rates, against the same nginx, in one run.

Set-up as bench/engine/run.py: nginx with one worker on CPU 1, every generator on CPU 0
with one thread. Per asked rate (default 20k, 50k, 80k, 100k, 120k, 150k req/s) and per
tool, --rounds rounds (default 3) alternating the tools, medians printed: CPU per request
(wait4: user + system over requests completed), the generator's CPU (user + system over
the run's seconds, 100% is its core), achieved rate, send lag p50/p99 (loadlab records it
per request; the peers do not report one) and peak RSS. Then the closed model at
saturation: loadlab with 50 users against wrk with 50 connections.

  loadlab: at its defaults (it opens the connections the open model needs, up to 10,000
           in flight), and with -max-workers=100, the peers' concurrency; each at every
           -precision given (default: its default and 1ms, wrk2's timer). A generator
           that is behind (achieved below asked) should use its whole core.
           With --baseline BIN, every loadlab row again with that build ("base"), in
           the same rounds: before and after.
  wrk2: ../shared/peers/wrk2 (or --wrk2 PATH), `-t1 -c100 -R RATE`; latency from the
        intended time, 1 ms timer.
  oha:  `oha -q RATE --latency-correction -c 100` (cargo install oha --locked), when on PATH.

Usage: bench/engine/peers.py [--seconds N] [--rounds N] [--rates 20000,...] [--precision D,...]
                             [--wrk2 PATH] [--binary PATH] [--baseline PATH] [--skip-uncapped]
--precision runs loadlab once per given -precision ("default" for its default).
Loopback only; every run is bounded by its duration.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import LOADLAB, OUT, ROOT, Nginx, ensure_packages, measured, run_loadlab, sh  # noqa: E402

WRK2 = os.path.join(ROOT, "..", "shared", "peers", "wrk2")
PEER_CONNECTIONS = 100


def wrk2(path, url, rate, seconds):
    cpu, rss, _, out = measured([path, "-t1", f"-c{PEER_CONNECTIONS}", f"-d{seconds}s", f"-R{rate}", url])
    text = out.decode()
    requests = int(next(line for line in text.splitlines() if "requests in" in line).split()[0])
    return {"rate": requests / seconds, "cpu_us": cpu / max(requests, 1) * 1e6, "cpu_pct": cpu / seconds * 100,
            "rss_mib": rss / 1024}


def oha(url, rate, seconds):
    cpu, rss, _, out = measured(["oha", "--no-tui", "--output-format", "json", "-z", f"{seconds}s",
                                 "-q", str(rate), "--latency-correction", "-c", str(PEER_CONNECTIONS), url])
    summary = json.loads(out)
    requests = sum(summary.get("statusCodeDistribution", {}).values())
    return {"rate": requests / seconds, "cpu_us": cpu / max(requests, 1) * 1e6, "cpu_pct": cpu / seconds * 100,
            "rss_mib": rss / 1024}


def ours(binary, extra_flags):
    def run(url, rate, seconds):
        flags = [f"-rate={rate}", f"-duration={seconds}s"] + extra_flags
        r = run_loadlab(url, flags, "loadlab", binary=binary)
        r["cpu_pct"] = r["cpu_us"] * r["requests"] / 1e6 / seconds * 100
        return {key: r[key] for key in ("rate", "cpu_us", "cpu_pct", "rss_mib", "lag_p50_us", "lag_p99_us")}
    return run


def median_of(runs):
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def open_model(url, args, tools):
    print(f"== open model: {args.seconds}s per run, {args.rounds} rounds alternating, medians; "
          f"generators on CPU 0, nginx on CPU 1", flush=True)
    print(f"   {'asked':>7}  {'tool':<42} {'CPU-µs/req':>10} {'CPU':>5} {'achieved/s':>11} {'of asked':>9} "
          f"{'lag p50':>9} {'lag p99':>9} {'RSS MiB':>8}", flush=True)
    for rate in [int(r) for r in args.rates.split(",")]:
        runs = {name: [] for name in tools}
        for _ in range(args.rounds):
            for name, tool in tools.items():
                runs[name].append(tool(url, rate, args.seconds))
        medians = {name: median_of(rs) for name, rs in runs.items()}
        for name, m in medians.items():
            lag = (f"{m['lag_p50_us']:7.1f}µs {m['lag_p99_us']:7.1f}µs" if "lag_p99_us" in m
                   else f"{'-':>9} {'-':>9}")
            print(f"   {rate:>7}  {name:<42} {m['cpu_us']:10.2f} {m['cpu_pct']:4.0f}% {m['rate']:11.0f} "
                  f"{m['rate'] / rate * 100:8.2f}% {lag} {m['rss_mib']:8.1f}", flush=True)
        for name, m in medians.items():
            if "wrk2" in medians and "loadlab" in name:
                print(f"   {rate:>7}  {name} / wrk2: CPU per request {m['cpu_us'] / medians['wrk2']['cpu_us']:.2f}x, "
                      f"achieved {m['rate'] / medians['wrk2']['rate']:.3f}x", flush=True)
            if f"base {name}" in medians:
                base = medians[f"base {name}"]
                print(f"   {rate:>7}  {name} / base: CPU per request {m['cpu_us'] / base['cpu_us']:.2f}x, "
                      f"achieved {m['rate'] / base['rate']:.3f}x", flush=True)


def closed_model(url, args, binary):
    print(f"== closed model at saturation: 50 users/connections, {args.seconds}s, {args.rounds} rounds", flush=True)
    runs = {"loadlab -rate=0 -max-workers=50": [], "wrk -t1 -c50": []}
    for _ in range(args.rounds):
        r = run_loadlab(url, ["-rate=0", "-max-workers=50", f"-duration={args.seconds}s"], "closed", binary=binary)
        runs["loadlab -rate=0 -max-workers=50"].append({"rate": r["rate"], "cpu_us": r["cpu_us"]})
        cpu, _, _, out = measured(["wrk", "-t1", "-c50", f"-d{args.seconds}s", url])
        requests = int(next(line for line in out.decode().splitlines() if "requests in" in line).split()[0])
        runs["wrk -t1 -c50"].append({"rate": requests / args.seconds, "cpu_us": cpu / requests * 1e6})
    medians = {name: median_of(rs) for name, rs in runs.items()}
    for name, m in medians.items():
        print(f"   {name:<34} {m['rate']:9.0f} req/s  {m['cpu_us']:6.2f} CPU-µs/request", flush=True)
    ours_m, wrk_m = medians["loadlab -rate=0 -max-workers=50"], medians["wrk -t1 -c50"]
    print(f"   loadlab / wrk: throughput {ours_m['rate'] / wrk_m['rate']:.3f}x, CPU per request "
          f"{ours_m['cpu_us'] / wrk_m['cpu_us']:.2f}x", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rates", default="20000,50000,80000,100000,120000,150000")
    parser.add_argument("--precision", default="default,1ms",
                        help='loadlab -precision values, comma-separated ("default": no flag)')
    parser.add_argument("--wrk2", default=WRK2)
    parser.add_argument("--binary", help="a loadlab binary (default: build this tree's release)")
    parser.add_argument("--baseline", help="another loadlab binary, measured beside this one (rows 'base ...')")
    parser.add_argument("--skip-uncapped", action="store_true",
                        help="only loadlab -max-workers=100 (the peers' concurrency), not its defaults")
    parser.add_argument("--skip-closed", action="store_true")
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    ensure_packages()
    binary = args.binary or LOADLAB
    if not args.binary:
        print("== building loadlab (release)", flush=True)
        sh("cargo", "build", "--release", "-q", "-p", "loadlab", cwd=ROOT)
    print(f"== machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    tools = {}
    builds = [("", binary)] + ([("base ", args.baseline)] if args.baseline else [])
    for precision in args.precision.split(","):
        flags = [] if precision == "default" else [f"-precision={precision}"]
        # The peers' concurrency: wrk2 and oha keep PEER_CONNECTIONS connections, where
        # loadlab by default opens what the open model needs, up to 10,000 in flight.
        capped = flags + [f"-max-workers={PEER_CONNECTIONS}"]
        for variant in ([] if args.skip_uncapped else [flags]) + [capped]:
            for prefix, build in builds:
                tools[prefix + " ".join(["loadlab"] + variant)] = ours(build, variant)
    if os.access(args.wrk2, os.X_OK):
        tools["wrk2"] = lambda url, rate, s: wrk2(args.wrk2, url, rate, s)
    else:
        print(f"   wrk2 not found at {args.wrk2}: its rows are skipped", flush=True)
    if shutil.which("oha"):
        tools["oha"] = oha
    else:
        print("   oha not on PATH (cargo install oha --locked): its rows are skipped", flush=True)
    server = Nginx()
    try:
        open_model(server.url, args, tools)
        if not args.skip_closed:
            closed_model(server.url, args, binary)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
