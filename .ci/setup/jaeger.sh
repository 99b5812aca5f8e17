# Jaeger (all-in-one: OTLP receiver, in-memory store, query API and UI), a trace store
# nobody here wrote, for the end-to-end trace test (crates/cli/tests/traces.rs) and for
# trying -trace by hand (docs/TRACES.md): `github.com/jaegertracing/jaeger/cmd/jaeger`
# (Jaeger v2) built from the Go module proxy into $LOADLAB_JAEGER (default
# ~/.cache/loadlab/jaeger). Sourced by .ci/run; also by hand (`source .ci/setup/jaeger.sh`).
# Exports LOADLAB_JAEGER_BIN and LOADLAB_REQUIRE_JAEGER=1 (the test fails, not skips,
# without it). On a fresh cache the build takes several minutes (see docs/TRACES.md).
# Idempotent: builds only when the binary of the pinned version is missing.

# shellcheck source=.ci/setup/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

# Jaeger v2's releases are also tagged v1.x, the Go module's versions: pinned here.
LOADLAB_JAEGER_VERSION=v1.76.0

loadlab_jaeger_setup() {
    local dir="${LOADLAB_JAEGER:-$HOME/.cache/loadlab/jaeger}"
    local bin="$dir/$LOADLAB_JAEGER_VERSION/jaeger"
    if [ -x "$bin" ]; then
        echo "jaeger: $bin"
        return 0
    fi
    loadlab_need_go || return 1
    # jaeger's go.mod pins sarama with a `replace` line, so the module is built as the
    # main module (loadlab_go_module_copy), its go.mod as published.
    local work
    work="$(mktemp -d)"
    (
        set -e
        cd "$work"
        export GOFLAGS=-mod=mod
        loadlab_go_module_copy "github.com/jaegertracing/jaeger@$LOADLAB_JAEGER_VERSION" jaeger
        cd jaeger
        mkdir -p "$dir/$LOADLAB_JAEGER_VERSION"
        go build -o "$bin" ./cmd/jaeger
    )
    local status=$?
    rm -rf "$work"
    [ "$status" -eq 0 ] && echo "jaeger built: $bin"
    return "$status"
}

loadlab_jaeger_setup
unset -f loadlab_jaeger_setup
export LOADLAB_JAEGER_BIN="${LOADLAB_JAEGER:-$HOME/.cache/loadlab/jaeger}/$LOADLAB_JAEGER_VERSION/jaeger"
export LOADLAB_REQUIRE_JAEGER=1
