#!/usr/bin/env python3
"""Record app_login.har: a browser-like session against loadlab's simulator.

Starts `loadlab simulate examples/recipes/app_login.json` on a free loopback port,
does what a browser would when a user logs in, looks at the item list, opens an item
and then their profile, and writes every exchange as HAR 1.2 (the format of DevTools'
"Save all as HAR"):

  1. POST /login?user=ann, a form (user, password)   -> a token in JSON, Set-Cookie session
  2. the page's assets: /static/app.css, /static/app.js, /favicon.ico (406s: the recipe
     has no route for them, which is fine: the import leaves them out by extension)
  3. a pause, GET /items (Cookie: session)            -> a list of 20 items
  4. a pause, GET /items/4 (Cookie: session)          -> item 4 (the list's 4th)
  5. a pause, GET /me?q=shoes (Authorization: Bearer TOKEN, Cookie) -> a profile

Requests carry a browser's headers (User-Agent, Accept-Language, Sec-Fetch-*, ...)
so the import's header rules have something to drop. Cookies are kept the way a
browser keeps them (by name, from Set-Cookie, sent back on every later request).

Standard library only. From the repository's root:

  cargo build -p loadlab
  python3 examples/har/record_har.py                  # writes examples/har/app_login.har
  UPDATE_GOLDEN=1 cargo test -p loadlab-workload har  # rewrites examples/har/app_login.toml

Options: --loadlab PATH (default target/debug/loadlab), --out FILE.
"""

import argparse
import datetime
import http.client
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RECIPE = os.path.join(ROOT, "examples", "recipes", "app_login.json")

BROWSER_HEADERS = [
    ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"),
    ("Accept-Language", "en-GB,en;q=0.9"),
    ("Accept-Encoding", "gzip, deflate, br"),
    ("sec-ch-ua", '"Chromium";v="124", "Not-A.Brand";v="99"'),
    ("sec-ch-ua-mobile", "?0"),
    ("sec-ch-ua-platform", '"Linux"'),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, simulator):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if simulator.poll() is not None:
            sys.exit(f"the simulator exited ({simulator.returncode})")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/_admin/status")
            if conn.getresponse().read() == b"ok!":
                return
        except OSError:
            time.sleep(0.05)
    sys.exit("the simulator did not answer /_admin/status within 20 s")


def iso_now():
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


class Browser:
    """Sends requests as a browser tab would and keeps them as HAR entries."""

    def __init__(self, port):
        self.origin = f"http://127.0.0.1:{port}"
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        self.cookies = {}
        self.entries = []

    def send(self, method, target, headers, body=None, resource_type="fetch"):
        url = self.origin + target
        sent = [("Host", self.origin.split("//")[1])] + BROWSER_HEADERS + headers
        if self.cookies:
            sent.append(("Cookie", "; ".join(f"{k}={v}" for k, v in self.cookies.items())))
        data = body.encode() if body is not None else None
        if data is not None:
            sent.append(("Content-Length", str(len(data))))
        started = iso_now()
        clock = time.monotonic()
        self.conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in sent:
            self.conn.putheader(name, value)
        self.conn.endheaders(data)
        response = self.conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        elapsed_ms = round((time.monotonic() - clock) * 1000, 3)
        received = response.getheaders()
        for name, value in received:
            if name.lower() == "set-cookie":
                cookie, _, _ = value.partition(";")
                key, _, val = cookie.partition("=")
                self.cookies[key.strip()] = val.strip()
        self.entries.append(entry(method, url, sent, body, started, elapsed_ms, response, received, text, resource_type))
        return text


def entry(method, url, sent, body, started, elapsed_ms, response, received, text, resource_type):
    mime = next((v for k, v in received if k.lower() == "content-type"), "")
    query = urllib.parse.urlsplit(url).query
    request = {
        "method": method,
        "url": url,
        "httpVersion": "HTTP/1.1",
        "headers": [{"name": k, "value": v} for k, v in sent],
        "queryString": [{"name": k, "value": v} for k, v in urllib.parse.parse_qsl(query)],
        "cookies": [
            {"name": k.strip(), "value": v.strip()}
            for pair in next((v for k, v in sent if k == "Cookie"), "").split(";")
            if "=" in pair
            for k, v in [pair.split("=", 1)]
        ],
        "headersSize": -1,
        "bodySize": len(body.encode()) if body is not None else 0,
    }
    if body is not None:
        content_type = next(v for k, v in sent if k == "Content-Type")
        request["postData"] = {"mimeType": content_type, "text": body}
    return {
        "startedDateTime": started,
        "time": elapsed_ms,
        "request": request,
        "response": {
            "status": response.status,
            "statusText": response.reason,
            "httpVersion": "HTTP/1.1",
            "headers": [{"name": k, "value": v} for k, v in received],
            "cookies": [],
            "content": {"size": len(text.encode()), "mimeType": mime, "text": text},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": len(text.encode()),
        },
        "cache": {},
        "timings": {"send": 0, "wait": elapsed_ms, "receive": 0},
        "_resourceType": resource_type,
    }


def session(browser):
    """The user's session; pauses are the user reading the page."""
    fetch = [("Accept", "application/json"), ("Origin", browser.origin), ("Referer", browser.origin + "/"),
             ("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Dest", "empty")]
    login = browser.send("POST", "/login?user=ann",
                         fetch + [("Content-Type", "application/x-www-form-urlencoded")],
                         body="user=ann&password=secret")
    token = json.loads(login)["token"]
    for path, kind, accept in [("/static/app.css", "stylesheet", "text/css,*/*;q=0.1"),
                               ("/static/app.js", "script", "*/*"),
                               ("/favicon.ico", "image", "image/avif,image/webp,*/*")]:
        browser.send("GET", path, [("Accept", accept), ("Referer", browser.origin + "/")], resource_type=kind)
    time.sleep(1.2)
    items = json.loads(browser.send("GET", "/items", fetch))
    time.sleep(2.0)
    fourth = items["items"][3]["id"]
    browser.send("GET", f"/items/{fourth}", fetch)
    time.sleep(0.8)
    browser.send("GET", "/me?q=shoes", fetch + [("Authorization", f"Bearer {token}")])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loadlab", default=os.path.join(ROOT, "target", "debug", "loadlab"))
    parser.add_argument("--out", default=os.path.join(ROOT, "examples", "har", "app_login.har"))
    args = parser.parse_args()
    port = free_port()
    simulator = subprocess.Popen([args.loadlab, "simulate", RECIPE, "-addr", f"127.0.0.1:{port}"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, simulator)
        browser = Browser(port)
        session(browser)
    finally:
        simulator.terminate()
        simulator.wait(timeout=10)
    har = {"log": {"version": "1.2",
                   "creator": {"name": "examples/har/record_har.py", "version": "1"},
                   "pages": [],
                   "entries": browser.entries}}
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(har, out, indent=2)
        out.write("\n")
    print(f"wrote {args.out}: {len(browser.entries)} entries", file=sys.stderr)


if __name__ == "__main__":
    main()
