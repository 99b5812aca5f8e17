# Shared by the set-up scripts beside it (each sources this file first); not a set-up
# of its own, so its name does not end in .sh and .ci/run does not source it directly.
# Every function is idempotent and prints what it installs.

# Debian packages, installed quietly without their recommends.
loadlab_apt_install() {
    echo "installing: $*"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# A Go toolchain on PATH: the one in /usr/local/go when there is one, else Debian's.
loadlab_need_go() {
    command -v go >/dev/null 2>&1 && return 0
    if [ -x /usr/local/go/bin/go ]; then
        export PATH="$PATH:/usr/local/go/bin"
    else
        loadlab_apt_install golang-go
    fi
}

# Copies a module (MODULE@VERSION) out of the Go module cache into DEST, writable, so it
# can be built as the main module: `go install pkg@version` refuses a module whose go.mod
# has `replace` lines, as jaeger's and grpc-go's examples do. Run it in a subshell with
# `set -e`, in a scratch directory.
loadlab_go_module_copy() {
    local module_at_version=$1 dest=$2 dir
    dir="$(GOFLAGS=-mod=mod go mod download -json "$module_at_version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
    [ -n "$dir" ] || return 1
    cp -r "$dir" "$dest"
    chmod -R u+w "$dest"
}

# A fresh Python venv at DIR with PIP_ARGS installed into it (python3-venv from Debian
# when the interpreter lacks it).
loadlab_python_venv() {
    local venv=$1
    shift
    if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
        loadlab_apt_install python3-venv
    fi
    rm -rf "$venv"
    python3 -m venv "$venv" || return 1
    "$venv/bin/pip" install -q --disable-pip-version-check "$@"
}
