#!/usr/bin/env python3
"""The app of bench/monitor/stack.py: a small threaded HTTP API in front of PostgreSQL,
like the Go/Ruby APIs of field report 000. Each GET /account/N runs one transaction
(read a balance, bump it) on the thread's own connection, so transactions/s follow the
load until the app saturates.

    stack_app.py PORT POSTGRES_URL
"""

import http.server
import json
import sys
import threading

import psycopg

LOCAL = threading.local()
ACCOUNTS = 1000


def connection(url):
    if getattr(LOCAL, "conn", None) is None:
        LOCAL.conn = psycopg.connect(url, autocommit=False)
    return LOCAL.conn


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body leave in two writes: without this, Nagle and delayed ACKs add 40 ms.
    disable_nagle_algorithm = True

    def do_GET(self):  # noqa: N802 (the stdlib's spelling)
        try:
            account = int(self.path.rsplit("/", 1)[-1]) % ACCOUNTS
        except ValueError:
            account = 0
        conn = connection(self.server.postgres_url)
        with conn.transaction():
            balance = conn.execute("SELECT balance FROM accounts WHERE id = %s", (account,)).fetchone()[0]
            conn.execute("UPDATE accounts SET balance = balance + 1 WHERE id = %s", (account,))
        body = json.dumps({"account": account, "balance": balance + 1}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    port, url = int(sys.argv[1]), sys.argv[2]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS accounts (id int PRIMARY KEY, balance bigint NOT NULL)")
        conn.execute("INSERT INTO accounts SELECT g, 0 FROM generate_series(0, %s) g ON CONFLICT DO NOTHING",
                     (ACCOUNTS - 1,))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.postgres_url = url
    server.daemon_threads = True
    print(f"stack app on 127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
