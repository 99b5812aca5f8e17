#!/usr/bin/env python3
"""Do -prometheus-addr and -prometheus-remote-write change the attack's CPU per request?
Same run, alternating rounds: loadlab open model at RATE req/s against a pinned nginx,
(1) without either flag, (2) with -prometheus-addr, scraped once a second by this script
(the rendering of each scrape counts, as it runs in the attack's process), (3) with
-prometheus-remote-write every second to a local receiver in this script (it decodes
nothing and answers 204). Median of --rounds rounds; wrk's CPU per request is the
yardstick. All traffic on loopback; every run is bounded by --seconds.

    python3 bench/live/prometheus.py [--rate 20000] [--seconds 20] [--rounds 3]
"""

import argparse
import http.server
import os
import statistics
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import benchlib  # noqa: E402


class Receiver(http.server.BaseHTTPRequestHandler):
    """A remote-write receiver that counts pushes and their bytes."""

    pushes = 0
    push_bytes = 0

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Receiver.pushes += 1
        Receiver.push_bytes += len(body)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def start_receiver():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/api/v1/write"


def scrape_every_second(port, stop, scrapes):
    """Scrapes http://127.0.0.1:PORT/metrics once a second until `stop` is set."""
    while not stop.wait(1.0):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
                scrapes.append(len(answer.read()))
        except OSError:
            pass  # not listening yet, or already gone


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=int, default=20000)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    benchlib.ensure_packages()
    benchlib.sh("cargo", "build", "--release", "--quiet", cwd=benchlib.ROOT)
    os.makedirs(benchlib.OUT, exist_ok=True)
    nginx = benchlib.Nginx()
    receiver, receiver_url = start_receiver()
    runs = {"plain": [], "scraped": [], "remote-write": []}
    try:
        for n in range(args.rounds):
            for label in runs:
                flags = [f"-rate={args.rate}", f"-duration={args.seconds}s", "-quiet"]
                stop, scrapes = threading.Event(), []
                scraper = None
                if label == "scraped":
                    port = benchlib.free_port()
                    flags.append(f"-prometheus-addr=127.0.0.1:{port}")
                    scraper = threading.Thread(target=scrape_every_second, args=(port, stop, scrapes))
                    scraper.start()
                elif label == "remote-write":
                    flags += [f"-prometheus-remote-write={receiver_url}",
                              "-prometheus-remote-write-every=1s", f"-run-id=bench-{n}"]
                pushes_before = Receiver.pushes
                try:
                    result = benchlib.run_loadlab(nginx.url, flags, f"loadlab {label}")
                finally:
                    stop.set()
                    if scraper:
                        scraper.join()
                runs[label].append(result["cpu_us"])
                extra = ""
                if label == "scraped":
                    extra = f", {len(scrapes)} scrapes of ~{max(scrapes, default=0)} bytes"
                elif label == "remote-write":
                    extra = f", {Receiver.pushes - pushes_before} pushes"
                print(f"round {n + 1} {label:12}: {result['cpu_us']:6.2f} CPU-µs/request, "
                      f"{result['rate']:.0f} req/s, ratio {result['ratio']:.4f}{extra}", flush=True)
        peer = benchlib.wrk(nginx.url, args.seconds)
    finally:
        nginx.stop()
        receiver.shutdown()
    plain = statistics.median(runs["plain"])
    print("\nmedian CPU-µs/request: " + ", ".join(
        f"{label} {statistics.median(cpu):.2f} (x{statistics.median(cpu) / plain:.3f})"
        for label, cpu in runs.items()) + f"; wrk {peer['cpu_us']:.2f} at {peer['rate']:.0f} req/s")
    spread = (max(runs["plain"]) - min(runs["plain"])) / plain
    print(f"round-to-round spread without either flag: {spread:.1%}")


if __name__ == "__main__":
    main()
