#!/usr/bin/env bash
# A throwaway PostgreSQL server on localhost, for the ledger store tests.
#
#   eval "$(bash .ci/postgres.sh start)"   # prints: export DPSK_TEST_POSTGRES_URL=...
#                                          #         export DPSK_PG_DIR=...
#   bash .ci/postgres.sh stop "$DPSK_PG_DIR"
#
# start installs the distribution's postgresql package if no server binaries are
# found (apt-get, as root), creates a cluster in a new temporary folder (as the
# postgres user when run as root: the server refuses to run as root), listening on
# a free port of 127.0.0.1 only, with trust authentication (nothing else can reach
# it), and a database "dpsk". stop stops that server and removes its folder; it
# does nothing for a folder that is gone, so it may run twice (a trap and a step).
set -euo pipefail

pg_bin() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [ -z "$dir" ] || [ ! -x "$dir/pg_ctl" ]; then
        return 1
    fi
    echo "$dir"
}

as_owner() {  # run a server command as the cluster's owner
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

start() {
    local bin dir port
    if ! bin="$(pg_bin)"; then
        echo "postgres.sh: installing the postgresql package" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq postgresql >&2
        bin="$(pg_bin)"
    fi
    dir="$(mktemp -d /tmp/dpsk-pg.XXXXXX)"
    chmod 755 "$dir"
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres: "$dir"
    fi
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off" start >&2 || {
        cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres dpsk >&2
    echo "export DPSK_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:$port/dpsk"
    echo "export DPSK_PG_DIR=$dir"
}

stop() {
    local dir="${1:-}" bin
    if [ -z "$dir" ] || [ ! -d "$dir" ]; then
        return 0
    fi
    if bin="$(pg_bin)" && [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}

case "${1:-}" in
    start) start ;;
    stop) stop "${2:-}" ;;
    *) echo "usage: $0 start | stop DIR" >&2; exit 2 ;;
esac
