# Headless Chromium for the `loadlab plot` browser test (crates/plot/tests/browser.rs),
# and the system fonts the PNG charts use (resvg draws text with the fonts fontconfig
# finds; we ship none). Sourced by .ci/run as root on a fresh Debian 12 machine.
# Idempotent: installs nothing when chromium and the fonts are already there.
#
# LOADLAB_REQUIRE_BROWSER=1 makes the browser test fail, not skip, without chromium, so
# CI never passes by silently skipping it.

# shellcheck source=.ci/setup/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

loadlab_chromium_setup() {
    local need=()
    command -v chromium >/dev/null 2>&1 || need+=(chromium)
    [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
    if [ "${#need[@]}" -gt 0 ]; then
        loadlab_apt_install "${need[@]}"
    fi
    chromium --version
}

loadlab_chromium_setup
export LOADLAB_REQUIRE_BROWSER=1
