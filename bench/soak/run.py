#!/usr/bin/env python3
"""Soak benchmark (issue 11): memory must stay flat over a long run.

`loadlab attack` at 5k req/s (one thread, CPU 0, `-monitor host`) for an hour against
`loadlab simulate` (one thread, CPU 1) serving a recipe whose stage changes every five
minutes, cycling through a fast answer, a log-normal slow tail and a flaky mix of 5xx and
resets. Every minute it prints the resident memory (VmRSS) and the CPU used in that minute
of the generator and of the simulator, and the record file's size; at the end the run's
report figures and the first and last minute side by side.

Usage: bench/soak/run.py [--minutes N] [--rate R] [--stage-minutes N] [--binary PATH]
Loopback only; the attack is bounded by -duration and stops by itself.
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import GENERATOR_CPU, LOADLAB, OUT, ROOT, SERVER_CPU, free_port, sh  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
STAGES = [
    {"latency": "1ms..5ms", "status": 200},
    {"latency": {"dist": "lognormal", "p50": "20ms", "p99": "200ms", "max": "1s"}, "status": 200},
    {"latency": "0ms..50ms", "status": {"200": 90, "500": 5, "503": 4, "reset": 1}},
]


def recipe(minutes, stage_minutes):
    stages = [dict(STAGES[i % len(STAGES)], at=f"{i * stage_minutes}m")
              for i in range(max(1, -(-minutes // stage_minutes)))]
    stages[0]["at"] = 0
    return [{"route": "/*", "body": "<<1kb>>", "stages": stages}]


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--stage-minutes", type=int, default=5)
    parser.add_argument("--binary", default=LOADLAB, help="the loadlab to run (default: build this tree's release)")
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    if args.binary == LOADLAB:
        print("== building loadlab (release)", flush=True)
        sh("cargo", "build", "--release", "-q", "-p", "loadlab", cwd=ROOT)
    # Named by process, so that two soaks (say, two builds) can run side by side.
    recipe_path = os.path.join(OUT, f"soak-{os.getpid()}.json")
    records = os.path.join(OUT, f"soak-{os.getpid()}.llr")
    with open(recipe_path, "w") as f:
        json.dump(recipe(args.minutes, args.stage_minutes), f)
    port = free_port()
    simulator = subprocess.Popen(["taskset", "-c", SERVER_CPU, args.binary, "simulate", recipe_path,
                                  f"-addr=127.0.0.1:{port}", "-threads=1"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        rows = soak(args, port, simulator.pid, records)
    finally:
        simulator.terminate()
        simulator.wait()
    summarize(args, rows, records)


def soak(args, port, simulator_pid, records):
    attack = subprocess.Popen(["taskset", "-c", GENERATOR_CPU, args.binary, "attack", f"-rate={args.rate}",
                               f"-duration={args.minutes}m", "-threads=1", "-monitor", "host", f"-output={records}"],
                              stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    attack.stdin.write(f"GET http://127.0.0.1:{port}/soak\n".encode())
    attack.stdin.close()
    print(f"== {args.minutes} min at {args.rate}/s, stage change every {args.stage_minutes} min", flush=True)
    print(f"   {'minute':>6}  {'generator RSS':>14}  {'cpu':>6}  {'simulator RSS':>14}  {'cpu':>6}  {'record file':>12}",
          flush=True)
    rows, last = [], (0.0, 0.0)
    for minute in range(1, args.minutes + 1):
        deadline = time.time() + 60
        while time.time() < deadline and attack.poll() is None:
            time.sleep(1)
        if attack.poll() is not None:
            break
        cpu = (cpu_seconds(attack.pid), cpu_seconds(simulator_pid))
        row = {"minute": minute, "gen_rss": rss_mib(attack.pid), "sim_rss": rss_mib(simulator_pid),
               "gen_cpu": cpu[0] - last[0], "sim_cpu": cpu[1] - last[1], "file_mb": os.path.getsize(records) / 1e6}
        last = cpu
        rows.append(row)
        print(f"   {minute:>6}  {row['gen_rss']:>10.1f} MiB  {row['gen_cpu']:>5.1f}s  {row['sim_rss']:>10.1f} MiB  "
              f"{row['sim_cpu']:>5.1f}s  {row['file_mb']:>9.1f} MB", flush=True)
    attack.wait()
    if attack.returncode != 0:
        sys.exit(f"attack failed ({attack.returncode}): {attack.stderr.read().decode()[-500:]}")
    return rows


def summarize(args, rows, records):
    report = json.loads(subprocess.run([args.binary, "report", "-type=json", records], check=True,
                                       capture_output=True).stdout)
    extra = report["loadlab"]
    print(f"== run: {report['requests']} requests, achieved {extra.get('rate_ratio', 0) * 100:.2f}% of asked, "
          f"success {report['success'] * 100:.2f}%, send lag p99 {extra.get('send_lag', {}).get('99th', 0) / 1e3:.1f} µs, "
          f"record {os.path.getsize(records) / max(report['requests'], 1):.2f} bytes/request", flush=True)
    if rows:
        first, final = rows[0], rows[-1]
        for who, key in (("generator", "gen_rss"), ("simulator", "sim_rss")):
            peak = max(r[key] for r in rows)
            print(f"   {who}: RSS minute 1 {first[key]:.1f} MiB, minute {final['minute']} {final[key]:.1f} MiB "
                  f"({final[key] - first[key]:+.1f} MiB), peak {peak:.1f} MiB", flush=True)
    os.remove(records)


if __name__ == "__main__":
    main()
