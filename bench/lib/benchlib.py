"""Helpers shared by the benchmark scripts: a pinned nginx, pinned generators measured
with wait4 (CPU seconds and peak RSS), and loadlab runs summarized by its JSON report."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "bench", "out", "runs")
# Where cargo builds it: $CARGO_TARGET_DIR when set (as the build in the scripts honors it).
LOADLAB = os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"), "release", "loadlab")
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


def measured(cmd, stdin=None, stdout=None, env=None):
    """Runs cmd pinned to GENERATOR_CPU (in `env`, else ours); returns (cpu_seconds,
    peak_rss_kib, wall, output)."""
    start = time.time()
    proc = subprocess.Popen(["taskset", "-c", GENERATOR_CPU, *cmd], stdin=stdin,
                            stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE, env=env)
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


def loadlab(url, rate, seconds, keep=None, binary=LOADLAB):
    """An open-model loadlab run at a constant rate; see run_loadlab."""
    return run_loadlab(url, [f"-rate={rate}", f"-duration={seconds}s"], f"loadlab open {rate}/s", keep, binary=binary)


def run_loadlab(url, flags, label, keep=None, stdin_text=None, binary=LOADLAB):
    """Runs `BINARY attack FLAGS` (this build's loadlab unless told otherwise) on one thread
    pinned to GENERATOR_CPU, with `url` as the target (or `stdin_text`), and summarizes it
    from this build's `loadlab report -type=json`."""
    path = keep or os.path.join(OUT, "bench-run.llr")
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryFile() as t:
        t.write((stdin_text if stdin_text is not None else f"GET {url}\n").encode())
        t.seek(0)
        cpu, rss, wall, _ = measured([binary, "attack", *flags, "-threads=1", f"-output={path}"], stdin=t)
    report = json.loads(subprocess.run([LOADLAB, "report", "-type=json", path], check=True,
                                       capture_output=True).stdout)
    extra = report["loadlab"]
    requests = max(report["requests"], 1)
    result = {"tool": label, "requests": report["requests"], "rate": report["rate"], "wall": wall,
              "asked": extra.get("asked_rate"), "ratio": extra.get("rate_ratio", 0),
              "lag_p50_us": extra.get("send_lag", {}).get("50th", 0) / 1e3,
              "lag_p99_us": extra.get("send_lag", {}).get("99th", 0) / 1e3, "cpu_us": cpu / requests * 1e6,
              "rss_mib": rss / 1024, "bytes_per_request": os.path.getsize(path) / requests,
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


