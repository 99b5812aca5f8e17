#!/usr/bin/env bash
# Prints the path of a vegeta binary for benchmarks, building v12.12.0 from the Go module
# proxy into bench/out/bin if it is not on PATH. Prints nothing (exit 1) if that fails.
# (`go install ...@latest` cannot be used here: the proxy refuses the version list, so a
# throwaway module pins the version.)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$ROOT/bench/out
VERSION=v12.12.0
if command -v vegeta >/dev/null 2>&1; then command -v vegeta; exit 0; fi
if [ -x "$OUT/bin/vegeta" ]; then echo "$OUT/bin/vegeta"; exit 0; fi
command -v go >/dev/null 2>&1 || exit 1
mod=$OUT/vegeta-build
mkdir -p "$mod" "$OUT/bin"
cat >"$mod/go.mod" <<GOMOD
module vegetabuild

go 1.22

require github.com/tsenart/vegeta/v12 $VERSION
GOMOD
printf '//go:build tools\npackage tools\n\nimport _ "github.com/tsenart/vegeta/v12"\n' >"$mod/tools.go"
(cd "$mod" && go mod tidy >/dev/null 2>&1 && go build -o "$OUT/bin/vegeta" github.com/tsenart/vegeta/v12) >&2 || exit 1
echo "$OUT/bin/vegeta"
