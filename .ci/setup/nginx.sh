# nginx for the diagnosis stand-ins (crates/cli/tests/diagnosis.rs): a real server
# with a planted bottleneck (one worker on one core, a low fd limit), each test
# starting its own nginx on 127.0.0.1 with a temporary prefix. Sourced by .ci/run as
# root on a fresh Debian 12 machine; also run it by hand (`source .ci/setup/nginx.sh`).
# Idempotent: installs Debian's `nginx-light` only when the binary is missing.
#
# The package's own service (on :80) is not needed; where systemd runs, it is stopped.
# LOADLAB_REQUIRE_NGINX=1 makes the tests fail, not skip, without the binary.

# shellcheck source=.ci/setup/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

loadlab_nginx_setup() {
    if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
        loadlab_apt_install nginx-light
    fi
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet nginx 2>/dev/null; then
        systemctl stop nginx || true
    fi
    /usr/sbin/nginx -v 2>&1 | sed -n 1p
}

loadlab_nginx_setup
unset -f loadlab_nginx_setup
export LOADLAB_REQUIRE_NGINX=1
