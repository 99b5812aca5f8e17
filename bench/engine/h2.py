#!/usr/bin/env python3
"""HTTP/2 (issue 14): loadlab beside h2load and oha at the same asked rates, against one
nginx with http2 on CPU 1, over h2c (prior knowledge) and TLS (ALPN h2), in one run.

Every generator on CPU 0 with one thread and one connection carrying up to 100 streams.
Per protocol and asked rate (default 20k and 50k req/s), --rounds rounds (default 3)
alternating the tools, medians printed: CPU per request (wait4: user + system over
requests completed), achieved rate, latency p50/p99 where the tool reports them, peak RSS.

  loadlab: `attack -rate=R -h2c` (or https with -insecure) -threads=1 -workers=1, at its
           default -precision (100 µs) and at 1 ms (--precision), the peers' timer grain.
  h2load:  `h2load -t1 -c1 -m100 --rps=R -D S` (Debian's nghttp2-client); it reports mean
           latency only, from when it sent each request (no intended-time correction).
  oha:     `oha --http2 -q R --latency-correction -c1 -p100 -z Ss` (cargo install oha --locked).

Then memory with 1,000 streams in flight on 10 connections: loadlab's simulator (h2c, on
CPU 1) answers every request after 1 s, asked 1,000 req/s for --seconds; each tool has
10 connections of 100 streams (loadlab: -connections=10 -max-streams=100; h2load: -c10
-m100 --rps=100 per client; oha: -c10 -p100 -q 1000). Peak RSS and requests completed.

Usage: bench/engine/h2.py [--seconds N] [--rounds N] [--rates 20000,50000] [--precision ,1ms]
                         [--binary PATH] [--skip-memory]
Loopback only; every run is bounded by its duration.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import (LOADLAB, OUT, ROOT, SERVER_CPU, ensure_packages, free_port,  # noqa: E402
                      measured, run_loadlab, sh)

STREAMS = 100


class H2Nginx:
    """nginx with one worker on SERVER_CPU serving a small body over h2c and TLS h2."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="loadlab-nginx-h2-", dir=OUT)
        self.h2c_port, self.tls_port = free_port(), free_port()
        cert, key = os.path.join(self.dir, "cert.pem"), os.path.join(self.dir, "key.pem")
        sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
           "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        conf = f"""
worker_processes 1;
worker_cpu_affinity {'1' + '0' * int(SERVER_CPU)};
daemon on;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log warn;
events {{ worker_connections 65536; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  http2_max_concurrent_streams {STREAMS};
  server {{
    listen 127.0.0.1:{self.h2c_port} http2 backlog=8192;
    listen 127.0.0.1:{self.tls_port} ssl http2 backlog=8192;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    location / {{ return 200 "hello, world\\n"; }}
  }}
}}
"""
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(conf)
        sh("nginx", "-c", os.path.join(self.dir, "nginx.conf"), "-p", self.dir)
        time.sleep(0.3)
        self.urls = {"h2c": f"http://127.0.0.1:{self.h2c_port}/",
                     "tls": f"https://127.0.0.1:{self.tls_port}/"}

    def stop(self):
        subprocess.run(["nginx", "-c", os.path.join(self.dir, "nginx.conf"), "-p", self.dir, "-s", "stop"])


def ours(binary, precision):
    def run(proto, url, rate, seconds):
        flags = [f"-rate={rate}", f"-duration={seconds}s", "-workers=1",
                 "-h2c" if proto == "h2c" else "-insecure"] + ([f"-precision={precision}"] if precision else [])
        r = run_loadlab(url, flags, "loadlab", binary=binary, keep=os.path.join(OUT, "h2-run.llr"))
        report = json.loads(subprocess.run([LOADLAB, "report", "-type=json", os.path.join(OUT, "h2-run.llr")],
                                           check=True, capture_output=True).stdout)
        return {"rate": r["rate"], "cpu_us": r["cpu_us"], "rss_mib": r["rss_mib"],
                "p50_us": report["latencies"]["50th"] / 1e3, "p99_us": report["latencies"]["99th"] / 1e3,
                "ok": r["success"]}
    return run


def h2load(proto, url, rate, seconds):
    cpu, rss, _, out = measured(["h2load", "-t1", "-c1", f"-m{STREAMS}", f"--rps={rate}", "-D", str(seconds), url])
    text = out.decode()
    done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", text).group(2))
    mean = re.search(r"time for request:\s+\S+\s+\S+\s+(\S+)", text).group(1)
    return {"rate": done / seconds, "cpu_us": cpu / max(done, 1) * 1e6, "rss_mib": rss / 1024,
            "mean_us": duration_us(mean)}


def oha(proto, url, rate, seconds):
    cpu, rss, _, out = measured(["oha", "--no-tui", "--output-format", "json", "--http2", "--insecure",
                                 "-z", f"{seconds}s", "-q", str(rate), "--latency-correction",
                                 "-c", "1", "-p", str(STREAMS), url])
    summary = json.loads(out)
    done = sum(summary.get("statusCodeDistribution", {}).values())
    pct = summary.get("latencyPercentiles", {})
    return {"rate": done / seconds, "cpu_us": cpu / max(done, 1) * 1e6, "rss_mib": rss / 1024,
            "p50_us": (pct.get("p50") or 0) * 1e6, "p99_us": (pct.get("p99") or 0) * 1e6}


def duration_us(text):
    for unit, scale in (("us", 1), ("ms", 1e3), ("s", 1e6)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    return float("nan")


def median_of(runs):
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def latency(m):
    if "p50_us" in m:
        return f"{m['p50_us']:8.1f}µs {m['p99_us']:8.1f}µs"
    return f"{m.get('mean_us', float('nan')):8.1f}µs {'(mean)':>10}"


def open_model(urls, args, tools):
    print(f"== open model over HTTP/2: {args.seconds}s per run, {args.rounds} rounds alternating, medians; "
          f"one connection, {STREAMS} streams; generators on CPU 0, nginx on CPU 1", flush=True)
    print(f"   {'proto':<5} {'asked':>7}  {'tool':<8} {'CPU-µs/req':>10} {'achieved/s':>11} {'of asked':>9} "
          f"{'p50':>10} {'p99':>10} {'RSS MiB':>8}", flush=True)
    for proto, url in urls.items():
        for rate in [int(r) for r in args.rates.split(",")]:
            runs = {name: [] for name in tools}
            for _ in range(args.rounds):
                for name, tool in tools.items():
                    runs[name].append(tool(proto, url, rate, args.seconds))
            medians = {name: median_of(rs) for name, rs in runs.items()}
            for name, m in medians.items():
                print(f"   {proto:<5} {rate:>7}  {name:<16} {m['cpu_us']:10.2f} {m['rate']:11.0f} "
                      f"{m['rate'] / rate * 100:8.2f}% {latency(m)} {m['rss_mib']:8.1f}", flush=True)
            for name, m in medians.items():
                if name.startswith("loadlab") and "h2load" in medians:
                    peer = medians["h2load"]
                    print(f"   {proto:<5} {rate:>7}  {name} / h2load: CPU per request "
                          f"{m['cpu_us'] / peer['cpu_us']:.2f}x, achieved {m['rate'] / peer['rate']:.3f}x", flush=True)


SLOW_RECIPE = '{"route": "/*", "body": "hello", "stages": [{"at": 0, "status": 200, "latency": "1s"}]}'


def memory(binary, seconds):
    """Peak RSS with 1,000 streams in flight on 10 connections against a 1 s simulator."""
    port = free_port()
    recipe = os.path.join(OUT, "slow-1s.json")
    with open(recipe, "w") as f:
        f.write(SLOW_RECIPE)
    server = subprocess.Popen(["taskset", "-c", SERVER_CPU, binary, "simulate", "-addr", f"127.0.0.1:{port}",
                               "-threads", "1", recipe], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    url = f"http://127.0.0.1:{port}/slow"
    rows = {}
    try:
        flags = ["-h2c", "-rate=1000", f"-duration={seconds}s", "-workers=10", "-connections=10",
                 "-max-streams=100", "-timeout=10s"]
        r = run_loadlab(url, flags, "loadlab", binary=binary)
        rows["loadlab"] = (r["rss_mib"], r["requests"])
        _, rss, _, out = measured(["h2load", "-t1", "-c10", "-m100", "--rps=100", "-D", str(seconds), url])
        done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", out.decode()).group(1))
        rows["h2load"] = (rss / 1024, done)
        if shutil.which("oha"):
            _, rss, _, out = measured(["oha", "--no-tui", "--output-format", "json", "--http2", "-z", f"{seconds}s",
                                       "-q", "1000", "-c", "10", "-p", "100", url])
            rows["oha"] = (rss / 1024, sum(json.loads(out).get("statusCodeDistribution", {}).values()))
    finally:
        server.terminate()
        server.wait()
    print(f"== memory: 1,000 streams in flight on 10 connections (1 s answers, 1,000 req/s, {seconds}s)", flush=True)
    for name, (rss_mib, done) in rows.items():
        print(f"   {name:<8} peak RSS {rss_mib:7.1f} MiB   {done} requests completed", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rates", default="20000,50000")
    parser.add_argument("--binary", help="a loadlab binary (default: build this tree's release)")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--precision", default=",1ms",
                        help="loadlab -precision values, comma-separated (empty: its default); "
                             "1ms is h2load's and wrk2's timer granularity")
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    ensure_packages()
    if not shutil.which("h2load"):
        print("== installing nghttp2-client (h2load)", flush=True)
        sh("apt-get", "install", "-y", "-qq", "nghttp2-client", stdout=subprocess.DEVNULL)
    binary = args.binary or LOADLAB
    if not args.binary:
        print("== building loadlab (release)", flush=True)
        sh("cargo", "build", "--release", "-q", "-p", "loadlab", cwd=ROOT)
    print(f"== machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    tools = {}
    for precision in args.precision.split(","):
        tools[f"loadlab -precision={precision}" if precision else "loadlab"] = ours(binary, precision)
    tools["h2load"] = h2load
    if shutil.which("oha"):
        tools["oha"] = oha
    else:
        print("   oha not on PATH (cargo install oha --locked): its rows are skipped", flush=True)
    server = H2Nginx()
    try:
        open_model(server.urls, args, tools)
    finally:
        server.stop()
    if not args.skip_memory:
        memory(binary, args.seconds)


if __name__ == "__main__":
    main()
