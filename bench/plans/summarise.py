#!/usr/bin/env python3
"""Reading and summarising a 10M-record run folder (issue 10's goal: it stays within the
report's speed).

1. writes a synthetic step record file with the report bench's generator
   (crates/report/examples/synth_records.rs: one open attack at 20k req/s, 503s,
   timeouts, a slow tail, zstd blocks) into a one-step run folder
   (bench/out/summarise/run: steps/000-synth-20000/records.llr, summary.json, plan.toml);
   no traffic is sent;
2. times, in 3 alternating rounds (medians; peak RSS by wait4, the largest):
   (a) `loadlab report` on the step's records (text);
   (b) the lab's step summary, `lab::summarise`, the call `loadlab run` makes to judge a
       step, through crates/lab/examples/summarise_step.rs (a user reaches it only inside
       `loadlab run`, so the example calls the same pub function on the same file);
   (c) `loadlab compare DIR DIR`: the run folder against itself, which reads the step's
       records twice (report's figures and per-second windows) for the noise;
   and with --baseline-summarise PATH, an older build of summarise_step on the same file.

Usage: bench/plans/summarise.py [--records 10000000] [--rounds 3] [--baseline-summarise PATH]
Nothing is sent over the network.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import LOADLAB, ROOT, sh  # noqa: E402

OUT = os.path.join(ROOT, "bench", "out", "summarise")
SYNTH = os.path.join(ROOT, "target", "release", "examples", "synth_records")
SUMMARISE = os.path.join(ROOT, "target", "release", "examples", "summarise_step")
RATE = 20000


def build():
    print("== building (release)", flush=True)
    # One command per target filter: --example limits a build to the targets it names.
    sh("cargo", "build", "--release", "-q", "-p", "loadlab", cwd=ROOT)
    sh("cargo", "build", "--release", "-q", "-p", "loadlab-report", "--example", "synth_records", cwd=ROOT)
    sh("cargo", "build", "--release", "-q", "-p", "loadlab-lab", "--example", "summarise_step", cwd=ROOT)


def run_folder(records):
    """A one-step run folder around a synthetic record file; returns (folder, records path)."""
    folder = os.path.join(OUT, f"run-{records}")
    step = "000-synth-%d" % RATE
    path = os.path.join(folder, "steps", step, "records.llr")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path) or os.path.getmtime(SYNTH) > os.path.getmtime(path):
        print(f"== writing {records} records", flush=True)
        sh(SYNTH, path, str(records), str(RATE))
    seconds = records / RATE
    row = {"step": step, "variant": "synth", "params": {}, "kind": "sweep", "repeat": 1, "rate_asked": RATE,
           "users": None, "asked_per_sec": RATE, "achieved_per_sec": RATE, "requests": records, "success": 1.0,
           "p50_ms": None, "p90_ms": None, "p99_ms": None, "max_ms": None, "lag_p99_ms": 0.0, "errors": {},
           "verdict": "pass", "why": "synthetic", "records": f"steps/{step}/records.llr", "report": None,
           "hooks": None, "seconds": seconds}
    summary = {"plan": "summarise-bench", "plan_file": "plan.toml", "mode": "sweep", "complete": True,
               "variants": [{"variant": "synth", "max_rate_held": RATE, "how": "synthetic", "probes": None,
                             "seconds": None}], "steps": [row]}
    with open(os.path.join(folder, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    with open(os.path.join(folder, "plan.toml"), "w") as f:
        f.write('mode = "sweep"\n[[variant]]\nname = "synth"\ntargets = ["GET http://127.0.0.1:1/"]\n'
                f'[load]\nrates = [{RATE}]\nstep_duration = "{int(seconds)}s"\nwarmup = "0s"\n')
    return folder, path


def measured(cmd):
    """Runs cmd on both cores; returns (wall s, cpu s, peak RSS MiB, stdout)."""
    start = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    output = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.time() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd[0]} failed: {err.decode()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, output.decode()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-summarise", help="an older summarise_step build to time on the same file")
    parser.add_argument("--no-build", action="store_true", help="use the release binaries already built")
    args = parser.parse_args()
    if not args.no_build:
        build()
    folder, records = run_folder(args.records)
    window_end = str(args.records / RATE + 1)
    cases = [
        ("loadlab report (text)", [LOADLAB, "report", records]),
        ("lab::summarise (step verdict)", [SUMMARISE, records, "0", window_end, str(RATE)]),
    ]
    if args.baseline_summarise:
        cases.append(("lab::summarise (baseline build)", [args.baseline_summarise, records, "0", window_end,
                                                          str(RATE)]))
    cases.append(("loadlab compare DIR DIR (2 reads)", [LOADLAB, "compare", folder, folder]))
    results = {name: [] for name, _ in cases}
    outputs = {}
    for round_ in range(args.rounds):
        print(f"== round {round_ + 1}/{args.rounds}", flush=True)
        for name, cmd in cases:
            wall, cpu, rss, output = measured(cmd)
            results[name].append((wall, cpu, rss))
            outputs[name] = output
    size = os.path.getsize(records)
    print(f"\n{args.records} records ({size / 1e6:.0f} MB record file), medians of {args.rounds} rounds, 2 cores")
    report_wall = statistics.median(r[0] for r in results[cases[0][0]])
    for name, _ in cases:
        rows = results[name]
        wall = statistics.median(r[0] for r in rows)
        cpu = statistics.median(r[1] for r in rows)
        rss = max(r[2] for r in rows)
        print(f"  {name:<36} {wall:7.3f} s wall ({wall / report_wall:4.2f}x report), {cpu:7.3f} s CPU, "
              f"peak RSS {rss:6.0f} MiB")
    print("\nlab::summarise said:", outputs[cases[1][0]].strip())
    if args.baseline_summarise:
        print("baseline said:      ", outputs[cases[2][0]].strip())


if __name__ == "__main__":
    main()
