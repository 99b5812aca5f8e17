#!/usr/bin/env bash
# Field report 000's resource charts from one loadlab run: nginx (proxy) -> a small
# Python API (bench/monitor/stack_app.py) -> PostgreSQL, all on loopback. The attack
# steps up the rate (Tank-style steps) with the monitor attached to nginx, the app,
# PostgreSQL's processes and its pg_stat_database; then `report` and `plot` show CPU
# per process, RAM, TCP connections and DB transactions/s on the latency's time axis.
#
#   bench/monitor/stack.sh [SCHEDULE]     default "50,100,200,400,800@10s"
#
# Outputs in bench/out/monitor/stack/: run.llr, report.txt, stack.html, stack.png.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$ROOT/bench/out/monitor/stack
SCHEDULE=${1:-"50,100,200,400,800@10s"}
mkdir -p "$OUT"

command -v nginx >/dev/null || { apt-get update -qq && apt-get install -y -qq nginx-light >/dev/null; }
# shellcheck source=/dev/null
source "$ROOT/.ci/setup/postgres.sh"
# shellcheck source=/dev/null
command -v chromium >/dev/null || source "$ROOT/.ci/setup/chromium.sh"
VENV=$ROOT/bench/out/venv
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import psycopg" 2>/dev/null || "$VENV/bin/pip" install -q "psycopg[binary]"
(cd "$ROOT" && cargo build --release -q -p loadlab)
LOADLAB=$ROOT/target/release/loadlab

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
APP_PORT=$(free_port)
NGINX_PORT=$(free_port)

"$VENV/bin/python" "$ROOT/bench/monitor/stack_app.py" "$APP_PORT" "$LOADLAB_TEST_POSTGRES_URL" &
APP_PID=$!
NGINX_DIR=$(mktemp -d)
cat >"$NGINX_DIR/nginx.conf" <<CONF
worker_processes 1;
daemon on;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  upstream app { server 127.0.0.1:$APP_PORT; keepalive 64; }
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
CONF
nginx -c "$NGINX_DIR/nginx.conf" -p "$NGINX_DIR"
cleanup() {
    nginx -c "$NGINX_DIR/nginx.conf" -p "$NGINX_DIR" -s stop 2>/dev/null || true
    kill "$APP_PID" 2>/dev/null || true
    rm -rf "$NGINX_DIR"
}
trap cleanup EXIT
for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$NGINX_PORT/account/1" >/dev/null && break
    sleep 0.1
done

echo "== attack: $SCHEDULE against nginx -> app -> postgres, monitored"
echo "GET http://127.0.0.1:$NGINX_PORT/account/{{rand.int 0 999}}" |
    "$LOADLAB" attack -schedule="$SCHEDULE" -timeout=5s -seed=1 \
        -monitor host -monitor process=nginx -monitor 'app:process=.*stack_app\.py' \
        -monitor process=postgres -monitor "db:postgres=$LOADLAB_TEST_POSTGRES_URL" \
        -output="$OUT/run.llr"
"$LOADLAB" report "$OUT/run.llr" | tee "$OUT/report.txt"
"$LOADLAB" report -every=10s "$OUT/run.llr" >"$OUT/every.txt"
"$LOADLAB" plot -title="nginx -> app -> postgres: $SCHEDULE" "$OUT/run.llr" >"$OUT/stack.html"
chromium --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
    --user-data-dir="$(mktemp -d)" --window-size=1280,4000 \
    --screenshot="$OUT/stack.png" "file://$OUT/stack.html" >/dev/null 2>&1
echo "== $OUT/stack.html, $OUT/stack.png"
