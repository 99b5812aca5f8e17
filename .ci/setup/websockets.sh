# Python's `websockets` (PyPI), a WebSocket server nobody here wrote, for the streaming
# tests (crates/cli/tests/flows.rs): examples/apps/websockets_echo.py is the library's
# documented echo server, examples/apps/websockets_broadcast.py a chat room on its
# documented broadcast, each on a port of the test's choosing. Installed into a
# venv at $LOADLAB_WEBSOCKETS (default ~/.cache/loadlab/websockets). Sourced by .ci/run
# on a fresh machine; also run it by hand (`source .ci/setup/websockets.sh`).
# Idempotent: installs only when the venv cannot import it.
# LOADLAB_REQUIRE_WEBSOCKETS=1 makes the tests fail, not skip, without it.

# shellcheck source=.ci/setup/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

loadlab_websockets_setup() {
    local dir="${LOADLAB_WEBSOCKETS:-$HOME/.cache/loadlab/websockets}"
    if "$dir/bin/python" -c 'import websockets.asyncio.server' >/dev/null 2>&1; then
        echo "websockets: $dir ($("$dir/bin/python" -c 'import websockets; print(websockets.__version__)'))"
        return 0
    fi
    loadlab_python_venv "$dir" 'websockets>=14,<18' && echo "websockets installed: $dir"
}

loadlab_websockets_setup
unset -f loadlab_websockets_setup
export LOADLAB_REQUIRE_WEBSOCKETS=1
