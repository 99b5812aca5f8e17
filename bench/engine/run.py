#!/usr/bin/env python3
"""Engine benchmark: the `loadlab attack` figures of DESIGN.md section 8, with the peers
measured in the same run against the same server.

Set-up: nginx (Debian's nginx-light) with one worker pinned to CPU 1, answering a small
body; every generator pinned to CPU 0. Figures:

  1. CPU per request: loadlab, open model at 20k req/s, vs wrk (closed model, 1 thread,
     50 connections, as fast as it goes); vegeta at 10k req/s and hey as extra peers.
  2. The highest open-model rate loadlab holds within 0.5% of asked (rate sweep).
  3. Send lag p99 at 50k req/s.
  4. Peak RSS over a long run at 50k req/s, and record bytes per request.

Usage: bench/engine/run.py [--seconds N] [--long-seconds N] [--rates 50000,100000,...]
Installs wrk and nginx-light with apt-get when missing; vegeta via bench/lib/vegeta.sh.
Everything goes to loopback. Output: a table with goals and ratios.
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "bench", "out", "engine")
LOADLAB = os.path.join(ROOT, "target", "release", "loadlab")
GENERATOR_CPU = "0"
SERVER_CPU = "1"


def sh(*cmd, **kw):
    return subprocess.run(list(cmd), check=True, **kw)


def ensure_packages():
    missing = [pkg for cmd, pkg in (("wrk", "wrk"), ("nginx", "nginx-light")) if not shutil.which(cmd)]
    if missing:
        print(f"== installing {' '.join(missing)}", flush=True)
        sh("apt-get", "update", "-qq")
        sh("apt-get", "install", "-y", "-qq", *missing, stdout=subprocess.DEVNULL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx with one worker on SERVER_CPU, a small fixed body, no access log."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="loadlab-nginx-", dir=OUT)
        self.port = free_port()
        conf = f"""
worker_processes 1;
worker_cpu_affinity {'1' + '0' * int(SERVER_CPU)};
daemon on;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log warn;
events {{ worker_connections 65536; }}
http {{
  access_log off;
  keepalive_requests 1000000;
  server {{
    listen 127.0.0.1:{self.port} backlog=8192;
    location / {{ return 200 "hello, world\\n"; }}
  }}
}}
"""
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(conf)
        sh("nginx", "-c", os.path.join(self.dir, "nginx.conf"), "-p", self.dir)
        time.sleep(0.3)
        self.url = f"http://127.0.0.1:{self.port}/"

    def stop(self):
        subprocess.run(["nginx", "-c", os.path.join(self.dir, "nginx.conf"), "-p", self.dir, "-s", "stop"])


def measured(cmd, stdin=None, stdout=None):
    """Runs cmd pinned to GENERATOR_CPU; returns (cpu_seconds, peak_rss_kib, wall, output)."""
    start = time.time()
    proc = subprocess.Popen(["taskset", "-c", GENERATOR_CPU, *cmd], stdin=stdin,
                            stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE)
    output = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.time() - start
    if proc.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.read().decode()[-500:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss, wall, output


def wrk(url, seconds):
    cpu, _, _, out = measured(["wrk", "-t1", "-c50", f"-d{seconds}s", url])
    text = out.decode()
    requests = int(next(line for line in text.splitlines() if "requests in" in line).split()[0])
    return {"tool": "wrk -t1 -c50 (closed)", "requests": requests, "rate": requests / seconds,
            "cpu_us": cpu / requests * 1e6}


def loadlab(url, rate, seconds, keep=None):
    path = keep or os.path.join(OUT, f"loadlab-{rate}.llr")
    targets = f"GET {url}\n".encode()
    with tempfile.TemporaryFile() as t:
        t.write(targets)
        t.seek(0)
        cpu, rss, _, _ = measured([LOADLAB, "attack", f"-rate={rate}", f"-duration={seconds}s",
                                   "-threads=1", f"-output={path}"], stdin=t)
    report = json.loads(subprocess.run([LOADLAB, "report", "-type=json", path], check=True,
                                       capture_output=True).stdout)
    extra = report["loadlab"]
    result = {"tool": f"loadlab open {rate}/s", "requests": report["requests"], "rate": report["rate"],
              "asked": extra.get("asked_rate", rate), "ratio": extra.get("rate_ratio", 0),
              "lag_p99_us": extra["send_lag"]["99th"] / 1e3, "cpu_us": cpu / max(report["requests"], 1) * 1e6,
              "rss_mib": rss / 1024, "bytes_per_request": os.path.getsize(path) / max(report["requests"], 1),
              "success": report["success"]}
    if keep is None:
        os.remove(path)
    return result


def vegeta(url, rate, seconds):
    try:
        binary = subprocess.run([os.path.join(ROOT, "bench", "lib", "vegeta.sh")], check=True,
                                capture_output=True, text=True).stdout.strip()
    except subprocess.CalledProcessError:
        return None
    with tempfile.TemporaryFile() as t, tempfile.TemporaryFile() as results:
        t.write(f"GET {url}\n".encode())
        t.seek(0)
        cpu, _, _, _ = measured([binary, "attack", f"-rate={rate}", f"-duration={seconds}s"], stdin=t, stdout=results)
        results.seek(0)
        report = json.loads(subprocess.run([binary, "report", "-type=json"], stdin=results, check=True,
                                           capture_output=True).stdout)
    return {"tool": f"vegeta {rate}/s", "requests": report["requests"], "rate": report["rate"],
            "cpu_us": cpu / max(report["requests"], 1) * 1e6}


def hey(url, seconds):
    if not shutil.which("hey"):
        return None
    cpu, _, _, out = measured(["hey", "-z", f"{seconds}s", "-c", "50", url])
    line = next(l for l in out.decode().splitlines() if "Requests/sec" in l)
    rate = float(line.split()[-1])
    requests = rate * seconds
    return {"tool": "hey -c50 (closed)", "requests": int(requests), "rate": rate, "cpu_us": cpu / requests * 1e6}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--long-seconds", type=int, default=60)
    parser.add_argument("--rates", default="50000,100000,125000,150000,175000,200000")
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    ensure_packages()
    print("== building loadlab (release)", flush=True)
    sh("cargo", "build", "--release", "-q", "-p", "loadlab", cwd=ROOT)
    print(f"== machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    server = Nginx()
    try:
        run_all(server.url, args)
    finally:
        server.stop()


def run_all(url, args):
    s = args.seconds
    print(f"== 1. CPU per request ({s}s each; generators on CPU {GENERATOR_CPU}, nginx on CPU {SERVER_CPU})", flush=True)
    peers = [wrk(url, s), loadlab(url, 20000, s)]
    peers += [p for p in (vegeta(url, 10000, s), hey(url, s)) if p]
    for p in peers:
        print(f"   {p['tool']:<26} {p['rate']:>10.0f} req/s   {p['cpu_us']:6.2f} CPU-µs/request", flush=True)
    ours, theirs = peers[1]["cpu_us"], peers[0]["cpu_us"]
    print(f"   loadlab / wrk CPU per request: {ours / theirs:.2f}x (goal <= 1.00)", flush=True)

    print(f"== 2-3. rate sweep ({s}s each): achieved within 0.5% of asked, send lag p99", flush=True)
    held, lag_at_50k = 0, None
    for rate in [int(r) for r in args.rates.split(",")]:
        r = loadlab(url, rate, s)
        ok = r["ratio"] >= 0.995
        held = rate if ok else held
        if rate == 50000:
            lag_at_50k = r["lag_p99_us"]
        print(f"   asked {rate:>7}/s  achieved {r['rate']:>10.0f}/s ({r['ratio'] * 100:6.2f}%)  "
              f"lag p99 {r['lag_p99_us']:>9.1f} µs  success {r['success'] * 100:.1f}%  {'held' if ok else 'NOT held'}", flush=True)
    print(f"   highest rate held within 0.5%: {held}/s (goal >= 150000)")
    if lag_at_50k is not None:
        print(f"   send lag p99 at 50k/s: {lag_at_50k:.1f} µs (goal <= 200)")

    print(f"== 4. {args.long_seconds}s at 50k/s: memory and record size", flush=True)
    long = loadlab(url, 50000, args.long_seconds, keep=os.path.join(OUT, "long.llr"))
    print(f"   peak RSS {long['rss_mib']:.1f} MiB (goal <= 64), record {long['bytes_per_request']:.2f} bytes/request "
          f"(goal <= 16), achieved {long['ratio'] * 100:.2f}%, lag p99 {long['lag_p99_us']:.1f} µs")
    os.remove(os.path.join(OUT, "long.llr"))


if __name__ == "__main__":
    main()
