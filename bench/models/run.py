#!/usr/bin/env python3
"""Load-model benchmarks (issue 3), against nginx pinned to CPU 1 with loadlab on CPU 0:

  1. CPU per request of a constant rate, a ramp and steps with the same mean rate, in
     the same run (goal: a ramp or steps cost no more than a constant rate).
  2. Peak RSS of 1000 closed-model users (goal: <= 64 MiB).
  3. Two scenarios at once, 1000 and 1 req/s, for --long-seconds (default 300): each
     one's achieved rate (goal: within 0.5% of asked).
  4. Template render cost: static, one placeholder, fully dynamic (goal: <= 1 µs).

Usage: bench/models/run.py [--seconds N] [--long-seconds N]
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import LOADLAB, OUT, ROOT, Nginx, ensure_packages, measured, run_loadlab, sh  # noqa: E402


def shapes(url, seconds):
    print(f"== 1. CPU per request, same mean rate (20000/s) for {seconds}s each", flush=True)
    rows = [
        ("constant", [f"-rate=20000", f"-duration={seconds}s"]),
        ("ramp", [f"-schedule=line(10000, 30000, {seconds}s)"]),
        ("steps", [f"-schedule=step(10000, 30000, 5000, {seconds / 5}s)"]),
        ("sine", [f"-schedule=sine(20000, 10000, {seconds / 2}s, {seconds}s)"]),
    ]
    ramp_path = os.path.join(OUT, "ramp.llr")
    results = [run_loadlab(url, flags, name, keep=ramp_path if name == "ramp" else None)
               for name, flags in rows]
    base = results[0]["cpu_us"]
    for r in results:
        print(f"   {r['tool']:<9} {r['requests']:>8} requests  {r['cpu_us']:6.2f} CPU-µs/request  "
              f"({r['cpu_us'] / base:.2f}x constant)  achieved {r['ratio'] * 100:.2f}%  lag p99 {r['lag_p99_us']:.0f} µs", flush=True)
    ramp_tracking(ramp_path, seconds)


def ramp_tracking(path, seconds):
    """Per second of the ramp line(10000, 30000, S): requests sent vs the schedule's
    integral over that second (goal: within 0.5%)."""
    out = subprocess.run([LOADLAB, "report", "-every=1s", "-type=json", path], check=True,
                         capture_output=True, text=True).stdout
    worst = 0.0
    for line in out.splitlines():
        row = json.loads(line)
        if "interval" not in row:
            continue
        k = row["interval"]["offset"] / 1e9
        if row["interval"]["duration"] != 1_000_000_000 or k + 1 > seconds:
            continue
        asked = 10000 + 20000 * (k + 0.5) / seconds
        worst = max(worst, abs(row["requests"] - asked) / asked)
    print(f"   ramp: worst second {worst * 100:.3f}% off the schedule (goal <= 0.5%)", flush=True)


def closed_users(url, seconds):
    print(f"== 2. 1000 closed-model users for {seconds}s", flush=True)
    r = run_loadlab(url, ["-concurrency=1000", f"-duration={seconds}s", "-max-workers=1000"], "closed 1000")
    print(f"   peak RSS {r['rss_mib']:.1f} MiB (goal <= 64), {r['requests'] / r['wall']:.0f} req/s, "
          f"{r['cpu_us']:.2f} CPU-µs/request", flush=True)


def two_scenarios(url, seconds):
    print(f"== 3. two scenarios at once for {seconds}s: 1000/s and 1/s", flush=True)
    path = os.path.join(OUT, "two.toml")
    with open(path, "w") as f:
        f.write(f'[defaults]\nduration = "{seconds}s"\n\n'
                f'[[scenario]]\nname = "flood"\ntargets = ["GET {url}flood"]\nrate = 1000\n\n'
                f'[[scenario]]\nname = "poll"\ntargets = ["GET {url}poll"]\nrate = 1\n')
    run_loadlab(url, [f"-scenarios={path}"], "two scenarios", keep=os.path.join(OUT, "two.llr"), stdin_text="")
    out = subprocess.run([LOADLAB, "report", "-type=json", "-by=attack", os.path.join(OUT, "two.llr")],
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        group = json.loads(line)
        extra = group["loadlab"]
        name = extra.get("group", {}).get("name", "?")
        print(f"   {name:<6} asked {extra.get('asked_rate', 0):8.3f}/s  achieved {extra.get('achieved_rate', 0):8.3f}/s  "
              f"({extra.get('rate_ratio', 0) * 100:.3f}%; goal within 0.5%)  requests {group['requests']}", flush=True)


def templates():
    print("== 4. template render cost", flush=True)
    sh("cargo", "build", "--release", "-q", "-p", "loadlab-workload", "--example", "template_render", cwd=ROOT)
    _, _, _, out = measured([os.path.join(ROOT, "target", "release", "examples", "template_render")])
    for line in out.decode().splitlines():
        print(f"   {line}")
    print("   (goal: a fully dynamic template <= 1000 ns)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--long-seconds", type=int, default=300)
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    ensure_packages()
    sh("cargo", "build", "--release", "-q", "-p", "loadlab", cwd=ROOT)
    print(f"== machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    server = Nginx()
    try:
        shapes(server.url, args.seconds)
        closed_users(server.url, args.seconds)
        two_scenarios(server.url, args.long_seconds)
    finally:
        server.stop()
    templates()


if __name__ == "__main__":
    main()
