#!/usr/bin/env python3
"""Capacity search against known capacities (issue 10's ground truth; DESIGN.md section 8:
`search` finds a known capacity within +-5%).

For each capacity, `loadlab simulate` (pinned to CPU 1) serves a capacity-model recipe
(W workers x S service time = W/S req/s, a short queue, 503s beyond it) and
`loadlab run` (pinned to CPU 0) searches it with the SLO "99% success, p99 <= 4 x S".
Prints the rate found against the truth, the error, the probes it took, the search's wall
time, and the whole plan's wall time (the overhead between steps is the difference between
the plan's wall time, process start included, and the sum of its steps' own times).

Usage: bench/plans/search.py [--capacities 400,2500,8000] [--step-seconds 3] [--binary PATH]
Loopback only; every probe is bounded by the plan's step duration and the search's budgets.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import GENERATOR_CPU, LOADLAB, OUT, ROOT, SERVER_CPU, free_port, sh  # noqa: E402

SERVICE_MS = 50


def recipe(workers):
    return {"route": "/*", "body": "ok", "stages": [{"at": 0, "status": 200, "latency": f"{SERVICE_MS}ms"}],
            "capacity": {"workers": workers, "overflow": 0, "queue": workers // 5 + 1, "queue_timeout": "1s",
                         "reject_status": 503, "reject_latency": "0"}}


def plan(port, step_seconds):
    return f"""name = "search-bench"
mode = "search"

[[variant]]
name = "simulator"
targets = ["GET http://127.0.0.1:{port}/"]

[load]
step_duration = "{step_seconds}s"
warmup = "500ms"
cooldown = "500ms"
timeout = "5s"
stop_when = ["errors > 20% for 1s"]

[slo]
success = 0.99
p99 = "{4 * SERVICE_MS}ms"
max_lag = "25ms"

[search]
start = 100
precision = 0.02
max_probes = 25
max_time = "10m"
"""


def search(binary, capacity, step_seconds, work):
    workers = capacity * SERVICE_MS // 1000
    recipe_path = os.path.join(work, f"recipe-{capacity}.json")
    with open(recipe_path, "w") as f:
        json.dump(recipe(workers), f)
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", SERVER_CPU, binary, "simulate", recipe_path, f"-addr=127.0.0.1:{port}",
                               "-threads=1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        plan_path, folder = os.path.join(work, f"plan-{capacity}.toml"), os.path.join(work, f"run-{capacity}")
        with open(plan_path, "w") as f:
            f.write(plan(port, step_seconds))
        start = time.time()
        subprocess.run(["taskset", "-c", GENERATOR_CPU, binary, "run", plan_path, f"-output={folder}"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.time() - start
    finally:
        server.terminate()
        server.wait()
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    return summary["variants"][0], summary["steps"], wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacities", default="400,2500,8000")
    parser.add_argument("--step-seconds", type=int, default=3)
    parser.add_argument("--binary", default=LOADLAB, help="the loadlab to run (default: build this tree's release)")
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    if args.binary == LOADLAB:
        print("== building loadlab (release)", flush=True)
        sh("cargo", "build", "--release", "-q", "-p", "loadlab", cwd=ROOT)
    print(f"== capacity search, {SERVICE_MS} ms service time, probes of 0.5 s + {args.step_seconds} s + 0.5 s", flush=True)
    with tempfile.TemporaryDirectory(dir=OUT) as work:
        for capacity in [int(c) for c in args.capacities.split(",")]:
            variant, rows, wall = search(args.binary, capacity, args.step_seconds, work)
            found = variant.get("max_rate_held") or 0.0
            error = (found - capacity) / capacity * 100
            steps, probe_seconds = len(rows), sum(row["seconds"] for row in rows)
            verdict = "within 5%" if abs(error) <= 5 else "MISSED (goal +-5%)"
            print(f"   truth {capacity:>6}/s  found {found:>9.1f}/s  {error:+6.2f}%  {verdict:<18} "
                  f"{variant.get('how', '')}; {steps} probes, plan {wall:6.1f} s wall "
                  f"(probes {probe_seconds:.0f} s, overhead {(wall - probe_seconds) / max(steps, 1):.2f} s/probe)",
                  flush=True)


if __name__ == "__main__":
    main()
