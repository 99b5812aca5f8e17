#!/usr/bin/env python3
"""WebSocket echo round trips and server-sent events through one generator core:
loadlab's CPU per message beside k6's (issue 39: echo round trips at 20k messages/s
over 1,000 connections at a fifth of k6's CPU per message or less; SSE events per
second received on one core).

echo: --connections WebSocket connections to the simulator's echo route, each sending
--per-connection messages a second (16 bytes) for --seconds, then holding 1 s for the
last echoes: 1,000 x 20 = 20k messages/s each way. loadlab paces each connection
with a `send` action's `every`/`count` (no record per message: the counts are in
the record file's connection entries, read back through `loadlab report`); k6
(`k6_echo.js`, k6/ws, one VU a connection) sends on `setInterval`. CPU is the
generator's user + system time (wait4), pinned to CPU 0, the simulator to CPU 1;
CPU per message is over the echoes received. --precision DURATION sets loadlab's
-precision (its workers' and session loops' wake-up budget) for the echo run; given
more than once, a loadlab row each (`default`: the flag left out), beside one k6 row.

sse: --streams event streams from the simulator's events route (an event every
--event-every, `data: tick N`) read for --seconds on one core. k6 has no event-stream
reader of its own: with K6_SSE pointing at a k6 built with the xk6-sse extension
(`xk6 build --with github.com/phymbert/xk6-sse`), `k6_sse.js` is its peer; without
it the k6 row says so.

Usage: bench/websocket/traffic.py [echo|sse|both] [--connections 1000]
           [--per-connection 20] [--seconds 20] [--streams 100] [--event-every 1ms]
           [--precision default|DURATION ...] [--no-build] [--binary BIN]
  e.g. bench/websocket/traffic.py echo --precision default --precision 1ms
Output: a table on stdout and bench/out/websocket_traffic.json.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import run as idle  # noqa: E402  (bench/websocket/run.py: find_k6, Simulators' helpers)

HERE = os.path.dirname(os.path.abspath(__file__))
benchlib = idle.benchlib

RECIPE = """[
  {"route": "/echo", "websocket": "echo", "stages": [{"status": 200}]},
  {"route": "/events", "events": {"count": 100000000, "every": "EVERY", "data": "tick"},
   "stages": [{"status": 200}]},
  {"route": "/events-finite", "events": {"count": COUNT, "every": "EVERY", "data": "tick"},
   "stages": [{"status": 200}]}
]"""


def events_in(seconds, event_every):
    """How many events of one stream paced `event_every` (`1ms`, `500us`, `2s`) fill `seconds`."""
    found = re.fullmatch(r"(\d+(?:\.\d+)?)(us|ms|s)", event_every)
    if not found:
        raise SystemExit(f"--event-every {event_every!r}: give a number and us, ms or s")
    every_s = float(found.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[found.group(2)]
    return max(1, round(seconds / every_s))


def simulator(binary, workdir, event_every, seconds):
    recipe = os.path.join(workdir, "traffic.json")
    with open(recipe, "w") as f:
        f.write(RECIPE.replace("EVERY", event_every).replace("COUNT", str(events_in(seconds, event_every))))
    port = benchlib.free_port()
    proc = idle.start([binary, "simulate", "-addr", f"127.0.0.1:{port}", "-threads", "1", recipe],
                      benchlib.SERVER_CPU, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    return proc, port


def report_messages(binary, output):
    """(messages out, messages in, the Msg Latency row's figures or None) from
    `loadlab report`'s connection rows."""
    text = subprocess.run([binary, "report", output], capture_output=True, text=True, check=True).stdout
    found = re.search(r"^Messages\s+\[out, in, out/s, in/s\]\s+(\d+), (\d+)", text, re.M)
    if not found:
        raise SystemExit(f"no Messages row in the report:\n{text}")
    timed = re.search(r"^Msg Latency\s+\[50, 90, 99, max\]\s+(.+)$", text, re.M)
    return int(found.group(1)), int(found.group(2)), timed.group(1).strip() if timed else None


def loadlab_run(binary, flow_text, workdir, label, max_workers, flags=()):
    flow = os.path.join(workdir, f"{label}.toml")
    with open(flow, "w") as f:
        f.write(flow_text)
    output = os.path.join(workdir, f"{label}.llr")
    cpu, rss, wall, _ = benchlib.measured([binary, "attack", "-scenarios", flow, "-max-workers",
                                           str(max_workers), *flags, "-output", output, "-quiet"])
    out, got, timed = report_messages(binary, output)
    os.remove(output)
    return {"cpu_s": round(cpu, 3), "peak_rss_kib": rss, "wall_s": round(wall, 2),
            "messages_out": out, "messages_in": got,
            "cpu_us_per_message": round(cpu * 1e6 / max(1, got), 2),
            "message_latency_50_90_99_max": timed}


def loadlab_echo(binary, port, args, workdir, precision):
    flags = () if precision == "default" else ("-precision", precision)
    every_ms = 1000 / args.per_connection
    count = args.per_connection * args.seconds
    rate = min(args.connections, 1000)
    return loadlab_run(binary, f"""
[[scenario]]
name = "echo"
rate = {rate}
max_requests = {args.connections}
duration = "{args.connections // rate + 2}s"
timeout = "10s"

[[scenario.step]]
name = "echo"
ws = "ws://127.0.0.1:{port}/echo"
round_trip = "in order"
actions = [
  {{ send = "0123456789abcdef", every = "{every_ms}ms", count = {count} }},
  {{ hold = "1s" }},
  {{ close = 1000 }},
]
""", workdir, "echo", args.connections + 100, flags)


def loadlab_sse(binary, port, args, workdir):
    return loadlab_run(binary, f"""
[[scenario]]
name = "sse"
rate = {args.streams}
max_requests = {args.streams}
duration = "2s"
timeout = "10s"

[[scenario.step]]
name = "ticks"
sse = "http://127.0.0.1:{port}/events"
listen = "{args.seconds}s"
""", workdir, "sse", args.streams + 100)


def k6_run(binary, script, env_pairs, workdir):
    summary = os.path.join(workdir, "k6-summary.json")
    flags = [x for k, v in env_pairs for x in ("-e", f"{k}={v}")]
    cpu, rss, wall, _ = benchlib.measured([binary, "run", "--quiet", "--no-usage-report",
                                           "--summary-export", summary, *flags,
                                           os.path.join(HERE, script)])
    with open(summary) as f:
        metrics = json.load(f)["metrics"]
    count = lambda name: int(metrics.get(name, {}).get("count", 0))  # noqa: E731
    return cpu, rss, wall, count


def k6_echo(binary, port, args, workdir):
    cpu, rss, wall, count = k6_run(binary, "k6_echo.js", [
        ("URL", f"ws://127.0.0.1:{port}/echo"), ("VUS", args.connections),
        ("RATE", args.per_connection), ("SECONDS", args.seconds)], workdir)
    got = count("ws_msgs_received")
    return {"cpu_s": round(cpu, 3), "peak_rss_kib": rss, "wall_s": round(wall, 2),
            "messages_out": count("ws_msgs_sent"), "messages_in": got,
            "cpu_us_per_message": round(cpu * 1e6 / max(1, got), 2)}


def k6_sse(k6, port, args, workdir):
    binary = os.environ.get("K6_SSE")
    if binary and os.path.exists(binary):
        script, route = "k6_sse.js", "events"
    elif k6:
        binary, script, route = k6, "k6_sse_body.js", "events-finite"
    else:
        return "k6 not found"
    cpu, rss, wall, count = k6_run(binary, script, [
        ("URL", f"http://127.0.0.1:{port}/{route}"), ("VUS", args.streams),
        ("SECONDS", args.seconds)], workdir)
    got = count("sse_event")
    return {"cpu_s": round(cpu, 3), "peak_rss_kib": rss, "wall_s": round(wall, 2),
            "messages_out": 0, "messages_in": got,
            "cpu_us_per_message": round(cpu * 1e6 / max(1, got), 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", default="both", choices=["echo", "sse", "both"])
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--per-connection", type=int, default=20)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--event-every", default="1ms")
    parser.add_argument("--precision", action="append", metavar="DURATION",
                        help="loadlab's -precision for the echo run, `default` to leave it out; "
                             "repeat for a row each [default: default]")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--binary", default=benchlib.LOADLAB)
    args = parser.parse_args()
    os.makedirs(benchlib.OUT, exist_ok=True)
    if not args.no_build:
        benchlib.sh("cargo", "build", "--release", "-p", "loadlab", cwd=benchlib.ROOT)
    workdir = tempfile.mkdtemp(prefix="loadlab-ws-traffic-", dir=benchlib.OUT)
    server, port = simulator(args.binary, workdir, args.event_every, args.seconds)
    figures = {}
    try:
        k6 = idle.find_k6()
        if args.mode in ("echo", "both"):
            for precision in args.precision or ["default"]:
                name = "echo loadlab" + ("" if precision == "default" else f" {precision}")
                figures[name] = loadlab_echo(args.binary, port, args, workdir, precision)
            figures["echo k6"] = k6_echo(k6, port, args, workdir) if k6 else "k6 not found"
        if args.mode in ("sse", "both"):
            figures["sse loadlab"] = loadlab_sse(args.binary, port, args, workdir)
            figures["sse k6"] = k6_sse(k6, port, args, workdir)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{'run':<17} {'msgs out':>9} {'msgs in':>9} {'in/s':>9} {'CPU s':>7} {'CPU-us/msg':>10} {'RSS MiB':>8}")
    for name, f in figures.items():
        if isinstance(f, dict):
            print(f"{name:<17} {f['messages_out']:>9} {f['messages_in']:>9} "
                  f"{f['messages_in'] / max(0.001, f['wall_s']):>9.0f} {f['cpu_s']:>7.2f} "
                  f"{f['cpu_us_per_message']:>10.2f} {f['peak_rss_kib'] / 1024:>8.1f}")
            if f.get("message_latency_50_90_99_max"):
                print(f"{'':<17} message latency [50, 90, 99, max] {f['message_latency_50_90_99_max']}")
        else:
            print(f"{name:<17} {f}")
    pairs = [(name, figures.get(name), figures.get("echo k6")) for name in figures
             if name.startswith("echo loadlab")] + [("sse loadlab", figures.get("sse loadlab"), figures.get("sse k6"))]
    for name, ours, k6 in pairs:
        if isinstance(ours, dict) and isinstance(k6, dict):
            ratio = ours["cpu_us_per_message"] / max(0.001, k6["cpu_us_per_message"])
            mode, _, rest = name.partition(" loadlab")
            figures[f"{mode}_cpu_ratio_loadlab_to_k6" + rest.replace(" ", "_")] = round(ratio, 3)
            goal = " (goal: 0.2 or less)" if mode == "echo" else ""
            print(f"{name}: loadlab/k6 CPU per message {ratio:.3f}{goal}")
    with open(os.path.join(benchlib.ROOT, "bench", "out", "websocket_traffic.json"), "w") as f:
        json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
