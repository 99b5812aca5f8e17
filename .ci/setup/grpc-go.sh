# grpc-go's example servers, a gRPC implementation nobody here wrote, for the gRPC
# tests (crates/cli/tests/grpc.rs) and bench/grpc: `helloworld/greeter_server`,
# `route_guide/server`, `features/reflection/server` (a greeter with reflection on),
# `features/encryption/TLS/server` (an echo service over TLS) and
# `features/compression/server` (an echo service that answers gzip in gzip), with their
# .proto files, built from the Go module proxy into
# $LOADLAB_GRPC_GO (default ~/.cache/loadlab/grpc-go). Sourced by .ci/run on a fresh
# machine; also run it by hand (`source .ci/setup/grpc-go.sh`). Idempotent: builds
# only what is missing.
#
# `go install ...@latest` refuses the examples module (its go.mod has `replace`
# directives), so the module is downloaded, copied out of the module cache, its
# `replace` lines dropped, and built against the published grpc.
# LOADLAB_REQUIRE_GRPC_GO=1 makes the tests fail, not skip, without the servers.

# shellcheck source=.ci/setup/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

# The TLS server reads its certificate through the examples' `data.Path`, which is
# relative to its source file: built with -trimpath that is this path, relative to the
# directory the server runs in, so it runs in $dir/tls (the tests do) and finds
# $dir/tls/$TLS_DATA/x509/server_cert.pem; ca_cert.pem there signs it, for
# `*.test.example.com`.
TLS_DATA=google.golang.org/grpc/examples/data

loadlab_grpc_go_setup() {
    local dir="${LOADLAB_GRPC_GO:-$HOME/.cache/loadlab/grpc-go}"
    if [ -x "$dir/bin/greeter_server" ] && [ -x "$dir/bin/route_guide_server" ] \
        && [ -x "$dir/bin/reflection_server" ] && [ -x "$dir/bin/tls_server" ] \
        && [ -x "$dir/bin/compression_server" ] && [ -f "$dir/proto/echo.proto" ] \
        && [ -f "$dir/tls/$TLS_DATA/x509/ca_cert.pem" ] \
        && [ -f "$dir/proto/helloworld.proto" ] && [ -f "$dir/proto/route_guide.proto" ]; then
        echo "grpc-go examples: $dir"
        return 0
    fi
    loadlab_need_go || return 1
    local work
    work="$(mktemp -d)"
    (
        set -e
        cd "$work"
        export GOFLAGS=-mod=mod
        loadlab_go_module_copy google.golang.org/grpc/examples@latest examples
        cd examples
        sed -i '/^replace /d; /=> \.\./d' go.mod
        mkdir -p "$dir/bin" "$dir/proto"
        go build -o "$dir/bin/greeter_server" ./helloworld/greeter_server
        go build -o "$dir/bin/route_guide_server" ./route_guide/server
        go build -o "$dir/bin/reflection_server" ./features/reflection/server
        go build -trimpath -o "$dir/bin/tls_server" ./features/encryption/TLS/server
        go build -o "$dir/bin/compression_server" ./features/compression/server
        mkdir -p "$dir/tls/$TLS_DATA"
        cp -r data/x509 "$dir/tls/$TLS_DATA/"
        cp features/proto/echo/echo.proto "$dir/proto/"
        cp helloworld/helloworld/helloworld.proto "$dir/proto/"
        cp route_guide/routeguide/route_guide.proto "$dir/proto/"
        # The route_guide server reads its features from this file when given -json_db_file.
        cp route_guide/testdata/route_guide_db.json "$dir/proto/" 2>/dev/null || true
    )
    local status=$?
    rm -rf "$work"
    [ "$status" -eq 0 ] && echo "grpc-go examples built: $dir"
    return "$status"
}

loadlab_grpc_go_setup
unset -f loadlab_grpc_go_setup
unset TLS_DATA
export LOADLAB_REQUIRE_GRPC_GO=1
