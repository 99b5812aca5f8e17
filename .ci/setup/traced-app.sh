# The traced app of the end-to-end trace test (crates/cli/tests/traces.rs,
# docs/TRACES.md): examples/apps/traced_orders.py, a Flask app instrumented with
# OpenTelemetry's own Python SDK (flask and psycopg instrumentations, OTLP/HTTP exporter)
# served by gunicorn, in a venv of its own at $LOADLAB_TRACED_APP_VENV (default
# ~/.cache/loadlab/traced-app-venv), from PyPI at the versions pinned here. Its Flask also
# serves examples/apps/token_stream.py (an LLM-style token stream, crates/cli/tests/flows.rs).
# Sourced by .ci/run as root on a fresh Debian 12 machine; also by hand
# (`source .ci/setup/traced-app.sh`). Idempotent: installs only when the venv lacks these
# pins. Exports LOADLAB_TRACED_APP_VENV and LOADLAB_REQUIRE_TRACED_APP=1 (the test
# fails, not skips, without the venv). PostgreSQL comes from .ci/setup/postgres.sh,
# Jaeger from .ci/setup/jaeger.sh.

# shellcheck source=.ci/setup/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

LOADLAB_TRACED_APP_PINS="flask==3.1.3 gunicorn==27.0.1 psycopg[binary]==3.3.9 psycopg-pool==3.3.3 \
opentelemetry-api==1.45.1 opentelemetry-sdk==1.45.1 opentelemetry-exporter-otlp-proto-http==1.45.1 \
opentelemetry-instrumentation-flask==0.66b1 opentelemetry-instrumentation-psycopg==0.66b1"

loadlab_traced_app_setup() {
    local venv="${LOADLAB_TRACED_APP_VENV:-$HOME/.cache/loadlab/traced-app-venv}"
    local stamp="$venv/loadlab-pins"
    if [ -x "$venv/bin/gunicorn" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$LOADLAB_TRACED_APP_PINS" ]; then
        echo "traced app venv: $venv"
        return 0
    fi
    # shellcheck disable=SC2086 # the pins are words
    loadlab_python_venv "$venv" $LOADLAB_TRACED_APP_PINS || return 1
    printf '%s' "$LOADLAB_TRACED_APP_PINS" >"$stamp"
    echo "traced app venv built: $venv"
}

loadlab_traced_app_setup
unset -f loadlab_traced_app_setup
export LOADLAB_TRACED_APP_VENV="${LOADLAB_TRACED_APP_VENV:-$HOME/.cache/loadlab/traced-app-venv}"
export LOADLAB_REQUIRE_TRACED_APP=1
