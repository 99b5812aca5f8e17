#!/usr/bin/env python3
"""Unary gRPC calls at a constant rate against grpc-go's greeter (one server core), loadlab
beside ghz and k6 (`k6/net/grpc`, k6_grpc.js) in the same run: CPU per call of each
generator (one core), the rate achieved, latency p50/p99, and record bytes per call beside
an HTTP request's (nginx). Then a server stream (route_guide's ListFeatures, every feature
of its database per call) at --stream-rate: calls and messages per second and CPU per call
of each tool.

ghz is a closed-model tool: `--rps R` paces its workers, so it is compared at the rate it
reaches with `--rps` (loadlab in the open model at the same rate), and closed against
closed (`-concurrency` users against ghz's `-c` workers, no pacing), each tool's CPU per
call from wait4.

Setup: `source .ci/setup/grpc-go.sh` (the greeter) and ghz from the Go module proxy
(`GOBIN=$PWD/bench/out/bin go install github.com/bojand/ghz/cmd/ghz@latest`; found on
PATH, in $GHZ or in bench/out/bin); k6 from --k6, $K6, PATH or ~/go/bin (`go install
go.k6.io/k6@latest`; without it the k6 rows are skipped with the reason). k6 is open-model
here too: `constant-arrival-rate` at the same rate, --users VUs at most. --binary PATH
--no-build runs a loadlab already built (a debug one, to check the script end to end at a
low rate). Usage: bench/grpc/run.py [--seconds N] [--rates 5000,20000] [--stream-rate 200]
[--ladder 10000,20000,...] [--placeholders]: the ladder finds each tool's highest rate held within 1% (the
rate achieved at least 99% of the rate asked, at least 99% of calls OK), climbing until
the first rung a tool does not hold. --placeholders prices a message rendered per call
(`{"name": "user-{{seq}}"}`, split once at start) against the same message static, and
ghz's own per-call template (`{{.RequestNumber}}`) beside them, at the first rate.
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

HERE = os.path.dirname(os.path.abspath(__file__))
GRPC_GO = os.environ.get("LOADLAB_GRPC_GO") or os.path.expanduser("~/.cache/loadlab/grpc-go")
PROTO = os.path.join(GRPC_GO, "proto", "helloworld.proto")
ROUTE_PROTO = os.path.join(benchlib.OUT, "route_guide.proto")
MESSAGE = '{"name": "loadlab"}'
# Every feature of the route guide's database, in one stream.
EVERYWHERE = ('{"lo": {"latitude": -900000000, "longitude": -1800000000}, '
              '"hi": {"latitude": 900000000, "longitude": 1800000000}}')
LIST_FEATURES = "routeguide.RouteGuide/ListFeatures"


def ghz_binary():
    for path in (os.environ.get("GHZ"), shutil.which("ghz"),
                 os.path.join(benchlib.ROOT, "bench", "out", "bin", "ghz")):
        if path and os.path.exists(path):
            return path
    sys.exit("ghz not found: GOBIN=$PWD/bench/out/bin go install github.com/bojand/ghz/cmd/ghz@latest")


def find_k6(given):
    for path in (given, os.environ.get("K6"), shutil.which("k6"), os.path.expanduser("~/go/bin/k6")):
        if path and os.access(path, os.X_OK):
            return path
    return None


class Greeter:
    """A grpc-go example server (the greeter unless told) on SERVER_CPU, GOMAXPROCS=1."""

    def __init__(self, name="greeter_server"):
        self.port = benchlib.free_port()
        env = dict(os.environ, GOMAXPROCS="1")
        self.proc = subprocess.Popen(
            ["taskset", "-c", benchlib.SERVER_CPU, os.path.join(GRPC_GO, "bin", name),
             "-port", str(self.port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def loadlab(port, flags, label, message=MESSAGE, call="helloworld.Greeter/SayHello", proto=PROTO):
    targets = f"GRPC 127.0.0.1:{port} {call}\n{message}\n"
    result = benchlib.run_loadlab(None, [*flags, "-proto", proto], label, stdin_text=targets,
                                  binary=benchlib.LOADLAB)
    return result


def ghz(port, flags, label, seconds, message=MESSAGE, call="helloworld.Greeter/SayHello", proto=PROTO):
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


def write_route_proto():
    """route_guide.proto in proto3 at ROUTE_PROTO: it is written in edition 2023, which
    protox (and ghz's parser) do not read; with implicit presence it is proto3 as is."""
    with open(os.path.join(GRPC_GO, "proto", "route_guide.proto")) as f:
        text = f.read()
    text = text.replace('edition = "2023";', 'syntax = "proto3";')
    text = text.replace("option features.field_presence = IMPLICIT;", "")
    os.makedirs(benchlib.OUT, exist_ok=True)
    with open(ROUTE_PROTO, "w") as f:
        f.write(text)


def k6(binary, port, mode, rate, seconds, users, label):
    """k6_grpc.js (MODE unary or stream) at `rate` calls/s (None: `users` back to back),
    one core, its CPU per call from wait4; `messages` counted by the script."""
    summary = os.path.join(benchlib.OUT, "k6-grpc.summary.json")
    if os.path.exists(summary):
        os.remove(summary)
    proto = ROUTE_PROTO if mode == "stream" else PROTO
    env = dict(os.environ, K6_NO_USAGE_REPORT="true", MODE=mode, ADDR=f"127.0.0.1:{port}",
               PROTO_DIR=os.path.dirname(proto), PROTO_FILE=os.path.basename(proto), SECONDS=str(seconds), VUS=str(users), SUMMARY=summary,
               GOMAXPROCS="1")
    if rate:
        env["RATE"] = str(rate)
    else:
        env.pop("RATE", None)
    cpu, rss, _, _ = benchlib.measured([binary, "run", "--no-usage-report", "--quiet", "--no-color",
                                        os.path.join(HERE, "k6_grpc.js")], env=env)
    metrics = json.load(open(summary))["metrics"]

    def value(name, key):
        return metrics.get(name, {}).get("values", {}).get(key, 0)
    ok, failed = value("calls_ok", "count"), value("calls_failed", "count")
    calls = max(ok + failed, 1)
    result = {"tool": label, "requests": calls, "rate": calls / seconds, "cpu_us": cpu / calls * 1e6,
              "rss_mib": rss / 1024, "success": ok / calls,
              "dropped": value("dropped_iterations", "count")}
    if mode == "unary":
        result["p50_us"] = value("grpc_req_duration", "p(50)") * 1e3
        result["p99_us"] = value("grpc_req_duration", "p(99)") * 1e3
    else:
        result["messages_per_call"] = value("messages", "count") / calls
    return result


def streams(port, rate, seconds, users, k6_binary):
    """A server stream of every feature, first at `rate` calls/s (CPU per call at the same
    pace), then closed, `users` back to back (messages per second received on one core).
    The stream is the same every call, so k6's count per call stands for all three
    (loadlab's own is `report`'s `Msgs/Call` row)."""
    write_route_proto()
    call = (EVERYWHERE, LIST_FEATURES, ROUTE_PROTO)
    shapes = [
        (f"at {rate}/s", [f"-rate={rate}"], ["--rps", str(rate), "-c", str(users)], rate,
         [f"loadlab open {rate}/s", f"ghz --rps {rate} -c {users}", f"k6 arrival-rate {rate}/s"]),
        (f"closed, {users} users", ["-rate=0", f"-concurrency={users}"], ["-c", str(users)], None,
         [f"loadlab closed {users} users", f"ghz -c {users}", f"k6 {users} VUs"]),
    ]
    per_call = None
    for title, ours, theirs, k6_rate, labels in shapes:
        print(f"== server stream {LIST_FEATURES} {title}, {seconds} s", flush=True)
        runs = [loadlab(port, [*ours, f"-duration={seconds}s"], labels[0], *call),
                ghz(port, theirs, labels[1], seconds, *call)]
        if k6_binary:
            runs.append(k6(k6_binary, port, "stream", k6_rate, seconds, users, labels[2]))
        per_call = next((r["messages_per_call"] for r in runs if "messages_per_call" in r), per_call)
        for r in runs:
            row(r)
            if per_call:
                print(f"    {r['rate'] * per_call:,.0f} messages/s ({per_call:.0f} per call), "
                      f"{r['cpu_us'] / per_call:.2f} CPU-us per message", flush=True)
        for r in runs[1:]:
            print(f"  CPU per call, loadlab / {r['tool'].split()[0]}: {runs[0]['cpu_us'] / r['cpu_us']:.2f}",
                  flush=True)


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


def http_bytes(seconds, rate):
    """Record bytes per request of plain HTTP/1.1 GETs against nginx at the same rate."""
    nginx = benchlib.Nginx()
    try:
        return benchlib.loadlab(nginx.url, rate, seconds, binary=benchlib.LOADLAB)
    finally:
        nginx.stop()


def row(r):
    extra = ""
    if "p50_us" in r:
        extra = f"  p50 {r['p50_us']:.0f} us  p99 {r['p99_us']:.0f} us"
    if r.get("dropped"):
        extra += f"  {r['dropped']:.0f} dropped"
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
    parser.add_argument("--stream-rate", type=int, default=200,
                        help="server-stream calls/s (0: no server-stream part)")
    parser.add_argument("--k6", help="the k6 binary (default: $K6, PATH, ~/go/bin/k6)")
    parser.add_argument("--binary", help="the loadlab to run (default: this tree's release build)")
    parser.add_argument("--no-build", action="store_true", help="do not build loadlab first")
    args = parser.parse_args()
    if not os.path.exists(os.path.join(GRPC_GO, "bin", "greeter_server")):
        sys.exit("no greeter: source .ci/setup/grpc-go.sh")
    k6_binary = find_k6(args.k6)
    if not k6_binary:
        print("== k6 skipped: not found (go install go.k6.io/k6@latest, or --k6 PATH)", flush=True)
    benchlib.ensure_packages()
    if args.binary:
        benchlib.LOADLAB = os.path.abspath(args.binary)
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "loadlab"], check=True, cwd=benchlib.ROOT)
    server = Greeter()
    try:
        for rate in [int(r) for r in args.rates.split(",")]:
            print(f"== unary SayHello at {rate}/s, {args.seconds} s", flush=True)
            ours = loadlab(server.port, [f"-rate={rate}", f"-duration={args.seconds}s"],
                           f"loadlab open {rate}/s")
            theirs = [ghz(server.port, ["--rps", str(rate), "-c", str(args.users)],
                          f"ghz --rps {rate} -c {args.users}", args.seconds)]
            if k6_binary:
                theirs.append(k6(k6_binary, server.port, "unary", rate, args.seconds, args.users,
                                 f"k6 arrival-rate {rate}/s"))
            # The same rate at a 1 ms precision budget (sends due within 1 ms go out
            # together, each late send's lag recorded): fewer wake-ups of the server.
            coarse = loadlab(server.port, [f"-rate={rate}", f"-duration={args.seconds}s", "-precision=1ms"],
                             f"loadlab open {rate}/s -precision=1ms")
            for mine in (ours, coarse):
                row(mine)
                print(f"    send lag p99 {mine['lag_p99_us']:.0f} us", flush=True)
            for r in theirs:
                row(r)
                for mine in (ours, coarse):
                    print(f"  CPU per call, {mine['tool']} / {r['tool'].split()[0]}: "
                          f"{mine['cpu_us'] / r['cpu_us']:.2f}", flush=True)
        print(f"== closed model, {args.users} users / workers, no pacing, {args.seconds} s", flush=True)
        ours = loadlab(server.port, ["-rate=0", f"-concurrency={args.users}", f"-duration={args.seconds}s"],
                       f"loadlab closed {args.users} users")
        theirs = [ghz(server.port, ["-c", str(args.users)], f"ghz -c {args.users}", args.seconds)]
        if k6_binary:
            theirs.append(k6(k6_binary, server.port, "unary", None, args.seconds, args.users,
                             f"k6 {args.users} VUs"))
        row(ours)
        for r in theirs:
            row(r)
            print(f"  CPU per call, loadlab / {r['tool'].split()[0]}: {ours['cpu_us'] / r['cpu_us']:.2f}",
                  flush=True)
        if args.placeholders:
            placeholders(server.port, int(args.rates.split(",")[0]), args.seconds, args.users)
        if args.ladder:
            ladder(server.port, [int(r) for r in args.ladder.split(",")], args.seconds, args.users)
    finally:
        server.stop()
    if args.stream_rate:
        route_guide = Greeter("route_guide_server")
        try:
            streams(route_guide.port, args.stream_rate, args.seconds, args.users, k6_binary)
        finally:
            route_guide.stop()
    http = http_bytes(args.seconds, 5000)
    row(http)
    print(f"  record bytes per gRPC call / per HTTP request: "
          f"{ours['bytes_per_request'] / http['bytes_per_request']:.2f}", flush=True)


if __name__ == "__main__":
    main()
