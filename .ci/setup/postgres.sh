# A real PostgreSQL server on loopback for the monitor's PostgreSQL tests
# (crates/monitor/tests/monitor.rs, crates/cli/tests/monitor.rs). Sourced by .ci/run as
# root on a fresh Debian 12 machine; also run it by hand (`source .ci/setup/postgres.sh`).
# Idempotent: installs postgresql from Debian's packages only when missing, and reuses
# the server this script started before if it is still running.
#
# Exports LOADLAB_TEST_POSTGRES_URL (role loadlab, password loadlab-test, database
# loadlab, on 127.0.0.1 and a free port) and LOADLAB_REQUIRE_POSTGRES=1, which makes the
# PostgreSQL tests fail, not skip, without a server, so CI never passes by skipping.
#
# PostgreSQL refuses to run as root: the cluster belongs to the `postgres` user.

# shellcheck source=.ci/setup/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

loadlab_postgres_setup() {
    local data=/var/tmp/loadlab-postgres
    local password=loadlab-test
    if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
        loadlab_apt_install postgresql
    fi
    local bin
    bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
    local as_postgres=(runuser -u postgres --)
    local port
    if [ -s "$data/loadlab.port" ] && "${as_postgres[@]}" "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        port=$(cat "$data/loadlab.port")
    else
        if [ ! -s "$data/PG_VERSION" ]; then
            rm -rf "$data"
            install -d -o postgres -g postgres -m 700 "$data"
            local pwfile
            pwfile=$(mktemp)
            printf '%s\n' "$password" >"$pwfile"
            chown postgres "$pwfile"
            "${as_postgres[@]}" "$bin/initdb" -D "$data" -U postgres --pwfile="$pwfile" \
                --auth-local=trust --auth-host=scram-sha-256 >/dev/null
            rm -f "$pwfile"
        fi
        port=54329
        while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
            port=$((port + 1))
        done
        echo "$port" >"$data/loadlab.port"
        "${as_postgres[@]}" "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
            -o "-c listen_addresses=127.0.0.1 -p $port -k $data" start >/dev/null
    fi
    local psql=("${as_postgres[@]}" "$bin/psql" -h "$data" -p "$port" -U postgres -d postgres -qtAX -v ON_ERROR_STOP=1)
    if [ "$("${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname = 'loadlab'")" != 1 ]; then
        "${psql[@]}" -c "CREATE ROLE loadlab LOGIN PASSWORD '$password'"
    fi
    if [ "$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = 'loadlab'")" != 1 ]; then
        "${psql[@]}" -c "CREATE DATABASE loadlab OWNER loadlab"
    fi
    export LOADLAB_TEST_POSTGRES_URL="postgres://loadlab:$password@127.0.0.1:$port/loadlab"
    echo "postgres: 127.0.0.1:$port, database loadlab, role loadlab"
}

loadlab_postgres_setup
unset -f loadlab_postgres_setup
export LOADLAB_REQUIRE_POSTGRES=1
