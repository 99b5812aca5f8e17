#!/usr/bin/env python3
"""Replay: reading a 10M-line nginx log, and sending a log back at 20k req/s on time.

  1. Parse rate. A generated nginx `combined` log of --lines lines (default 10,000,000,
     about 1.5 GB, written once into bench/out/replay/ and kept), read by
     - `awk` counting lines and summing the bytes field (the floor: a pass that splits
       each line on blanks and does nothing else), and by `mawk` when installed;
     - loadlab: `attack -replay LOG -max-requests 1` reads the whole log once before the
       run (its survey: parse, time-order, spread, filter, the shape per second), then
       sends one request: its CPU time is the reading's. Plain and gzipped.
     Each pinned to CPU 0, measured with wait4 (CPU seconds, peak RSS): lines per CPU
     second, and peak RSS (memory flat: the same at 1M and 10M lines, --flat-lines).
  2. Replay timing. A log of --rate requests/s (default 20000) for --seconds (default 10)
     with Poisson arrivals at millisecond resolution (`$msec`), replayed against nginx
     (one worker, CPU 1) by loadlab on one thread (CPU 0), beside a plain `-rate` run at
     the same rate: send lag p50/p99 from `report -type=json`, achieved/asked, CPU per
     request.

Usage: bench/replay/run.py [--lines 10000000] [--flat-lines 1000000] [--rate 20000]
                           [--seconds 10] [--skip-parse] [--skip-timing] [--no-build]
Output: a table, and JSON in bench/out/replay.json. Traffic goes to 127.0.0.1 only.
"""

import argparse
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import benchlib  # noqa: E402

DIR = os.path.join(benchlib.ROOT, "bench", "out", "replay")
AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def combined_log(path, lines, rate=1000):
    """nginx `combined` lines at `rate` per second from 2026-11-24 00:00:00, a mix of
    paths with ids and queries; written once and kept (the same seed each time)."""
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return path
    print(f"== writing {path} ({lines:,} lines)", flush=True)
    rng = random.Random(7)
    paths = [f"/products/{i}" for i in range(1000)] + [f"/search?q=w{i}" for i in range(1000)] + ["/", "/news"]
    tmp = path + ".tmp"
    with open(tmp, "w") as out:
        for start in range(0, lines, rate):
            second = start // rate
            h, m, s = second // 3600, second // 60 % 60, second % 60
            day = 24 + h // 24
            stamp = f"[{day:02d}/Nov/2026:{h % 24:02d}:{m:02d}:{s:02d} +0000]"
            chunk = []
            for _ in range(min(rate, lines - start)):
                chunk.append(f'10.0.{rng.randrange(256)}.{rng.randrange(1, 255)} - - {stamp} '
                             f'"GET {rng.choice(paths)} HTTP/1.1" 200 {rng.randrange(100, 90000)} "-" "{AGENT}"\n')
            out.write("".join(chunk))
    os.rename(tmp, path)
    return path


def gzipped(path):
    target = path + ".gz"
    if not os.path.exists(target):
        print(f"== gzip {path}", flush=True)
        with open(path, "rb") as src, gzip.open(target + ".tmp", "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.rename(target + ".tmp", target)
    return target


def pinned(cmd):
    """(cpu seconds, peak RSS MiB, wall seconds) of cmd on CPU 0. The peak RSS is GNU
    time's (`%M`): a child's ru_maxrss as wait4 gives it counts this Python's pages
    from before the exec, which dwarf awk's."""
    start = time.time()
    proc = subprocess.Popen(["taskset", "-c", benchlib.GENERATOR_CPU, "/usr/bin/time", "-f", "%M", *cmd],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd[0]} failed: {err.decode()[-800:]}")
    peak_kib = int(err.decode().strip().splitlines()[-1])
    return usage.ru_utime + usage.ru_stime, peak_kib / 1024, time.time() - start


def parse_rates(args, nginx):
    big = combined_log(os.path.join(DIR, f"access-{args.lines}.log"), args.lines)
    small = combined_log(os.path.join(DIR, f"access-{args.flat_lines}.log"), args.flat_lines)
    rows = []
    # Every reader finds the files in the page cache: the first would pay for the disk.
    for path in (big, small, gzipped(big)):
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass
    for tool in ("awk", "mawk"):
        if shutil.which(tool):
            cpu, rss, wall = pinned([tool, "{ n++; bytes += $10 } END { print n, bytes }", big])
            rows.append({"tool": tool, "file": "plain", "lines": args.lines, "cpu_s": cpu, "rss_mib": rss,
                         "lines_per_cpu_s": args.lines / cpu, "wall_s": wall})
    for label, path, lines in (("plain", big, args.lines), ("gzip", gzipped(big), args.lines),
                               ("plain", small, args.flat_lines)):
        cmd = [benchlib.LOADLAB, "attack", "-replay", path, "-log-format", "nginx", "-base-url",
               nginx.url.rstrip("/"), "-max-requests", "1", "-threads", "1", "-quiet", "-output", os.devnull]
        cpu, rss, wall = pinned(cmd)
        rows.append({"tool": "loadlab -replay (survey)", "file": label, "lines": lines, "cpu_s": cpu,
                     "rss_mib": rss, "lines_per_cpu_s": lines / cpu, "wall_s": wall})
    return rows


def msec_log(path, rate, seconds):
    """`$msec` lines ($remote_addr [$msec] "$request" $status $body_bytes_sent
    $request_time) with Poisson arrivals at `rate` per second."""
    rng = random.Random(11)
    t, end, start = 0.0, float(seconds), 1795996800.0
    with open(path, "w") as out:
        while True:
            t += rng.expovariate(rate)
            if t >= end:
                return path
            out.write(f'192.0.2.1 [{start + t:.3f}] "GET /hello?n={rng.randrange(10**6)} HTTP/1.1" 200 13 0.000\n')


def timing(args, nginx):
    log = msec_log(os.path.join(DIR, f"timing-{args.rate}.log"), args.rate, args.seconds)
    fmt = '$remote_addr [$msec] "$request" $status $body_bytes_sent $request_time'
    replay = benchlib.run_loadlab(nginx.url, ["-replay", log, "-nginx-log-format", fmt, "-base-url",
                                              nginx.url.rstrip("/"), "-log-format", "nginx"],
                                  f"loadlab -replay {args.rate}/s", stdin_text="")
    plain = benchlib.loadlab(nginx.url, args.rate, args.seconds)
    return [replay, plain]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=10_000_000)
    parser.add_argument("--flat-lines", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--skip-parse", action="store_true")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    os.makedirs(DIR, exist_ok=True)
    os.makedirs(benchlib.OUT, exist_ok=True)
    benchlib.ensure_packages()
    if not args.no_build:
        benchlib.sh("cargo", "build", "--release", "--quiet", cwd=benchlib.ROOT)
    nginx = benchlib.Nginx()
    result = {}
    try:
        if not args.skip_parse:
            result["parse"] = parse_rates(args, nginx)
            print(f"\n{'reader':28} {'file':6} {'lines':>11} {'CPU s':>7} {'lines/CPU s':>12} {'peak RSS':>9}")
            for row in result["parse"]:
                print(f"{row['tool']:28} {row['file']:6} {row['lines']:>11,} {row['cpu_s']:>7.2f} "
                      f"{row['lines_per_cpu_s']:>12,.0f} {row['rss_mib']:>7.1f} MiB")
        if not args.skip_timing:
            result["timing"] = timing(args, nginx)
            print(f"\n{'run':28} {'asked':>8} {'achieved':>9} {'lag p50':>8} {'lag p99':>8} {'CPU-µs/req':>10}")
            for row in result["timing"]:
                print(f"{row['tool']:28} {row['asked'] or 0:>8.0f} {row['rate']:>9.0f} "
                      f"{row['lag_p50_us']:>6.0f}µs {row['lag_p99_us']:>6.0f}µs {row['cpu_us']:>10.1f}")
    finally:
        nginx.stop()
    with open(os.path.join(benchlib.ROOT, "bench", "out", "replay.json"), "w") as out:
        json.dump(result, out, indent=1)


if __name__ == "__main__":
    main()
