#!/usr/bin/env bash
# What the diagnosis costs `report` (issue 24: "a 10M-record run with an hour of 1 s
# samples adds under 0.5 s"). Writes 10M records (crates/report/examples/synth_records.rs)
# and an hour of 1 s samples from a host with 16 cores and two interfaces, three process
# groups, PostgreSQL and 300 Prometheus series (crates/plot/examples/synth_samples.rs,
# the plot bench's), then times, in the same run,
# `loadlab report RECORDS` against `loadlab report RECORDS SAMPLES` (the resource rows,
# the pressures and the diagnosis) and prints the difference.
#
# Usage: bench/report/diagnosis.sh [RECORDS] [SECONDS]   (defaults 10000000 3600)
set -euo pipefail

RECORDS=${1:-10000000}
SECONDS_OF_SAMPLES=${2:-3600}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$ROOT/bench/out/report
mkdir -p "$OUT"

command -v hyperfine >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }

echo "== building (release)"
(cd "$ROOT" && cargo build --release -q -p loadlab \
    && cargo build --release -q -p loadlab-report --example synth_records \
    && cargo build --release -q -p loadlab-plot --example synth_samples)
LOADLAB=$ROOT/target/release/loadlab
RUN=$OUT/run-$RECORDS.llr
MON=$OUT/samples-$SECONDS_OF_SAMPLES.mon
[ -s "$RUN" ] || "$ROOT/target/release/examples/synth_records" "$RUN" "$RECORDS" 20000
"$ROOT/target/release/examples/synth_samples" "$MON" "$SECONDS_OF_SAMPLES"

echo "== timing (10 runs each, alternating)"
hyperfine -N --warmup 2 --runs 10 --export-json "$OUT/diagnosis.json" \
    "$LOADLAB report $RUN" "$LOADLAB report $RUN $MON" >/dev/null
python3 - "$OUT/diagnosis.json" <<'PY'
import json, sys
plain, with_samples = json.load(open(sys.argv[1]))["results"]
print(f"report, records only:          {plain['mean']:.3f} s (min {plain['min']:.3f})")
print(f"report, records + samples:     {with_samples['mean']:.3f} s (min {with_samples['min']:.3f})")
print(f"the samples and the diagnosis: {with_samples['mean'] - plain['mean']:+.3f} s (mean), "
      f"{with_samples['min'] - plain['min']:+.3f} s (min)")
PY
echo "== the diagnosis it printed"
"$LOADLAB" report "$RUN" "$MON" | sed -n '/^Diagnosis:/,$p'
