# An OpenTelemetry Collector nobody here wrote, for the OTLP metrics test
# (crates/cli/tests/traces.rs, docs/TRACES.md): a small distribution (the OTLP receiver
# and the debug exporter, .ci/setup/otelcol/main.go) of the collector's own modules, all
# at one release (v0.165.0, with the v1.71.0 modules that go with it), built from the Go
# module proxy into $LOADLAB_OTELCOL (default ~/.cache/loadlab/otelcol). Sourced by
# .ci/run; also by hand (`source .ci/setup/otelcol.sh`). Exports LOADLAB_OTELCOL_BIN and
# LOADLAB_REQUIRE_OTELCOL=1 (the test fails, not skips, without it). Idempotent: builds
# only when the binary of the pinned release is missing.

# shellcheck source=.ci/setup/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

LOADLAB_OTELCOL_VERSION=v0.165.0

loadlab_otelcol_setup() {
    local dir="${LOADLAB_OTELCOL:-$HOME/.cache/loadlab/otelcol}"
    local bin="$dir/$LOADLAB_OTELCOL_VERSION/otelcol"
    if [ -x "$bin" ]; then
        echo "otelcol: $bin"
        return 0
    fi
    loadlab_need_go || return 1
    local source work
    source="$(dirname "${BASH_SOURCE[0]}")/otelcol"
    work="$(mktemp -d)"
    (
        set -e
        cp "$source/main.go" "$source/go.mod" "$work/"
        cd "$work"
        # go.mod names the release's modules; tidy pins what they need (go.sum).
        GOFLAGS=-mod=mod go mod tidy
        mkdir -p "$dir/$LOADLAB_OTELCOL_VERSION"
        go build -o "$bin" .
    )
    local status=$?
    rm -rf "$work"
    [ "$status" -eq 0 ] && echo "otelcol built: $bin"
    return "$status"
}

loadlab_otelcol_setup
unset -f loadlab_otelcol_setup
export LOADLAB_OTELCOL_BIN="${LOADLAB_OTELCOL:-$HOME/.cache/loadlab/otelcol}/$LOADLAB_OTELCOL_VERSION/otelcol"
export LOADLAB_REQUIRE_OTELCOL=1
