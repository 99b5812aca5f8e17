#!/usr/bin/env python3
"""Soak benchmark: does memory stay flat over a long run? (issue 11, "Also")

`loadlab attack` at 5k req/s for an hour against `loadlab simulate`, whose recipe switches
stage every few minutes (latency 5 ms, 50 ms, a 10-30 ms range; status 200, a 5% 500 mix,
a 20% 503 mix with quick errors), with `-monitor host` writing samples beside the records.
Every minute the RSS and CPU time of the generator and the simulator are read from /proc.
Prints a per-minute table and, at the end, each process's first-minute vs last-minute RSS.

Set-up: the simulator on one thread pinned to CPU 1, the generator on CPU 0 (as the other
benches). Loopback only. The record file (18M records for the hour: some hundreds of MB)
goes to bench/out/runs/soak.llr and is removed unless --keep.

Usage: bench/soak/run.py [--duration 1h] [--rate 5000] [--stage-every 3m]
                         [--sample-every 60s] [--no-build] [--keep]
A quick check that it works: bench/soak/run.py --duration 2m --stage-every 30s
"""

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import GENERATOR_CPU, LOADLAB, OUT, ROOT, SERVER_CPU, free_port, sh  # noqa: E402

# The stages the recipe cycles through: (status, latency).
STAGES = [
    (200, "5ms"),
    ({"200": 95, "500": {"weight": 5, "latency": "1ms"}}, "50ms"),
    (200, "10ms..30ms"),
    ({"200": 80, "503": {"weight": 20, "latency": "0"}}, "20ms"),
]


def seconds(text):
    """`90s`, `3m`, `1h`, `1h30m` -> seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        sys.exit(f"bad duration {text!r}: want e.g. 90s, 3m, 1h, 1h30m")
    scale = {"h": 3600, "m": 60, "s": 1}
    return sum(float(n) * scale[u] for n, u in parts)


def recipe(duration_s, stage_every_s):
    """One route whose stages switch every `stage_every_s` for the whole run (and then some,
    so the last stage does not simply hold)."""
    count = int(duration_s // stage_every_s) + 2
    stages = []
    for i in range(count):
        status, latency = STAGES[i % len(STAGES)]
        stages.append({"at": f"{int(i * stage_every_s)}s", "status": status, "latency": latency})
    return [{"route": "/*", "body": "<<1kb>>", "stages": stages}]


def wait_port(port, limit_s=10):
    deadline = time.time() + limit_s
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    sys.exit(f"the simulator is not listening on {port}")


def proc_sample(pid):
    """(RSS MiB, CPU seconds) of a live process, from /proc; None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss_kib = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu_s = (int(fields[11]) + int(fields[12])) / ticks
        return rss_kib / 1024, cpu_s
    except (OSError, StopIteration, IndexError, ValueError):
        return None


def fmt(sample, index):
    return f"{sample[index]:10.1f}" if sample else f"{'-':>10}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="1h", help="attack duration (default 1h)")
    parser.add_argument("--rate", type=int, default=5000, help="requests per second (default 5000)")
    parser.add_argument("--stage-every", default="3m", help="time between stage switches (default 3m)")
    parser.add_argument("--sample-every", default="60s", help="time between RSS samples (default 60s)")
    parser.add_argument("--no-build", action="store_true", help="use target/release/loadlab as it is")
    parser.add_argument("--keep", action="store_true", help="keep the record file")
    args = parser.parse_args()
    duration_s, stage_s, every_s = seconds(args.duration), seconds(args.stage_every), seconds(args.sample_every)
    os.makedirs(OUT, exist_ok=True)
    if not args.no_build:
        print("== building loadlab (release)", flush=True)
        sh("cargo", "build", "--release", "-q", "-p", "loadlab", cwd=ROOT)

    recipe_path = os.path.join(OUT, "soak-recipe.json")
    with open(recipe_path, "w") as f:
        json.dump(recipe(duration_s, stage_s), f, indent=1)
    record_path = os.path.join(OUT, "soak.llr")
    port = free_port()
    sim_log = open(os.path.join(OUT, "soak-simulate.log"), "w")
    sim = subprocess.Popen(["taskset", "-c", SERVER_CPU, LOADLAB, "simulate", "-threads", "1",
                            "-addr", f"127.0.0.1:{port}", recipe_path], stderr=sim_log)
    attack = None
    try:
        wait_port(port)
        targets = tempfile.TemporaryFile()
        targets.write(f"GET http://127.0.0.1:{port}/soak\n".encode())
        targets.seek(0)
        print(f"== soak: {args.rate} req/s for {args.duration}, stage switch every {args.stage_every}, "
              f"RSS every {args.sample_every}", flush=True)
        attack_log = open(os.path.join(OUT, "soak-attack.log"), "w")
        attack = subprocess.Popen(["taskset", "-c", GENERATOR_CPU, LOADLAB, "attack", f"-rate={args.rate}",
                                   f"-duration={int(duration_s)}s", "-threads=1", "-monitor", "host",
                                   f"-output={record_path}"], stdin=targets, stderr=attack_log)
        rows = sample_until_done(attack, sim.pid, every_s)
    finally:
        if attack and attack.poll() is None:
            attack.send_signal(signal.SIGINT)
            attack.wait(timeout=30)
        sim.send_signal(signal.SIGTERM)
        sim.wait(timeout=30)
    if attack.returncode != 0:
        sys.exit(f"attack failed ({attack.returncode}); see {OUT}/soak-attack.log")
    summarize(rows, record_path)
    if not args.keep:
        os.remove(record_path)


def sample_until_done(attack, sim_pid, every_s):
    """Samples both processes at 0, every_s, 2*every_s, ... until the attack exits."""
    print(f"{'minute':>7} {'gen RSS MiB':>11} {'sim RSS MiB':>11} {'gen CPU s':>10} {'sim CPU s':>10}", flush=True)
    rows = []
    started = time.time()
    tick = 0
    while attack.poll() is None:
        gen, sim = proc_sample(attack.pid), proc_sample(sim_pid)
        if gen is None and attack.poll() is not None:
            break
        rows.append((tick * every_s / 60, gen, sim))
        print(f"{tick * every_s / 60:7.1f} {fmt(gen, 0):>11} {fmt(sim, 0):>11} {fmt(gen, 1)} {fmt(sim, 1)}", flush=True)
        tick += 1
        while attack.poll() is None and time.time() < started + tick * every_s:
            time.sleep(min(1.0, max(0.0, started + tick * every_s - time.time())))
    return rows


def summarize(rows, record_path):
    report = subprocess.run([LOADLAB, "report", record_path], capture_output=True, text=True)
    print("\n== report\n" + report.stdout.rstrip(), flush=True)
    measured = [r for r in rows if r[1] and r[2]]
    if len(measured) < 2:
        print("\n(fewer than two samples: run longer than --sample-every)")
        return
    # The first minute is the sample after warm-up (connections open, buffers sized),
    # not the one taken before the first request.
    first, last = measured[1] if len(measured) > 2 else measured[0], measured[-1]
    print("\n== RSS, first vs last minute")
    for name, i in (("generator", 1), ("simulator", 2)):
        a, b = first[i][0], last[i][0]
        print(f"{name:>10}: minute {first[0]:.0f}: {a:.1f} MiB, minute {last[0]:.0f}: {b:.1f} MiB "
              f"({(b - a) / a * 100:+.1f}%)")


if __name__ == "__main__":
    main()
