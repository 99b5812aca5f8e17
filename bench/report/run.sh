#!/usr/bin/env bash
# `report` benchmark (DESIGN.md section 8: `report` over 10M records <= 1 s; vegeta ~12 s).
#
#   1. writes a realistic record file (crates/report/examples/synth_records.rs: one open
#      attack at 20k req/s, three targets, 503s, timeouts, a slow tail, zstd blocks);
#   2. times `loadlab report` (text) on it with hyperfine, on both cores and on one;
#   3. converts the same records for vegeta (`loadlab encode -to json | vegeta encode
#      -to gob`) and times `vegeta report` on that in the same run, then prints ratios.
#
# vegeta comes from bench/lib/vegeta.sh (PATH, or built from the Go module proxy).
#
# Usage: bench/report/run.sh [RECORDS]   (default 10000000)
#   BASELINE=/path/to/older/loadlab bench/report/run.sh   also times that build on the same
#   file in the same run (for a refactor: "the same figures within noise").
set -euo pipefail

RECORDS=${1:-10000000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$ROOT/bench/out/report
mkdir -p "$OUT"

need() { command -v "$1" >/dev/null 2>&1; }
if ! need hyperfine; then
    apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null
fi

echo "== building (release)"
# Two commands: a target filter (--example) limits a build to the targets it names.
(cd "$ROOT" && cargo build --release -q -p loadlab && cargo build --release -q -p loadlab-report --example synth_records)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
LOADLAB=$TARGET/release/loadlab
SYNTH=$TARGET/release/examples/synth_records

RUN=$OUT/run-$RECORDS.llr
if [ ! -s "$RUN" ] || [ "$SYNTH" -nt "$RUN" ]; then
    echo "== writing $RECORDS records"
    "$SYNTH" "$RUN" "$RECORDS" 20000
fi

echo "== vegeta (peer)"
VEGETA=$("$ROOT/bench/lib/vegeta.sh" || true)
[ -n "$VEGETA" ] || echo "   (vegeta unavailable; peer skipped)"

GOB=$OUT/run-$RECORDS.gob
if [ -n "$VEGETA" ] && { [ ! -s "$GOB" ] || [ "$RUN" -nt "$GOB" ]; }; then
    echo "== converting the same records for vegeta (loadlab encode -to json | vegeta encode -to gob)"
    "$LOADLAB" encode -to json "$RUN" | "$VEGETA" encode -to gob >"$GOB"
fi

# Mean and min seconds from a hyperfine export.
stats() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.3f %.3f" % (r["mean"], r["min"]))' "$1"; }
peak_rss_mb() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.0f", $1/1024}'; }

echo "== timing"
hyperfine -N --warmup 2 --runs 10 --export-json "$OUT/loadlab.json" "$LOADLAB report $RUN" >/dev/null
hyperfine -N --warmup 1 --runs 5 --export-json "$OUT/loadlab-1core.json" "taskset -c 0 $LOADLAB report $RUN" >/dev/null
hyperfine -N --warmup 1 --runs 3 --export-json "$OUT/loadlab-every.json" "$LOADLAB report -every 1s $RUN" >/dev/null
read -r L_MEAN L_MIN < <(stats "$OUT/loadlab.json")
read -r L1_MEAN L1_MIN < <(stats "$OUT/loadlab-1core.json")
read -r LE_MEAN LE_MIN < <(stats "$OUT/loadlab-every.json")
L_RSS=$(peak_rss_mb "$LOADLAB" report "$RUN")
if [ -n "$VEGETA" ]; then
    hyperfine -N --warmup 1 --runs 3 --export-json "$OUT/vegeta.json" "$VEGETA report $GOB" >/dev/null
    read -r V_MEAN V_MIN < <(stats "$OUT/vegeta.json")
    V_RSS=$(peak_rss_mb "$VEGETA" report "$GOB")
fi

if [ -n "${BASELINE:-}" ]; then
    hyperfine -N --warmup 2 --runs 10 --export-json "$OUT/baseline.json" "$BASELINE report $RUN" >/dev/null
    read -r B_MEAN B_MIN < <(stats "$OUT/baseline.json")
fi

SIZE=$(stat -c %s "$RUN")
echo
echo "report over $RECORDS records ($(awk -v s="$SIZE" -v n="$RECORDS" 'BEGIN{printf "%.0f MB record file, %.2f bytes/record", s/1e6, s/n}'))"
printf '  %-34s %7.3f s mean, %.3f s min, peak RSS %s MB\n' "loadlab report (text, 2 cores)" "$L_MEAN" "$L_MIN" "$L_RSS"
printf '  %-34s %7.3f s mean, %.3f s min\n' "loadlab report (text, 1 core)" "$L1_MEAN" "$L1_MIN"
printf '  %-34s %7.3f s mean, %.3f s min\n' "loadlab report -every 1s" "$LE_MEAN" "$LE_MIN"
if [ -n "$VEGETA" ]; then
    printf '  %-34s %7.3f s mean, %.3f s min, peak RSS %s MB\n' "vegeta report (gob, same records)" "$V_MEAN" "$V_MIN" "$V_RSS"
    awk -v v="$V_MEAN" -v l="$L_MEAN" -v o="$L1_MEAN" 'BEGIN{printf "  vegeta / loadlab: %.1fx (2 cores), %.1fx (1 core)\n", v/l, v/o}'
else
    echo "  vegeta: not installed, no peer figure"
fi
if [ -n "${BASELINE:-}" ]; then
    printf '  %-34s %7.3f s mean, %.3f s min\n' "baseline report (text, 2 cores)" "$B_MEAN" "$B_MIN"
    awk -v b="$B_MEAN" -v l="$L_MEAN" 'BEGIN{printf "  this build / baseline: %.3fx\n", l/b}'
fi
awk -v l="$L_MEAN" 'BEGIN{ if (l <= 1.0) print "  goal (<= 1 s): met"; else print "  goal (<= 1 s): MISSED" }'
