#!/usr/bin/env python3
"""Idle WebSocket connections held open: loadlab's resident memory per connection, k6's
beside it (issue 39: 50,000 idle connections at a tenth of k6's memory per connection).

Every connection is an upgrade to the simulator's echo route (`"websocket": "echo"`)
on 127.0.0.1 that then sends nothing for --hold seconds (`hold` in a `ws` step). Memory
per connection is the RSS delta over a run of --base connections per process (as many
processes), divided by the connections added; RSS and open sockets are sampled from
/proc every 0.2 s and taken at the sample with the most sockets open. loadlab's
connections held are what its record files' entries say (below), k6's the sockets.

One process may not open more descriptors than the hard `ulimit -n` (20,000 on the
machine this was written on, and a container cannot raise it), so --connections are
spread over as many loadlab processes (each with a simulator of its own) as
--per-process allows; their RSS deltas are summed. Loopback source ports are not the
limit at that size (28k per destination).

k6 (`go install go.k6.io/k6@latest`; found on PATH, $K6 or $(go env GOPATH)/bin) holds
--k6-vus connections, one VU each (k6/ws), and its figure is measured the same way
against a run of --base VUs; loadlab holds the same number in the same run for a
like-for-like pair. Generators are pinned to CPU 0, simulators to CPU 1.

Usage: bench/websocket/run.py [--connections 50000] [--per-process 16000] [--k6-vus 2000]
                              [--hold 25] [--rate 4000] [--base 200] [--no-build] [--binary BIN]
Output: a table on stdout and bench/out/websocket.json. loadlab's held count is the
peak its record files' connection entries give (`report -type json`,
`loadlab.connections.peak_held`), cross-checked against the sockets in /proc.
"""

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import benchlib  # noqa: E402

RECIPE = '[{"route": "/idle", "websocket": "echo", "stages": [{"status": 200}]}]'


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def start(cmd, cpu, **kw):
    return subprocess.Popen(["taskset", "-c", cpu, *cmd], preexec_fn=raise_fd_limit, **kw)


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def sockets(pid):
    try:
        return sum(1 for fd in os.listdir(f"/proc/{pid}/fd")
                   if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"))
    except OSError:
        return 0


def watch(procs, timeout_s):
    """Samples the processes until all end: (summed RSS in KiB, sockets) at the sample
    with the most sockets open (RSS alone peaks later: freed memory stays mapped)."""
    best, deadline = (0, 0), time.time() + timeout_s
    while any(p.poll() is None for p in procs):
        if time.time() > deadline:
            for p in procs:
                p.kill()
            raise SystemExit(f"timed out after {timeout_s} s")
        held = sum(sockets(p.pid) for p in procs)
        if held >= best[1]:
            best = (sum(rss_kib(p.pid) for p in procs), held)
        time.sleep(0.2)
    return best


class Simulators:
    def __init__(self, binary, count, workdir):
        recipe = os.path.join(workdir, "idle.json")
        with open(recipe, "w") as f:
            f.write(RECIPE)
        self.ports = [benchlib.free_port() for _ in range(count)]
        self.procs = [start([binary, "simulate", "-addr", f"127.0.0.1:{port}", "-threads", "1", recipe],
                            benchlib.SERVER_CPU, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                      for port in self.ports]
        time.sleep(1.0)

    def stop(self):
        for p in self.procs:
            p.terminate()
            p.wait()


def loadlab(binary, ports, connections, args, workdir, label):
    """Holds `connections` over len(ports) processes: (RSS KiB, sockets) at the most held."""
    per = math.ceil(connections / len(ports))
    procs, outputs = [], []
    for i, port in enumerate(ports):
        count = min(per, connections - i * per)
        rate = max(1, min(args.rate // len(ports), count))
        flow = os.path.join(workdir, f"{label}-{i}.toml")
        with open(flow, "w") as f:
            f.write(f"""
[[scenario]]
name = "idle"
rate = {rate}
max_requests = {count}
duration = "{math.ceil(count / rate) + 5}s"
timeout = "10s"

[[scenario.step]]
name = "idle"
ws = "ws://127.0.0.1:{port}/idle"
actions = [{{ hold = "{args.hold}s" }}]
""")
        output = os.path.join(workdir, f"{label}-{i}.llr")
        outputs.append(output)
        procs.append(start([binary, "attack", "-scenarios", flow, "-max-workers", str(count + 100),
                            "-output", output, "-quiet"], benchlib.GENERATOR_CPU))
    peak, held = watch(procs, args.hold + connections / max(1, args.rate) + 120)
    bad = [p.returncode for p in procs if p.returncode != 0]
    if bad:
        raise SystemExit(f"loadlab {label} failed: {bad}")
    return peak, entries_held(binary, outputs, held)


def entries_held(binary, outputs, sockets_held):
    """The connections the record files' entries say were held at once (each process's
    peak, summed: they run side by side), no more than the sockets of the RSS sample."""
    held = 0
    for output in outputs:
        report = subprocess.run([binary, "report", "-type", "json", output],
                                capture_output=True, text=True, check=True).stdout
        connections = json.loads(report.splitlines()[0])["loadlab"].get("connections")
        if not connections:
            raise SystemExit(f"{output}: no connection entries")
        held += connections["peak_held"]
    if abs(held - sockets_held) > max(10, held // 20):
        print(f"note: entries say {held} held, /proc saw {sockets_held} sockets", file=sys.stderr)
    # The RSS is the sample's: when fewer were open then than at the entries' peak,
    # the sample's count (never the larger, which would flatter the figure).
    return min(held, sockets_held)


def k6(binary, port, vus, hold, workdir):
    env = dict(os.environ, K6_NO_USAGE_REPORT="true")
    proc = start([binary, "run", "--quiet", "-e", f"URL=ws://127.0.0.1:{port}/idle", "-e", f"VUS={vus}",
                  "-e", f"HOLD={hold}", os.path.join(HERE, "k6_idle.js")], benchlib.GENERATOR_CPU,
                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=workdir)
    return watch([proc], hold + 180)


def find_k6():
    for path in (os.environ.get("K6"), shutil.which("k6")):
        if path and os.path.exists(path):
            return path
    gopath = subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True).stdout.strip()
    path = os.path.join(gopath.split(os.pathsep)[0], "bin", "k6") if gopath else ""
    return path if path and os.path.exists(path) else None


def per_connection(big, base):
    """Bytes of RSS per connection held: the delta over the base run, over the
    connections added (held as the record's entries say for loadlab, sockets for k6)."""
    (rss, held), (rss0, held0) = big, base
    added = max(1, held - held0)
    return {"rss_kib": rss, "sockets": held, "base_rss_kib": rss0, "base_sockets": held0,
            "bytes_per_connection": round((rss - rss0) * 1024 / added)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=50000)
    parser.add_argument("--per-process", type=int, default=16000)
    parser.add_argument("--k6-vus", type=int, default=2000)
    parser.add_argument("--hold", type=int, default=25)
    parser.add_argument("--rate", type=int, default=4000)
    parser.add_argument("--base", type=int, default=200)
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--binary", default=benchlib.LOADLAB, help="the loadlab to measure (and to simulate with)")
    args = parser.parse_args()
    os.makedirs(benchlib.OUT, exist_ok=True)
    if not args.no_build:
        benchlib.sh("cargo", "build", "--release", "-p", "loadlab", cwd=benchlib.ROOT)
    binary = args.binary
    workdir = tempfile.mkdtemp(prefix="loadlab-ws-", dir=benchlib.OUT)
    processes = math.ceil(args.connections / args.per_process)
    sims = Simulators(binary, processes, workdir)
    figures = {}
    try:
        base = loadlab(binary, sims.ports[:1], args.base, args, workdir, "base")
        # The big run's base has as many processes: each one's own RSS (the binary,
        # its threads) is not a connection's.
        base_all = base if processes == 1 else \
            loadlab(binary, sims.ports, args.base * processes, args, workdir, "base-all")
        big = loadlab(binary, sims.ports, args.connections, args, workdir, "big")
        figures["loadlab"] = dict(per_connection(big, base_all), connections=args.connections, processes=processes)
        k6_binary = find_k6()
        if k6_binary:
            pair = loadlab(binary, sims.ports[:1], args.k6_vus, args, workdir, "pair")
            figures["loadlab_pair"] = dict(per_connection(pair, base), connections=args.k6_vus)
            k6_base = k6(k6_binary, sims.ports[0], args.base, args.hold, workdir)
            k6_big = k6(k6_binary, sims.ports[0], args.k6_vus, args.hold, workdir)
            figures["k6"] = dict(per_connection(k6_big, k6_base), connections=args.k6_vus)
        else:
            figures["k6"] = "not found (go install go.k6.io/k6@latest, or K6=PATH)"
    finally:
        sims.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{'run':<14} {'connections':>11} {'sockets':>8} {'RSS MiB':>13} {'bytes/conn':>11}")
    for name, f in figures.items():
        if isinstance(f, dict):
            print(f"{name:<14} {f['connections']:>11} {f['sockets']:>8} {f['rss_kib'] / 1024:>13.1f} "
                  f"{f['bytes_per_connection']:>11}")
        else:
            print(f"{name:<14} {f}")
    if isinstance(figures.get("k6"), dict):
        ratio = figures["loadlab_pair"]["bytes_per_connection"] / max(1, figures["k6"]["bytes_per_connection"])
        figures["ratio_loadlab_to_k6"] = round(ratio, 4)
        print(f"loadlab/k6 bytes per connection at {args.k6_vus}: {ratio:.3f} (goal: 0.1 or less)")
    with open(os.path.join(benchlib.ROOT, "bench", "out", "websocket.json"), "w") as f:
        json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
