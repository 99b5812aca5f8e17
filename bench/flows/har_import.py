#!/usr/bin/env python3
"""HAR import: `loadlab encode -from har` on generated recordings of 25k, 50k and 100k
entries (issue 41: it grew worse than linearly), beside Python's `json.load` of the same
file (one parse, nothing more: the floor any importer pays).

Each recording is a browsing session as a browser saves it: a login whose JSON answer
gives a token that every later API call sends back (`Authorization: Bearer`), item lists
and items by id (ids from earlier answers), a static asset now and then, a cached entry,
redirects, and pauses of 0.1 s to 3 s between requests, with the headers a browser
records. Files are written once into bench/out/har/ and kept.

Each command runs --repeat times (the best time and the highest peak RSS are shown),
measured with wait4 (user + system CPU, peak RSS), pinned to CPU 0; the
goal is 100k entries in under 2 s, with time and memory growing linearly (the ratios
100k/25k printed should be near 4).

Usage: bench/flows/har_import.py [--entries 25000,50000,100000] [--binary LOADLAB] [--no-build]
       [--repeat 3]
Output: a table, and JSON in bench/out/har_import.json. No traffic is sent.
"""

import argparse
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import benchlib  # noqa: E402

DIR = os.path.join(benchlib.ROOT, "bench", "out", "har")
HOST = "http://127.0.0.1:8080"
BROWSER = [
    ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0"),
    ("Accept-Language", "en-GB,en;q=0.9"),
    ("Accept-Encoding", "gzip, deflate, br"),
    ("sec-ch-ua-platform", "\"Linux\""),
    ("Sec-Fetch-Mode", "cors"),
]


def headers(pairs):
    return [{"name": n, "value": v} for n, v in pairs]


def entry(started_ms, method, url, sent, status, answer_type, answer_text, extra_answer=()):
    return {
        "startedDateTime": iso(started_ms),
        "time": 12.5,
        "request": {"method": method, "url": url, "httpVersion": "HTTP/1.1",
                    "headers": headers([("Host", "127.0.0.1:8080"), *BROWSER, *sent]),
                    "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
        "response": {"status": status, "statusText": "", "httpVersion": "HTTP/1.1",
                     "headers": headers([("content-type", answer_type), *extra_answer]),
                     "cookies": [], "content": {"size": len(answer_text), "mimeType": answer_type,
                                                "text": answer_text},
                     "redirectURL": "", "headersSize": -1, "bodySize": len(answer_text)},
        "cache": {}, "timings": {"send": 0.1, "wait": 12, "receive": 0.4},
    }


def iso(ms):
    seconds, millis = divmod(int(ms), 1000)
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    days, hour = divmod(hours, 24)
    return f"2026-11-{1 + days % 28:02d}T{hour:02d}:{minute:02d}:{second:02d}.{millis:03d}Z"


def recording(count, seed=41):
    rng = random.Random(seed)
    now = 0.0
    entries = []
    token = "tok" + "".join(rng.choice("abcdef0123456789") for _ in range(24))
    entries.append(entry(now, "POST", f"{HOST}/login", [("Content-Type", "application/json")], 200,
                         "application/json", json.dumps({"token": token, "user": "ann"})))
    auth = [("Authorization", f"Bearer {token}")]
    ids = []
    while len(entries) < count:
        now += rng.uniform(100, 3000)
        kind = rng.random()
        if kind < 0.3 or not ids:
            page = rng.randrange(1, 50)
            new_ids = [rng.randrange(10**6, 10**7) for _ in range(5)]
            ids = (ids + new_ids)[-50:]
            entries.append(entry(now, "GET", f"{HOST}/api/items?page={page}", auth, 200, "application/json",
                                 json.dumps({"items": [{"id": i, "name": f"item {i}"} for i in new_ids]})))
        elif kind < 0.8:
            item = rng.choice(ids)
            entries.append(entry(now, "GET", f"{HOST}/api/items/{item}", auth, 200, "application/json",
                                 json.dumps({"id": item, "price": rng.randrange(100, 10000)})))
        elif kind < 0.9:
            e = entry(now, "GET", f"{HOST}/static/app-{rng.randrange(100)}.js", [], 200,
                      "application/javascript", "console.log(1)")
            e["_resourceType"] = "script"
            entries.append(e)
        elif kind < 0.95:
            e = entry(now, "GET", f"{HOST}/api/me", auth, 200, "application/json", "{\"me\":1}")
            e["_fromCache"] = "memory"
            entries.append(e)
        else:
            entries.append(entry(now, "GET", f"{HOST}/go/{rng.randrange(1000)}", auth, 302, "text/html", "",
                                 [("location", f"{HOST}/api/items/{rng.choice(ids)}")]))
    return {"log": {"version": "1.2", "creator": {"name": "bench/flows/har_import.py", "version": "1"},
                    "pages": [], "entries": entries}}


def har_file(count):
    path = os.path.join(DIR, f"session-{count}.har")
    if not os.path.exists(path):
        # In a process of its own: a child's peak RSS counts its parent's at the fork,
        # and this one would hold the whole recording.
        subprocess.run([sys.executable, __file__, "--write", path, "--entries", str(count)], check=True)
    return path


def write_har(path, count):
    os.makedirs(DIR, exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(recording(count), f, indent=1)
    os.replace(path + ".tmp", path)


def run(cmd, repeat):
    """The best of `repeat` runs (a shared machine only ever adds time)."""
    runs = [benchlib.measured(cmd, stdout=subprocess.DEVNULL) for _ in range(repeat)]
    return {"cpu_s": min(r[0] for r in runs), "wall_s": min(r[2] for r in runs),
            "rss_mib": max(r[1] for r in runs) / 1024}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", default="25000,50000,100000")
    parser.add_argument("--binary", help="a loadlab binary (default: this tree's release build)")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command; the best is shown")
    parser.add_argument("--write", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        return write_har(args.write, int(args.entries))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(benchlib.ROOT, "target"))
    binary = args.binary or os.path.join(target, "release", "loadlab")
    if not args.binary and not args.no_build:
        print("== building loadlab (release)", flush=True)
        benchlib.sh("cargo", "build", "--release", "--locked", "-q", "-p", "loadlab", cwd=benchlib.ROOT)
    rows = []
    for count in [int(c) for c in args.entries.split(",")]:
        path = har_file(count)
        size_mib = os.path.getsize(path) / 2**20
        loadlab = run([binary, "encode", "-from", "har", "-output", os.devnull, path], args.repeat)
        python = run([sys.executable, "-c", f"import json; json.load(open({path!r}))"], args.repeat)
        rows.append({"entries": count, "file_mib": size_mib, "loadlab": loadlab, "python_json_load": python})
        print(f"{count:>7} entries {size_mib:6.1f} MiB | loadlab encode -from har {loadlab['cpu_s']:6.2f} CPU s "
              f"{loadlab['wall_s']:6.2f} s {loadlab['rss_mib']:7.1f} MiB | python json.load "
              f"{python['cpu_s']:5.2f} CPU s {python['wall_s']:5.2f} s {python['rss_mib']:7.1f} MiB | "
              f"loadlab/python CPU {loadlab['cpu_s'] / max(python['cpu_s'], 1e-9):4.2f}x, wall "
              f"{loadlab['wall_s'] / max(python['wall_s'], 1e-9):4.2f}x", flush=True)
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        scale = last["entries"] / first["entries"]
        print(f"growth {first['entries']} -> {last['entries']} entries (x{scale:g}): CPU "
              f"x{last['loadlab']['cpu_s'] / max(first['loadlab']['cpu_s'], 1e-9):.2f}, peak RSS "
              f"x{last['loadlab']['rss_mib'] / max(first['loadlab']['rss_mib'], 1e-9):.2f} "
              f"(python json.load: CPU x{last['python_json_load']['cpu_s'] / max(first['python_json_load']['cpu_s'], 1e-9):.2f})")
    for row in rows:
        if row["entries"] == 100000:
            met = "met" if row["loadlab"]["wall_s"] < 2.0 else "NOT met"
            print(f"goal 100k entries under 2 s wall: {met} ({row['loadlab']['wall_s']:.2f} s; "
                  f"load average {os.getloadavg()[0]:.1f})")
    out = os.path.join(benchlib.ROOT, "bench", "out", "har_import.json")
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
