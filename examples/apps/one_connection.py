"""An app whose PostgreSQL pool holds one connection: the database stand-in of
loadlab's diagnosis (docs/DIAGNOSIS.md), like field report 000's app, whose one
database connection capped it at ~1k transactions/s.

Each GET /item/N reads item N in one transaction that spends QUERY_MS (default 4) in the
database (`pg_sleep`, standing in for a slow query), on a connection taken from a
psycopg pool of POOL_SIZE (default 1) connections. However many threads gunicorn runs,
one transaction at a time reaches the database: past ~1000/(QUERY_MS + ~0.5) requests
a second they queue for the pool, while the host's CPU and the server's
max_connections stay far from their limits. GET /health answers without the database.

    DATABASE_URL=postgres://... gunicorn -k gthread --threads 16 -w 1 \
        -b 127.0.0.1:18090 --chdir examples/apps one_connection:app
"""

import json
import os

from psycopg_pool import ConnectionPool

ITEMS = 1000
QUERY_SECONDS = float(os.environ.get("QUERY_MS", "4")) / 1000.0
POOL = ConnectionPool(
    os.environ["DATABASE_URL"],
    min_size=int(os.environ.get("POOL_SIZE", "1")),
    max_size=int(os.environ.get("POOL_SIZE", "1")),
    timeout=30.0,
    open=True,
)

with POOL.connection() as setup:
    setup.execute(
        "CREATE TABLE IF NOT EXISTS loadlab_items (id int PRIMARY KEY, name text NOT NULL)"
    )
    setup.execute(
        "INSERT INTO loadlab_items SELECT i, 'item ' || i FROM generate_series(0, %s) AS i "
        "ON CONFLICT DO NOTHING",
        (ITEMS - 1,),
    )


def app(environ, start_response):
    path = environ.get("PATH_INFO", "/")
    if path == "/health":
        return answer(start_response, "200 OK", {"ok": True})
    try:
        item = int(path.rsplit("/", 1)[-1]) % ITEMS
    except ValueError:
        return answer(start_response, "404 Not Found", {"error": "no such item"})
    with POOL.connection() as conn:
        row = conn.execute(
            "SELECT id, name, pg_sleep(%s) IS NULL FROM loadlab_items WHERE id = %s",
            (QUERY_SECONDS, item),
        ).fetchone()
    return answer(start_response, "200 OK", {"id": row[0], "name": row[1]})


def answer(start_response, status, document):
    body = json.dumps(document).encode()
    start_response(
        status,
        [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
    )
    return [body]
