#!/usr/bin/env bash
# `plot` benchmark (issue: a 10M-record run gives a page <= 5 MB that opens in < 2 s).
#
#   1. writes a realistic record file (crates/report/examples/synth_records.rs: one open
#      attack at 20k req/s, three targets, 503s, 30 s timeouts, a slow tail);
#   2. times `loadlab plot` on it (and its peak RSS: memory must not grow with records);
#   3. checks the page size, and how long headless Chromium takes to load and render it:
#      the wall time of a screenshot of the page minus that of an empty page (browser
#      start-up), and the page script's own "ready" time (navigation start to charts
#      drawn and wired);
#   4. times it again with a monitor file beside the run (crates/plot/examples/
#      synth_samples.rs: host with 16 cores, three process groups, PostgreSQL and 300
#      Prometheus series, one reading a second over the run): the resource charts' cost;
#   5. does the same for `vegeta plot` on the same records, when vegeta is available
#      (bench/lib/vegeta.sh), converted with `loadlab encode -to json | vegeta encode`.
#      vegeta's plot replays results in `seq` order and rejects a timestamp earlier than
#      the one before it, which send-lag jitter makes common (a request that left 1 ms
#      late is followed by one that left on time); the conversion therefore renumbers
#      `seq` in send-time order (timestamps and latencies unchanged).
#
# The machine is shared: run it when it is quiet, and read the figures as +-20%.
#
# Usage: bench/plot/run.sh [RECORDS]   (default 10000000)
#   BASELINE=/path/to/older/loadlab bench/plot/run.sh   also times that build's `plot` on
#   the same files in the same run (for a refactor: "no more than before").
set -euo pipefail

RECORDS=${1:-10000000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$ROOT/bench/out/plot
mkdir -p "$OUT"

need() { command -v "$1" >/dev/null 2>&1; }
if ! need hyperfine; then
    apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null
fi
if ! need chromium; then
    # shellcheck source=/dev/null
    source "$ROOT/.ci/setup/chromium.sh"
fi

echo "== building (release)"
(cd "$ROOT" && cargo build --release -q -p loadlab && cargo build --release -q -p loadlab-report --example synth_records &&
    cargo build --release -q -p loadlab-plot --example synth_samples)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
LOADLAB=$TARGET/release/loadlab
SYNTH=$TARGET/release/examples/synth_records
SYNTH_SAMPLES=$TARGET/release/examples/synth_samples

RUN=$OUT/run-$RECORDS.llr
if [ ! -s "$RUN" ] || [ "$SYNTH" -nt "$RUN" ]; then
    echo "== writing $RECORDS records"
    "$SYNTH" "$RUN" "$RECORDS" 20000
fi

# Mean and min seconds from a hyperfine export.
stats() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.3f %.3f" % (r["mean"], r["min"]))' "$1"; }
peak_rss_mb() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.0f", $1/1024}'; }
size_mb() { stat -c %s "$1" | awk '{printf "%.2f", $1/1e6}'; }

CHROMIUM_FLAGS=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --hide-scrollbars --window-size=1280,2400)
# Seconds for headless Chromium to open URL and screenshot it, median of 5, each with a
# fresh profile.
browser_seconds() {
    local url=$1 times=() profile
    for _ in 1 2 3 4 5; do
        profile=$(mktemp -d)
        local start end
        start=$(date +%s.%N)
        chromium "${CHROMIUM_FLAGS[@]}" --user-data-dir="$profile" \
            --screenshot="$OUT/screenshot.png" "$url" >/dev/null 2>&1
        end=$(date +%s.%N)
        rm -rf "$profile"
        times+=("$(awk -v s="$start" -v e="$end" 'BEGIN{printf "%.3f", e-s}')")
    done
    printf '%s\n' "${times[@]}" | sort -n | sed -n 3p
}
# The page's own ready time in ms (our script sets data-plot-ready-ms), median of 5.
ready_ms() {
    local url=$1 values=() profile
    for _ in 1 2 3 4 5; do
        profile=$(mktemp -d)
        values+=("$(chromium "${CHROMIUM_FLAGS[@]}" --user-data-dir="$profile" --dump-dom "$url" 2>/dev/null |
            grep -o 'data-plot-ready-ms="[0-9]*"' | grep -o '[0-9]*' || echo 0)")
        rm -rf "$profile"
    done
    printf '%s\n' "${values[@]}" | sort -n | sed -n 3p
}

echo "== timing loadlab plot"
PAGE=$OUT/run-$RECORDS.html
hyperfine -N --warmup 1 --runs 5 --export-json "$OUT/loadlab.json" \
    --command-name "loadlab plot" "$LOADLAB plot -output $PAGE $RUN" >/dev/null
read -r L_MEAN L_MIN < <(stats "$OUT/loadlab.json")
L_RSS=$(peak_rss_mb "$LOADLAB" plot -output "$PAGE" "$RUN")
L_SIZE=$(size_mb "$PAGE")
"$LOADLAB" plot -format png -output "$OUT/png/" "$RUN" >/dev/null

echo "== timing loadlab plot with a monitor file beside the run"
MON=$OUT/samples.mon
"$SYNTH_SAMPLES" "$MON" "$(awk -v r="$RECORDS" 'BEGIN{printf "%d", r/20000 + 30}')" 300 2>/dev/null
S_PAGE=$OUT/run-$RECORDS-samples.html
hyperfine -N --warmup 1 --runs 5 --export-json "$OUT/loadlab-samples.json" \
    --command-name "loadlab plot + samples" "$LOADLAB plot -output $S_PAGE $RUN $MON" >/dev/null
read -r S_MEAN S_MIN < <(stats "$OUT/loadlab-samples.json")
S_RSS=$(peak_rss_mb "$LOADLAB" plot -output "$S_PAGE" "$RUN" "$MON")
S_SIZE=$(size_mb "$S_PAGE")

if [ -n "${BASELINE:-}" ]; then
    echo "== timing the baseline's plot (same files)"
    hyperfine -N --warmup 1 --runs 5 --export-json "$OUT/baseline.json" \
        --command-name "baseline plot" "$BASELINE plot -output $OUT/baseline.html $RUN" >/dev/null
    read -r B_MEAN B_MIN < <(stats "$OUT/baseline.json")
    B_RSS=$(peak_rss_mb "$BASELINE" plot -output "$OUT/baseline.html" "$RUN")
    hyperfine -N --warmup 1 --runs 5 --export-json "$OUT/baseline-samples.json" \
        --command-name "baseline plot + samples" "$BASELINE plot -output $OUT/baseline-samples.html $RUN $MON" >/dev/null
    read -r BS_MEAN BS_MIN < <(stats "$OUT/baseline-samples.json")
fi

echo "== loading pages in headless chromium"
BLANK=$OUT/blank.html
printf '<!DOCTYPE html><title>blank</title><p>blank</p>\n' >"$BLANK"
B_S=$(browser_seconds "file://$BLANK")
L_S=$(browser_seconds "file://$PAGE")
L_READY=$(ready_ms "file://$PAGE")
cp "$OUT/screenshot.png" "$OUT/loadlab-page.png"

echo "== vegeta (peer)"
VEGETA=$("$ROOT/bench/lib/vegeta.sh" || true)
if [ -n "$VEGETA" ]; then
    GOB=$OUT/run-$RECORDS.gob
    if [ ! -s "$GOB" ] || [ "$RUN" -nt "$GOB" ]; then
        echo "   converting the records for vegeta (encode -to json, seq renumbered, vegeta encode -to gob)"
        "$LOADLAB" encode -to json "$RUN" |
            perl -pe 's/"seq":\d+/"\"seq\":" . ($. - 1)/e' |
            "$VEGETA" encode -to gob >"$GOB"
    fi
    V_PAGE=$OUT/vegeta-$RECORDS.html
    if ! "$VEGETA" plot -output "$V_PAGE" "$GOB" 2>"$OUT/vegeta.err"; then
        echo "   vegeta plot failed: $(cat "$OUT/vegeta.err")"
        VEGETA=
    fi
fi
if [ -n "$VEGETA" ]; then
    hyperfine -N --warmup 0 --runs 2 --export-json "$OUT/vegeta.json" \
        --command-name "vegeta plot" "$VEGETA plot -output $V_PAGE $GOB" >/dev/null
    read -r V_MEAN V_MIN < <(stats "$OUT/vegeta.json")
    V_RSS=$(peak_rss_mb "$VEGETA" plot -output "$V_PAGE" "$GOB")
    V_SIZE=$(size_mb "$V_PAGE")
    V_S=$(browser_seconds "file://$V_PAGE")
    cp "$OUT/screenshot.png" "$OUT/vegeta-page.png"
else
    echo "   (vegeta unavailable; peer skipped)"
fi

SIZE=$(stat -c %s "$RUN")
echo
echo "plot over $RECORDS records ($(awk -v s="$SIZE" 'BEGIN{printf "%.0f MB record file", s/1e6}'))"
printf '  %-22s %7.3f s mean, %.3f s min, peak RSS %s MB, page %s MB\n' \
    "loadlab plot" "$L_MEAN" "$L_MIN" "$L_RSS" "$L_SIZE"
awk -v p="$L_S" -v b="$B_S" -v r="$L_READY" 'BEGIN{printf "  %-22s %7.3f s to load and render (%.3f s screenshot - %.3f s empty page); script ready at %d ms\n", "loadlab page", p-b, p, b, r}'
printf '  %-22s %7.3f s mean, %.3f s min, peak RSS %s MB, page %s MB\n' \
    "loadlab plot + samples" "$S_MEAN" "$S_MIN" "$S_RSS" "$S_SIZE"
if [ -n "${BASELINE:-}" ]; then
    printf '  %-22s %7.3f s mean, %.3f s min, peak RSS %s MB\n' "baseline plot" "$B_MEAN" "$B_MIN" "$B_RSS"
    printf '  %-22s %7.3f s mean, %.3f s min\n' "baseline plot + samples" "$BS_MEAN" "$BS_MIN"
    awk -v b="$B_MEAN" -v l="$L_MEAN" -v bs="$BS_MEAN" -v ls="$S_MEAN" \
        'BEGIN{printf "  this build / baseline: %.3fx (plot), %.3fx (plot + samples)\n", l/b, ls/bs}'
fi
if [ -n "$VEGETA" ]; then
    printf '  %-22s %7.3f s mean, %.3f s min, peak RSS %s MB, page %s MB\n' \
        "vegeta plot" "$V_MEAN" "$V_MIN" "$V_RSS" "$V_SIZE"
    awk -v p="$V_S" -v b="$B_S" 'BEGIN{printf "  %-22s %7.3f s to load and render (%.3f s screenshot - %.3f s empty page)\n", "vegeta page", p-b, p, b}'
fi
echo "  screenshots: $OUT/loadlab-page.png${VEGETA:+, $OUT/vegeta-page.png}; charts: $OUT/png/"
awk -v s="$L_SIZE" 'BEGIN{ if (s <= 5.0) print "  goal page <= 5 MB: met"; else print "  goal page <= 5 MB: MISSED" }'
awk -v p="$L_S" -v b="$B_S" 'BEGIN{ if (p-b < 2.0) print "  goal opens < 2 s: met"; else print "  goal opens < 2 s: MISSED" }'
