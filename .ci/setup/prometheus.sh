# A Prometheus server binary for the remote-write test of `attack
# -prometheus-remote-write` (crates/cli/tests/prometheus.rs), which starts its own
# server on 127.0.0.1 with a temporary data directory and
# --web.enable-remote-write-receiver. Sourced by .ci/run as root on a fresh Debian 12
# machine; also run it by hand (`source .ci/setup/prometheus.sh`). Idempotent:
# installs Debian's `prometheus` package only when the binary is missing.
#
# The package's own service (on :9090) is not needed; where systemd runs, it is
# stopped so it holds no port. LOADLAB_REQUIRE_PROMETHEUS=1 makes the test fail, not
# skip, without the binary, so CI never passes by skipping it.

# shellcheck source=.ci/setup/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

loadlab_prometheus_setup() {
    if ! command -v prometheus >/dev/null 2>&1; then
        loadlab_apt_install prometheus
    fi
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
        systemctl stop prometheus || true
    fi
    prometheus --version 2>&1 | sed -n 1p
}

loadlab_prometheus_setup
unset -f loadlab_prometheus_setup
export LOADLAB_REQUIRE_PROMETHEUS=1
