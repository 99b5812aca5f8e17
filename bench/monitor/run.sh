#!/usr/bin/env bash
# `monitor` benchmark (issue: at a 1 s interval the sampler costs <= 1% of one core with
# 1000 processes and 10k sockets on the host).
#
#   1. starts the load: 1000 sleeping children of one parent, and 5000 loopback TCP
#      connections (10k sockets) held open by another process (bench/monitor/load.py);
#   2. runs `loadlab monitor -interval 1s` for SECONDS (default 60) four ways: `host`
#      alone; `host` and the process group that holds the 10k sockets (the issue's
#      setting: a server under test among 1000 processes); then, as stress figures, also
#      the 1001-process group, and also a /metrics scrape of a local endpoint;
#   3. prints each run's CPU (user + system, from the kernel's accounting of the child)
#      as a percentage of one core, start-up included.
#
# Usage: bench/monitor/run.sh [SECONDS]
set -euo pipefail

SECONDS_PER_RUN=${1:-60}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$ROOT/bench/out/monitor
mkdir -p "$OUT"

echo "== building (release)"
(cd "$ROOT" && cargo build --release -q -p loadlab)
LOADLAB=$ROOT/target/release/loadlab

start_load() { # kind count -> sets LOAD_PID; the load lives while fd 3x stays open
    local fifo=$OUT/$1.in
    rm -f "$fifo" && mkfifo "$fifo"
    python3 "$ROOT/bench/monitor/load.py" "$1" "$2" <"$fifo" >"$OUT/$1.out" &
    exec {HOLD}>"$fifo"
    HOLDS+=("$HOLD")
    until grep -q READY "$OUT/$1.out" 2>/dev/null; do sleep 0.2; done
    LOAD_PID=$(head -n 1 "$OUT/$1.out")
}
HOLDS=()
cleanup() { for fd in "${HOLDS[@]}"; do exec {fd}>&-; done; kill "${SERVER_PID:-}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT

echo "== load: 1000 sleeping processes, 10000 sockets"
start_load sleepers 1000
SLEEPERS=$LOAD_PID
start_load sockets 10000
SOCKETS=$LOAD_PID
echo "   processes on the host: $(ls -d /proc/[0-9]* | wc -l); TCP: $(head -2 /proc/net/sockstat | tail -1)"

# A /metrics endpoint: loadlab's own simulator serves one.
SIM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$LOADLAB" simulate -addr "127.0.0.1:$SIM_PORT" -threads 1 >/dev/null 2>&1 &
SERVER_PID=$!
sleep 1

# CPU seconds (user + system) of one command, then its share of one core.
measure() { # name args...
    local name=$1
    shift
    python3 - "$SECONDS_PER_RUN" "$OUT/$name.mon" "$@" <<'PY'
import resource, subprocess, sys, time
seconds, output, args = sys.argv[1], sys.argv[2], sys.argv[3:]
start = time.monotonic()
subprocess.run(args + ["-interval", "1s", "-duration", seconds + "s", "-output", output],
               check=True, stderr=subprocess.DEVNULL)
wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = usage.ru_utime + usage.ru_stime
print("%.3f %.1f %.3f" % (cpu, wall, cpu / wall * 100))
PY
}

printf '\n%-44s %10s %8s %14s\n' "samplers (1 s interval)" "cpu (s)" "wall (s)" "% of one core"
report() { read -r CPU WALL PCT; printf '%-44s %10s %8s %13s%%\n' "$1" "$CPU" "$WALL" "$PCT"; }
measure host "$LOADLAB" monitor host | report "host"
measure server "$LOADLAB" monitor host "pid=$SOCKETS" | report "host + server group (10k sockets)"
measure groups "$LOADLAB" monitor host "pid=$SOCKETS" "pid=$SLEEPERS" | report "... + a 1001-process group (stress)"
measure all "$LOADLAB" monitor host "pid=$SOCKETS" "pid=$SLEEPERS" "prom=http://127.0.0.1:$SIM_PORT/metrics" | report "... + /metrics scrape (stress)"
echo
echo "goal: <= 1% of one core for host + server group (issue: monitor). Sample files: $OUT/*.mon"
"$LOADLAB" report "$OUT/server.mon" | grep -E "Process|Samples|TCP" || true
