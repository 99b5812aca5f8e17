#!/usr/bin/env bash
# Ground truth of the diagnosis (docs/DIAGNOSIS.md): every stand-in with a planted
# bottleneck (crates/cli/tests/diagnosis.rs: the simulator's pool, one nginx worker,
# nginx pinned to one core, nginx under a low fd limit, a starved generator, an app
# with one PostgreSQL connection) loaded past its knee RUNS times (default 3), each
# test checking that the planted limit is named first and nothing else at or before
# the knee. Prints one line per stand-in and run, and a tally.
#
#   bench/diagnosis/ground_truth.sh            # 3 runs
#   RUNS=5 bench/diagnosis/ground_truth.sh
#
# Needs the machine's cores to itself (the stand-ins plant CPU limits). Installs nginx,
# PostgreSQL and gunicorn from Debian's packages when missing (.ci/setup/).
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${RUNS:-3}
out=bench/out/diagnosis
mkdir -p "$out"
for setup in nginx postgres gunicorn; do
    # shellcheck source=/dev/null
    source ".ci/setup/$setup.sh" >/dev/null
done
cargo test --release -p loadlab --test diagnosis --no-run --quiet 2>/dev/null
for run in $(seq 1 "$runs"); do
    log="$out/run-$run.txt"
    if cargo test --release -p loadlab --test diagnosis -- --test-threads=1 \
        --nocapture >"$log" 2>&1; then
        echo "run $run: every stand-in named its planted limit"
    else
        echo "run $run: FAILED (see $log)"
    fi
    grep -o 'ground truth: .*' "$log" | sed "s/^ground truth: /  /"
done
echo
echo "over $runs runs:"
grep -h '^test result' "$out"/run-*.txt
echo "stand-ins that failed (each time):"
grep -h -A12 '^failures:$' "$out"/run-*.txt | grep -E '^    [a-z_]+$' | sort | uniq -c || echo "  none"
