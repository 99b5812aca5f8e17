# Jaeger (all-in-one: OTLP receiver, in-memory store, query API and UI), a trace store
# nobody here wrote, for the end-to-end trace test (crates/cli/tests/traces.rs) and for
# trying -trace by hand (docs/TRACES.md): `github.com/jaegertracing/jaeger/cmd/jaeger`
# (Jaeger v2) built from the Go module proxy into $LOADLAB_JAEGER (default
# ~/.cache/loadlab/jaeger). Sourced by .ci/run; also by hand (`source .ci/setup/jaeger.sh`).
# Exports LOADLAB_JAEGER_BIN and LOADLAB_REQUIRE_JAEGER=1 (the test fails, not skips,
# without it). On a fresh cache the build takes several minutes (see docs/TRACES.md).
# Idempotent: builds only when the binary of the pinned version is missing.

# Jaeger v2's releases are also tagged v1.x, the Go module's versions: pinned here.
LOADLAB_JAEGER_VERSION=v1.76.0

loadlab_jaeger_setup() {
    local dir="${LOADLAB_JAEGER:-$HOME/.cache/loadlab/jaeger}"
    local bin="$dir/$LOADLAB_JAEGER_VERSION/jaeger"
    if [ -x "$bin" ]; then
        echo "jaeger: $bin"
        return 0
    fi
    if ! command -v go >/dev/null 2>&1; then
        if [ -x /usr/local/go/bin/go ]; then
            export PATH="$PATH:/usr/local/go/bin"
        else
            echo "installing: golang-go"
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq
            apt-get install -y -qq --no-install-recommends golang-go >/dev/null
        fi
    fi
    # `go install pkg@version` refuses a module whose go.mod has `replace` lines
    # (jaeger pins sarama so), so the module is copied out of the module cache and
    # built as the main module, its go.mod as published.
    local work
    work="$(mktemp -d)"
    (
        set -e
        cd "$work"
        export GOFLAGS=-mod=mod
        local module
        module="$(go mod download -json "github.com/jaegertracing/jaeger@$LOADLAB_JAEGER_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
        cp -r "$module" jaeger
        chmod -R u+w jaeger
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
