#!/usr/bin/env python3
"""Does an attached monitor change the attack's CPU per request? Same run, alternating
rounds: loadlab open model at RATE req/s against a pinned nginx, without and with
`-monitor host -monitor process=nginx` (1 s interval; the monitor's threads count in
the attack's CPU, as they run in its process). wrk's CPU per request is the yardstick.

    python3 bench/monitor/attached.py [--rate 20000] [--seconds 20] [--rounds 3]
"""

import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import benchlib  # noqa: E402

MONITOR = ["-monitor", "host", "-monitor", "process=nginx", "-monitor-interval=1s"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=int, default=20000)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    benchlib.ensure_packages()
    benchlib.sh("cargo", "build", "--release", "--quiet", cwd=benchlib.ROOT)
    nginx = benchlib.Nginx()
    kept = os.path.join(benchlib.OUT, "attached.llr")
    try:
        runs = {"without": [], "with": []}
        for n in range(args.rounds):
            for label, extra in (("without", []), ("with", MONITOR)):
                flags = [f"-rate={args.rate}", f"-duration={args.seconds}s", *extra]
                result = benchlib.run_loadlab(nginx.url, flags, f"loadlab {label} monitor", keep=kept)
                runs[label].append(result["cpu_us"])
                print(f"round {n + 1} {label:7} monitor: {result['cpu_us']:6.2f} CPU-µs/request, "
                      f"{result['rate']:.0f} req/s, ratio {result['ratio']:.4f}", flush=True)
        resources = subprocess.run([benchlib.LOADLAB, "report", kept], check=True,
                                   capture_output=True, text=True).stdout
        print("\n".join(l for l in resources.splitlines() if l.startswith(("Process", "Host CPU", "Samples"))))
        peer = benchlib.wrk(nginx.url, args.seconds)
    finally:
        nginx.stop()
    without, with_monitor = statistics.median(runs["without"]), statistics.median(runs["with"])
    print(f"\nmedian CPU-µs/request: without {without:.2f}, with {with_monitor:.2f} "
          f"(with/without {with_monitor / without:.3f}); wrk {peer['cpu_us']:.2f} "
          f"at {peer['rate']:.0f} req/s")
    spread = (max(runs["without"]) - min(runs["without"])) / without
    print(f"round-to-round spread without a monitor: {spread:.1%}")


if __name__ == "__main__":
    main()
