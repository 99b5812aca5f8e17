# gunicorn with psycopg 3 and its pool, for the database stand-in of the diagnosis
# (crates/cli/tests/diagnosis.rs, examples/plans/diagnosis_db_pool.toml): a real WSGI
# server running examples/apps/one_connection.py, whose PostgreSQL pool holds one
# connection, against the server .ci/setup/postgres.sh starts.
# Sourced by .ci/run as root on a fresh Debian 12 machine; also run it by hand
# (`source .ci/setup/gunicorn.sh`). Idempotent: installs Debian's packages only when
# missing. LOADLAB_REQUIRE_GUNICORN=1 makes the test fail, not skip, without them.

# shellcheck source=.ci/setup/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

loadlab_gunicorn_setup() {
    if ! command -v gunicorn >/dev/null 2>&1 \
        || ! python3 -c 'import psycopg, psycopg_pool' >/dev/null 2>&1; then
        loadlab_apt_install gunicorn python3-psycopg python3-psycopg-pool
    fi
    gunicorn --version
}

loadlab_gunicorn_setup
unset -f loadlab_gunicorn_setup
export LOADLAB_REQUIRE_GUNICORN=1
