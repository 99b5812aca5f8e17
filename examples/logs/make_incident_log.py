#!/usr/bin/env python3
"""Writes incident_001.log.gz: field report 001's incident as an nginx access log.

The report could only approximate its incident ("a random 50-letter query at a
constant 1000 req/s") because vegeta cannot replay traffic. This log has the shape
the access logs would have shown, so `loadlab attack -replay` can send it back:

  0-30 s    normal traffic, about 20 req/s: /, /news (polled once a second),
            /products/N, a few /search
  30-90 s   the /search flood rises from nothing to 1000 req/s (queries of 8
            random letters), the origin slows to ~1.2 s and starts answering 502
  90-110 s  the flood holds at 1000-1200 req/s
  110-120 s it stops; 120-150 s normal traffic again

Lines use nginx's `combined` format plus `$request_time` (the format most sites
log), so the replay can put the original latency beside its own:

  log_format timed '$remote_addr - $remote_user [$time_local] "$request" '
                   '$status $body_bytes_sent "$http_referer" "$http_user_agent" '
                   '$request_time';

nginx writes a line when the request completes, so the lines are in completion
order, a little out of arrival order: the replay puts them back.

Deterministic (seeded): running it again writes the same file.
  python3 examples/logs/make_incident_log.py [OUTPUT]
"""

import gzip
import random
import sys
from datetime import datetime, timedelta, timezone

START = datetime(2026, 11, 24, 10, 0, 0, tzinfo=timezone.utc)
AGENTS = [
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15",
]
FLOOD_AGENT = "python-requests/2.31.0"


def flood_rate(t):
    """The /search flood's requests per second at t seconds."""
    if 30 <= t < 90:
        return 1000 * (t - 30) / 60
    if 90 <= t < 110:
        return 1000 + 200 * (t - 90) / 20
    if 110 <= t < 120:
        return 1200 * (120 - t) / 10
    return 0


def arrivals(rng, rate, second):
    """Poisson arrivals within one second at `rate` per second."""
    times, t = [], float(second)
    while rate > 0:
        t += rng.expovariate(rate)
        if t >= second + 1:
            return times
        times.append(t)
    return times


def normal_request(rng, t):
    pick = rng.random()
    if pick < 0.35:
        return "GET", "/", 200, 5120, 0.012
    if pick < 0.70:
        return "GET", f"/products/{rng.randint(1, 500)}", 200, 8300, 0.025
    if pick < 0.90:
        return "GET", f"/search?q={rng.choice(['shoes', 'coat', 'hat', 'scarf'])}", 200, 15210, 0.090
    return "POST", "/cart", 201, 120, 0.040


def flood_latency(rng, t):
    """The origin under the flood: slower as the flood rises, 502 past its pool."""
    load = flood_rate(t) / 1000
    latency = 0.09 + 1.1 * min(load, 1.0) + rng.uniform(0, 0.2) * load
    status = 502 if load > 0.8 and rng.random() < 0.1 * load else 200
    return status, latency


def lines(rng):
    for second in range(150):
        for t in arrivals(rng, 1, second):
            yield t, "GET", "/news", 200, 2048, 0.030, AGENTS[0]
        for t in arrivals(rng, 19, second):
            method, path, status, size, latency = normal_request(rng, t)
            yield t, method, path, status, size, latency * rng.uniform(0.5, 1.5), rng.choice(AGENTS)
        for t in arrivals(rng, flood_rate(second + 0.5), second):
            query = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8))
            status, latency = flood_latency(rng, t)
            size = 62 * 1024 if status == 200 else 150
            yield t, "GET", f"/search?q={query}", status, size, latency, FLOOD_AGENT


def main():
    output = sys.argv[1] if len(sys.argv) > 1 else "examples/logs/incident_001.log.gz"
    rng = random.Random(1)
    clients = [f"10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}" for _ in range(40)]
    # nginx logs at completion: order by arrival + request time.
    done = sorted(lines(rng), key=lambda line: line[0] + line[5])
    with gzip.GzipFile(output, "wb", mtime=0) as out:
        for t, method, path, status, size, latency, agent in done:
            logged = START + timedelta(seconds=t + latency)
            when = logged.strftime("%d/%b/%Y:%H:%M:%S +0000")
            out.write(
                f'{rng.choice(clients)} - - [{when}] "{method} {path} HTTP/1.1" {status} {size} "-" '
                f'"{agent}" {latency:.3f}\n'.encode()
            )
    print(f"{output}: {len(done)} requests")


if __name__ == "__main__":
    main()
