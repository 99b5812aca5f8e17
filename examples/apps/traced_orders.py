"""An orders app traced with OpenTelemetry's own Python SDK: the planted slow span of
loadlab's trace test (docs/TRACES.md, crates/cli/tests/traces.rs).

Each GET /orders/N reads order N (`SELECT`, fast whatever the load), then reserves stock
on one hot row in the same transaction (`UPDATE loadlab_stock ... WHERE sku = 1`) and
holds it HOLD_MS (default 3) before committing. The row lock serialises the requests:
alone, the `UPDATE` takes well under a millisecond; past ~1000/HOLD_MS requests a
second each one waits for every transaction queued before it, so the `UPDATE` span is
where slow requests' time goes. GET /health answers without the database.

Flask's and psycopg's OpenTelemetry instrumentations make the spans: the server span
continues the caller's W3C `traceparent` (loadlab's `-trace`), and each statement is a
client span named by its first word. Spans go by OTLP/HTTP to
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (default http://127.0.0.1:4318/v1/traces, Jaeger's)
under the service name OTEL_SERVICE_NAME (default traced-orders), in batches every
EXPORT_MS (default 500).

    DATABASE_URL=postgres://... gunicorn -k gthread --threads 32 -w 1 \
        -b 127.0.0.1:18091 --chdir examples/apps traced_orders:app

It needs the venv of .ci/setup/traced-app.sh.
"""

import os
import time

from flask import Flask, jsonify
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.flask import FlaskInstrumentor
from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from psycopg_pool import ConnectionPool

ORDERS = 1000
HOLD_SECONDS = float(os.environ.get("HOLD_MS", "3")) / 1000.0

provider = TracerProvider(
    resource=Resource.create(
        {"service.name": os.environ.get("OTEL_SERVICE_NAME", "traced-orders")}
    )
)
provider.add_span_processor(
    BatchSpanProcessor(
        OTLPSpanExporter(
            endpoint=os.environ.get(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces"
            )
        ),
        schedule_delay_millis=int(os.environ.get("EXPORT_MS", "500")),
        max_queue_size=65536,
    )
)
trace.set_tracer_provider(provider)
# Before the pool opens its connections, so that they are traced.
PsycopgInstrumentor().instrument()

POOL = ConnectionPool(
    os.environ["DATABASE_URL"],
    min_size=8,
    max_size=int(os.environ.get("POOL_SIZE", "32")),
    timeout=30.0,
    open=True,
)

with POOL.connection() as setup:
    setup.execute(
        "CREATE TABLE IF NOT EXISTS loadlab_orders (id int PRIMARY KEY, item text NOT NULL)"
    )
    setup.execute(
        "INSERT INTO loadlab_orders SELECT i, 'item ' || i FROM generate_series(0, %s) AS i "
        "ON CONFLICT DO NOTHING",
        (ORDERS - 1,),
    )
    setup.execute(
        "CREATE TABLE IF NOT EXISTS loadlab_stock (sku int PRIMARY KEY, reserved bigint NOT NULL)"
    )
    setup.execute("INSERT INTO loadlab_stock VALUES (1, 0) ON CONFLICT DO NOTHING")

app = Flask(__name__)
FlaskInstrumentor().instrument_app(app, excluded_urls="health")


@app.get("/health")
def health():
    return jsonify(ok=True)


@app.get("/orders/<int:order_id>")
def order(order_id):
    with POOL.connection() as conn:
        row = conn.execute(
            "SELECT id, item FROM loadlab_orders WHERE id = %s", (order_id % ORDERS,)
        ).fetchone()
        # The hot row: every request's transaction holds its lock until commit.
        conn.execute("UPDATE loadlab_stock SET reserved = reserved + 1 WHERE sku = 1")
        # The app's own work while the lock is held, until the commit at the block's end.
        time.sleep(HOLD_SECONDS)
    return jsonify(id=row[0], item=row[1])
