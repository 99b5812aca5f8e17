#!/usr/bin/env python3
"""Unary gRPC calls at a constant rate against grpc-go's greeter (one server core), loadlab
beside ghz in the same run: CPU per call of each generator (one core), the rate achieved,
latency p50/p99, and record bytes per call beside an HTTP request's (nginx).

ghz is a closed-model tool: `--rps R` paces its workers, so it is compared at the rate it
reaches with `--rps` (loadlab in the open model at the same rate), and closed against
closed (`-concurrency` users against ghz's `-c` workers, no pacing), each tool's CPU per
call from wait4.

Setup: `source .ci/setup/grpc-go.sh` (the greeter) and ghz from the Go module proxy
(`GOBIN=$PWD/bench/out/bin go install github.com/bojand/ghz/cmd/ghz@latest`; found on
PATH, in $GHZ or in bench/out/bin). Usage: bench/grpc/run.py [--seconds N] [--rates 5000,20000]
[--ladder 10000,20000,...] [--placeholders] [--stream]: the ladder finds each tool's highest rate held within 1% (the
rate achieved at least 99% of the rate asked, at least 99% of calls OK), climbing until
the first rung a tool does not hold. --placeholders prices a message rendered per call
(`{"name": "user-{{seq}}"}`, split once at start) against the same message static, and
ghz's own per-call template (`{{.RequestNumber}}`) beside them, at the first rate.
--stream adds server streaming: route_guide's `ListFeatures` over its whole map (every
feature it knows, one message each), closed model (`--users` each), messages received a
second and CPU per message of each generator on one core, loadlab's messages counted by
its own `report` (`Messages`), ghz's as its calls times the messages per call.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import benchlib  # noqa: E402

GRPC_GO = os.environ.get("LOADLAB_GRPC_GO") or os.path.expanduser("~/.cache/loadlab/grpc-go")
PROTO = os.path.join(GRPC_GO, "proto", "helloworld.proto")
MESSAGE = '{"name": "loadlab"}'
GREETER = ("greeter_server", PROTO, "helloworld.Greeter/SayHello")
# route_guide's whole map: ListFeatures streams every feature it knows.
WHOLE_MAP = ('{"lo": {"latitude": 400000000, "longitude": -750000000}, '
             '"hi": {"latitude": 420000000, "longitude": -730000000}}')


def ghz_binary():
    for path in (os.environ.get("GHZ"), shutil.which("ghz"),
                 os.path.join(benchlib.ROOT, "bench", "out", "bin", "ghz")):
        if path and os.path.exists(path):
            return path
    sys.exit("ghz not found: GOBIN=$PWD/bench/out/bin go install github.com/bojand/ghz/cmd/ghz@latest")


class Greeter:
    """grpc-go's greeter (or another example server, `binary`) on SERVER_CPU, GOMAXPROCS=1."""

    def __init__(self, binary="greeter_server"):
        self.port = benchlib.free_port()
        env = dict(os.environ, GOMAXPROCS="1")
        self.proc = subprocess.Popen(
            ["taskset", "-c", benchlib.SERVER_CPU, os.path.join(GRPC_GO, "bin", binary),
             "-port", str(self.port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def loadlab(port, flags, label, message=MESSAGE, method=GREETER, keep=None):
    _, proto, call = method
    targets = f"GRPC 127.0.0.1:{port} {call}\n{message}\n"
    result = benchlib.run_loadlab(None, [*flags, "-proto", proto], label, keep=keep, stdin_text=targets)
    return result


def ghz(port, flags, label, seconds, message=MESSAGE, method=GREETER):
    _, proto, call = method
    out = os.path.join(benchlib.OUT, "ghz.json")
    cpu, rss, _, _ = benchlib.measured(
        [ghz_binary(), "--insecure", "--proto", proto, "--call", call,
         "-d", message, "-z", f"{seconds}s", "--cpus", "1", "-O", "json", "-o", out, *flags,
         f"127.0.0.1:{port}"])
    with open(out) as f:
        report = json.load(f)
    count = max(report["count"], 1)
    latency = {d["percentage"]: d["latency"] for d in report.get("latencyDistribution") or []}
    ok = report.get("statusCodeDistribution", {}).get("OK", 0)
    return {"tool": label, "requests": report["count"], "rate": report["rps"],
            "cpu_us": cpu / count * 1e6, "rss_mib": rss / 1024, "success": ok / count,
            "p50_us": latency.get(50, 0) / 1e3, "p99_us": latency.get(99, 0) / 1e3}


def held(r, rate):
    """Whether a run held `rate` within 1%: the rate and the calls."""
    return r["rate"] >= 0.99 * rate and r["success"] >= 0.99


def ladder(port, rates, seconds, users):
    """Each tool's highest rung held within 1% on one core, climbing `rates`."""
    print(f"== highest rate held within 1% (rungs {','.join(map(str, rates))}/s, {seconds} s each)", flush=True)
    runs = {
        "loadlab": lambda rate: loadlab(port, [f"-rate={rate}", f"-duration={seconds}s"],
                                        f"loadlab open {rate}/s"),
        "ghz": lambda rate: ghz(port, ["--rps", str(rate), "-c", str(users)],
                                f"ghz --rps {rate} -c {users}", seconds),
    }
    for tool, run in runs.items():
        best = 0
        for rate in rates:
            r = run(rate)
            row(r)
            if not held(r, rate):
                break
            best = rate
        print(f"  {tool}: highest rate held within 1%: {best}/s", flush=True)


def placeholders(port, rate, seconds, users):
    """CPU per call of a message rendered per call beside the static one, and ghz's."""
    print(f"== a placeholder in the message, {rate}/s, {seconds} s", flush=True)
    flags = [f"-rate={rate}", f"-duration={seconds}s"]
    static = loadlab(port, flags, f"loadlab static {rate}/s")
    templated = loadlab(port, flags, f"loadlab {{{{seq}}}} {rate}/s",
                        '{"name": "user-{{seq}}"}')
    theirs = ghz(port, ["--rps", str(rate), "-c", str(users)],
                 f"ghz {{{{.RequestNumber}}}} --rps {rate}", seconds,
                 '{"name": "user-{{.RequestNumber}}"}')
    for r in (static, templated, theirs):
        row(r)
    print(f"  CPU per call, loadlab templated / static: {templated['cpu_us'] / static['cpu_us']:.2f}"
          f", templated / ghz templated: {templated['cpu_us'] / theirs['cpu_us']:.2f}", flush=True)


def route_guide_proto():
    """route_guide.proto is in edition 2023, which protox (and ghz's parser) do not read;
    with implicit field presence it is proto3, field for field."""
    source = open(os.path.join(GRPC_GO, "proto", "route_guide.proto")).read()
    source = source.replace('edition = "2023";', 'syntax = "proto3";')
    source = source.replace("option features.field_presence = IMPLICIT;", "")
    os.makedirs(benchlib.OUT, exist_ok=True)
    path = os.path.join(benchlib.OUT, "route_guide.proto")
    with open(path, "w") as f:
        f.write(source)
    return path


def report_row(path, label):
    """The figures of `loadlab report`'s text row `label`, as numbers where they are."""
    text = subprocess.run([benchlib.LOADLAB, "report", path], check=True, capture_output=True,
                          text=True).stdout
    line = next(line for line in text.splitlines() if line.startswith(label))
    return [float(f) for f in line.rsplit("]", 1)[1].split(",")]


def streaming(seconds, users):
    """Messages received a second, and CPU per message, on one generator core."""
    print(f"== server streaming ListFeatures (whole map), {users} users / workers, {seconds} s",
          flush=True)
    server = Greeter("route_guide_server")
    method = ("route_guide_server", route_guide_proto(), "routeguide.RouteGuide/ListFeatures")
    keep = os.path.join(benchlib.OUT, "stream.llr")
    try:
        ours = loadlab(server.port, ["-rate=0", f"-concurrency={users}", f"-duration={seconds}s"],
                       f"loadlab closed {users} users", WHOLE_MAP, method, keep)
        theirs = ghz(server.port, ["-c", str(users)], f"ghz -c {users}", seconds, WHOLE_MAP, method)
    finally:
        server.stop()
    per_call = report_row(keep, "Msgs/Call")[1]
    _, messages, ours_per_s = report_row(keep, "Messages")
    os.remove(keep)
    theirs_messages = theirs["requests"] * per_call
    rows = [(ours, messages, ours_per_s),
            (theirs, theirs_messages, theirs["rate"] * per_call)]
    for r, count, per_s in rows:
        cpu_s = r["cpu_us"] * r["requests"] / 1e6
        r["msg_cpu_us"] = cpu_s / max(count, 1) * 1e6
        print(f"  {r['tool']:<36} {per_s:>11.0f} msgs/s  {r['msg_cpu_us']:6.2f} CPU-us/msg  "
              f"{per_call:.0f} msgs/call  ok {r['success'] * 100:5.1f}%", flush=True)
    print(f"  CPU per message, loadlab / ghz: {ours['msg_cpu_us'] / theirs['msg_cpu_us']:.2f}",
          flush=True)


def http_bytes(seconds, rate):
    """Record bytes per request of plain HTTP/1.1 GETs against nginx at the same rate."""
    nginx = benchlib.Nginx()
    try:
        return benchlib.loadlab(nginx.url, rate, seconds)
    finally:
        nginx.stop()


def row(r):
    extra = ""
    if "p50_us" in r:
        extra = f"  p50 {r['p50_us']:.0f} us  p99 {r['p99_us']:.0f} us"
    if "bytes_per_request" in r:
        extra += f"  {r['bytes_per_request']:.2f} record bytes/call"
    print(f"  {r['tool']:<36} {r['rate']:>9.0f}/s  {r['cpu_us']:6.1f} CPU-us/call  "
          f"ok {r['success'] * 100:5.1f}%  {r['rss_mib']:.0f} MiB{extra}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rates", default="5000")
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--ladder", default="", help="rates to climb, e.g. 10000,20000,30000")
    parser.add_argument("--placeholders", action="store_true",
                        help="price a per-call message beside the static one (and ghz's)")
    parser.add_argument("--stream", action="store_true",
                        help="server streaming: messages/s received on one core, beside ghz")
    args = parser.parse_args()
    if not os.path.exists(os.path.join(GRPC_GO, "bin", "greeter_server")):
        sys.exit("no greeter: source .ci/setup/grpc-go.sh")
    benchlib.ensure_packages()
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "loadlab"], check=True, cwd=benchlib.ROOT)
    server = Greeter()
    try:
        for rate in [int(r) for r in args.rates.split(",")]:
            print(f"== unary SayHello at {rate}/s, {args.seconds} s", flush=True)
            ours = loadlab(server.port, [f"-rate={rate}", f"-duration={args.seconds}s"],
                           f"loadlab open {rate}/s")
            theirs = ghz(server.port, ["--rps", str(rate), "-c", str(args.users)],
                         f"ghz --rps {rate} -c {args.users}", args.seconds)
            row(ours)
            row(theirs)
            print(f"  CPU per call, loadlab / ghz: {ours['cpu_us'] / theirs['cpu_us']:.2f}", flush=True)
        print(f"== closed model, {args.users} users / workers, no pacing, {args.seconds} s", flush=True)
        ours = loadlab(server.port, ["-rate=0", f"-concurrency={args.users}", f"-duration={args.seconds}s"],
                       f"loadlab closed {args.users} users")
        theirs = ghz(server.port, ["-c", str(args.users)], f"ghz -c {args.users}", args.seconds)
        row(ours)
        row(theirs)
        print(f"  CPU per call, loadlab / ghz: {ours['cpu_us'] / theirs['cpu_us']:.2f}", flush=True)
        if args.placeholders:
            placeholders(server.port, int(args.rates.split(",")[0]), args.seconds, args.users)
        if args.ladder:
            ladder(server.port, [int(r) for r in args.ladder.split(",")], args.seconds, args.users)
    finally:
        server.stop()
    if args.stream:
        streaming(args.seconds, args.users)
    http = http_bytes(args.seconds, 5000)
    row(http)
    print(f"  record bytes per gRPC call / per HTTP request: "
          f"{ours['bytes_per_request'] / http['bytes_per_request']:.2f}", flush=True)


if __name__ == "__main__":
    main()
