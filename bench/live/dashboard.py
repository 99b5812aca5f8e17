#!/usr/bin/env python3
"""Dashboard benchmark (issue 15, item 2): what `attack -dashboard` costs.

1. CPU per request at --rate (default 20k req/s) for --seconds, without and with
   -dashboard, alternating, --rounds rounds (default 3), medians printed. With the
   dashboard, a browser-like poller fetches /data every second and the page whenever
   its version changed, as the page's own script does; the attack's CPU (wait4: all its
   threads, the page's renders included) is divided by its requests.
2. Memory over a long run with the dashboard open: --memory-minutes (default 60) at
   --rate with the poller running, the attack's VmRSS sampled every 10 s; prints the
   samples and the first, last and peak RSS, and the growth over the second half.

The server is `loadlab simulate` (one thread, CPU 1); the attack runs one thread on
CPU 0. Loopback only; every run is bounded by -duration.

Usage: bench/live/dashboard.py [--rate R] [--seconds N] [--rounds N]
                               [--memory-minutes N] [--skip-cpu] [--skip-memory] [--binary PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import GENERATOR_CPU, LOADLAB, OUT, ROOT, SERVER_CPU, free_port, measured, sh  # noqa: E402

RECIPE = [{"route": "/*", "body": "hello", "stages": [{"at": 0, "status": 200, "latency": 0}]}]
RSS_EVERY_S = 10


class Poller(threading.Thread):
    """Fetches /data every second and / when the version moved, like the live page."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.base = f"http://127.0.0.1:{port}"
        self.stopped = threading.Event()
        self.pages = self.polls = self.failures = 0
        self.page_bytes = 0

    def run(self):
        version = None
        while not self.stopped.wait(1.0):
            try:
                with urllib.request.urlopen(self.base + "/data", timeout=5) as answer:
                    data = json.load(answer)
                self.polls += 1
                if data["version"] != version:
                    with urllib.request.urlopen(self.base + "/", timeout=10) as answer:
                        self.page_bytes = len(answer.read())
                    self.pages += 1
                    version = data["version"]
            except OSError:
                self.failures += 1

    def stop(self):
        self.stopped.set()
        self.join()


def attack_command(args, port, seconds, records, dashboard_port=None):
    command = [args.binary, "attack", f"-rate={args.rate}", f"-duration={seconds}s", "-threads=1",
               "-quiet", f"-output={records}"]
    if dashboard_port is not None:
        command.append(f"-dashboard=127.0.0.1:{dashboard_port}")
    return command


def requests_in(args, records):
    report = json.loads(subprocess.run([args.binary, "report", "-type=json", records], check=True,
                                       capture_output=True).stdout)
    return report["requests"], report["loadlab"].get("rate_ratio", 0)


def one_cpu_round(args, port, with_dashboard):
    records = os.path.join(OUT, f"dashboard-cpu-{os.getpid()}.llr")
    dashboard_port = free_port() if with_dashboard else None
    poller = Poller(dashboard_port) if with_dashboard else None
    with tempfile.TemporaryFile() as targets:
        targets.write(f"GET http://127.0.0.1:{port}/bench\n".encode())
        targets.seek(0)
        if poller:
            poller.start()
        cpu, rss_kib, _, _ = measured(attack_command(args, port, args.seconds, records, dashboard_port),
                                      stdin=targets)
        if poller:
            poller.stop()
    requests, ratio = requests_in(args, records)
    os.remove(records)
    row = {"cpu_us": cpu / max(requests, 1) * 1e6, "requests": requests, "ratio": ratio, "rss_mib": rss_kib / 1024}
    if poller:
        row.update(pages=poller.pages, polls=poller.polls, failures=poller.failures, page_kib=poller.page_bytes / 1024)
    return row


def cpu_rounds(args, port):
    print(f"== CPU per request at {args.rate}/s for {args.seconds} s, {args.rounds} alternating rounds", flush=True)
    results = {False: [], True: []}
    for round_ in range(1, args.rounds + 1):
        for with_dashboard in (False, True):
            row = one_cpu_round(args, port, with_dashboard)
            results[with_dashboard].append(row)
            extra = (f", {row['pages']} pages ({row['page_kib']:.0f} KiB) / {row['polls']} polls,"
                     f" {row['failures']} failed" if with_dashboard else "")
            print(f"   round {round_} {'-dashboard' if with_dashboard else 'plain     '}: "
                  f"{row['cpu_us']:.2f} µs/request, {row['requests']} requests, {row['ratio'] * 100:.2f}% of asked, "
                  f"peak RSS {row['rss_mib']:.1f} MiB{extra}", flush=True)
    plain = statistics.median(r["cpu_us"] for r in results[False])
    live = statistics.median(r["cpu_us"] for r in results[True])
    print(f"== median CPU per request: plain {plain:.2f} µs, -dashboard {live:.2f} µs "
          f"({(live / plain - 1) * 100:+.1f}%)", flush=True)


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def memory_run(args, port):
    minutes = args.memory_minutes
    records = os.path.join(OUT, f"dashboard-memory-{os.getpid()}.llr")
    dashboard_port = free_port()
    print(f"== memory: {minutes} min at {args.rate}/s with the dashboard polled every second; RSS every "
          f"{RSS_EVERY_S} s", flush=True)
    attack = subprocess.Popen(["taskset", "-c", GENERATOR_CPU,
                               *attack_command(args, port, round(minutes * 60), records, dashboard_port)],
                              stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    attack.stdin.write(f"GET http://127.0.0.1:{port}/soak\n".encode())
    attack.stdin.close()
    poller = Poller(dashboard_port)
    poller.start()
    samples, started = [], time.time()
    while attack.poll() is None:
        time.sleep(RSS_EVERY_S)
        if attack.poll() is not None:
            break
        samples.append((time.time() - started, rss_mib(attack.pid)))
        elapsed, rss = samples[-1]
        print(f"   {elapsed:>7.0f} s  RSS {rss:>8.1f} MiB  pages {poller.pages}  failed polls {poller.failures}",
              flush=True)
    poller.stop()
    if attack.returncode != 0:
        sys.exit(f"attack failed ({attack.returncode}): {attack.stderr.read().decode()[-500:]}")
    requests, ratio = requests_in(args, records)
    os.remove(records)
    print(f"== {requests} requests, {ratio * 100:.2f}% of asked", flush=True)
    if samples:
        rss = [s[1] for s in samples]
        half = rss[len(rss) // 2:]
        print(f"   RSS first {rss[0]:.1f} MiB, last {rss[-1]:.1f} MiB, peak {max(rss):.1f} MiB; "
              f"second half {half[0]:.1f} -> {half[-1]:.1f} MiB ({half[-1] - half[0]:+.1f} MiB)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=20000)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory-minutes", type=float, default=60, help="the long run (fractions are fine: 0.5 = 30 s)")
    parser.add_argument("--skip-cpu", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--binary", default=LOADLAB, help="the loadlab to run (default: build this tree's release)")
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    if args.binary == LOADLAB:
        print("== building loadlab (release)", flush=True)
        sh("cargo", "build", "--release", "-q", "-p", "loadlab", cwd=ROOT)
    recipe_path = os.path.join(OUT, f"dashboard-{os.getpid()}.json")
    with open(recipe_path, "w") as f:
        json.dump(RECIPE, f)
    port = free_port()
    simulator = subprocess.Popen(["taskset", "-c", SERVER_CPU, args.binary, "simulate", recipe_path,
                                  f"-addr=127.0.0.1:{port}", "-threads=1"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        if not args.skip_cpu:
            cpu_rounds(args, port)
        if not args.skip_memory:
            memory_run(args, port)
    finally:
        simulator.terminate()
        simulator.wait()
        os.remove(recipe_path)


if __name__ == "__main__":
    main()
