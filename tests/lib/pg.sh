# pg.sh -- a throwaway PostgreSQL cluster for tests and the local default.
# Source it, then:
#   pg_start DIR   init (once) and start a cluster in DIR on a free port;
#                  sets PGHOST PGPORT PGUSER PGDATABASE DATABASE_URL
#   pg_stop DIR    stop it (fast)
#   pg_as CMD...   run CMD as the cluster's owner
# PG_FSYNC (on) and PG_OPTS (more "-c name=value" options) tune the server.
# PostgreSQL refuses to run as root, so as root the cluster belongs to the
# postgres user.

PG_BINDIR=$(pg_config --bindir 2>/dev/null || true)
[ -x "$PG_BINDIR/initdb" ] ||
	PG_BINDIR=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)

pg_as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# A TCP port nobody listens on (the kernel picks it).
pg_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

pg_start() {
	dir=$1
	mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && chown postgres: "$dir"
	if [ ! -f "$dir/data/PG_VERSION" ]; then
		pg_as "$PG_BINDIR/initdb" -D "$dir/data" -U modegate -A trust \
			--no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
			{ cat "$dir/initdb.log" >&2; return 1; }
	fi
	port=$(cat "$dir/port" 2>/dev/null || pg_free_port)
	pg_as sh -c "echo $port > '$dir/port'" 2>/dev/null || echo "$port" >"$dir/port"
	pg_as "$PG_BINDIR/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 30 \
		-o "-p $port -k '$dir' -c listen_addresses=127.0.0.1 -c fsync=${PG_FSYNC:-on} -c max_connections=200 ${PG_OPTS:-}" \
		start >/dev/null || { tail -20 "$dir/postgres.log" >&2; return 1; }
	export PGHOST=127.0.0.1 PGPORT=$port PGUSER=modegate PGDATABASE=modegate
	pg_as "$PG_BINDIR/psql" -h 127.0.0.1 -p "$port" -U modegate -d postgres -qtAc \
		"SELECT 1 FROM pg_database WHERE datname='modegate'" | grep -q 1 ||
		pg_as "$PG_BINDIR/createdb" -h 127.0.0.1 -p "$port" -U modegate modegate
	export DATABASE_URL="postgresql://modegate@127.0.0.1:$port/modegate"
}

pg_stop() {
	[ -f "$1/data/postmaster.pid" ] &&
		pg_as "$PG_BINDIR/pg_ctl" -D "$1/data" -m fast -w stop >/dev/null 2>&1
	return 0
}
