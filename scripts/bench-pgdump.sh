#!/usr/bin/env bash
# bench-pgdump.sh [ROWS]: issue 15's baseline, pg_dump -Fc + pg_restore of a
# Postgres table holding the same rows as the catalog scripts/bench-migrate.sh
# migrates (seed 1, ROWS keys), so the two are measured in the same run. The
# catalog's raw keys and values (kv scan) become a table (key bytea primary
# key, value bytea) in a throwaway server (initdb in a temp dir, 127.0.0.1 on
# a free port, socket in the temp dir, stopped on exit whatever happens);
# pg_dump -Fc of that table to a file and pg_restore of the file into a fresh
# database are timed with GNU time, BENCH_REPS (default 1) times: best /
# median. Client and server talk over loopback TCP, as migrate talks to S3.
# BENCH_PGDUMP_FLAGS (default none) are added to pg_dump's, e.g. -Z0 to see
# what -Fc's compression costs. Prints Markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench-pgdump: needs GNU time (scripts/install-gnu-time.sh; make bench runs it)" >&2; exit 2; }
pgbin=""
for b in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do
  [ -x "$b/initdb" ] && [ -x "$b/pg_ctl" ] && [ -x "$b/pg_dump" ] && [ -x "$b/pg_restore" ] && pgbin=$b
done
[ -n "$pgbin" ] || { echo "bench-pgdump: needs the PostgreSQL server (scripts/install-postgres.sh; make bench runs it)" >&2; exit 2; }
ROWS=${1:-1000000}
REPS=${BENCH_REPS:-1}
read -r -a dump_flags <<<"${BENCH_PGDUMP_FLAGS:-}"
M=bin/rocklake-migrate
[ -x "$M" ] || { echo "bench-pgdump: needs $M (make build)" >&2; exit 2; }

# Postgres refuses to run as root: as root, the server runs as PG_USER (the
# Debian package's postgres user), in a directory it owns.
PG_USER=${BENCH_PG_USER:-postgres}
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  id -u "$PG_USER" >/dev/null 2>&1 || { echo "bench-pgdump: no user $PG_USER to run postgres as (scripts/install-postgres.sh creates it; or set BENCH_PG_USER)" >&2; exit 2; }
  as_pg=(runuser -u "$PG_USER" --)
fi

work=$(mktemp -d -t pgbench-work.XXXXXX)
pgdir=$(mktemp -d -t pgbench-server.XXXXXX)   # the server's: data directory, socket, log
[ ${#as_pg[@]} -eq 0 ] || chown "$PG_USER" "$pgdir"
started=""
stop_pg() {
  [ -n "$started" ] || return 0
  started=""
  timeout 60 "${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgdir/data" -m fast -t 30 -w stop >/dev/null 2>&1 || true
  # pg_ctl gave up or timed out: the postmaster's pid is the first line of its pid file.
  local pid
  pid=$(head -1 "$pgdir/data/postmaster.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -QUIT "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
}
cleanup() { stop_pg; rm -rf "$work" "$pgdir"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The catalog, seeded exactly as bench-migrate.sh seeds it, and its raw
# entries as a CSV COPY file: bytea in hex input form (\x...).
$M seed --catalog "file://$work/catalog" --rows "$ROWS" --seed 1 >/dev/null
$M kv scan --catalog "file://$work/catalog" --timeout 1h |
  awk -v out="$work/kv.csv" -v sum="$work/kv.sum" '
    { print "\\x" $1 ",\\x" $2 > out; n++; b += (length($1) + length($2)) / 2 }
    END { print n, b > sum }'
read -r cat_rows cat_bytes <"$work/kv.sum"
cat_disk=$(du -sb "$work/catalog" | cut -f1)

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
timeout 120 "${as_pg[@]}" "$pgbin/initdb" -D "$pgdir/data" -U postgres --auth=trust -E UTF8 --locale=C >"$pgdir/initdb.log" 2>&1 ||
  { echo "bench-pgdump: initdb failed:" >&2; cat "$pgdir/initdb.log" >&2; exit 1; }
started=1
timeout 90 "${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$pgdir" start >/dev/null ||
  { echo "bench-pgdump: postgres did not start:" >&2; cat "$pgdir/server.log" >&2; exit 1; }
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGCONNECT_TIMEOUT=10
psql() { "$pgbin/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

# Loaded, then keyed, vacuumed (hint bits and visibility map set now, not by
# the first timed dump) and checkpointed.
psql -d postgres -c 'CREATE DATABASE src'
psql -d src -c 'CREATE TABLE kv (key bytea NOT NULL, value bytea NOT NULL)' \
  -c "\\copy kv FROM '$work/kv.csv' WITH (FORMAT csv)" \
  -c 'ALTER TABLE kv ADD PRIMARY KEY (key)' \
  -c 'VACUUM (FREEZE, ANALYZE) kv' -c 'CHECKPOINT'
read -r pg_rows pg_bytes heap total <<<"$(psql -d src -At -F ' ' -c \
  "SELECT count(*), coalesce(sum(octet_length(key) + octet_length(value)), 0), pg_relation_size('kv'), pg_total_relation_size('kv') FROM kv")"
[ "$pg_rows" -eq "$cat_rows" ] && [ "$pg_bytes" -eq "$cat_bytes" ] ||
  { echo "bench-pgdump: the table ($pg_rows rows, $pg_bytes bytes) is not the catalog ($cat_rows keys, $cat_bytes bytes)" >&2; exit 1; }

for rep in $(seq "$REPS"); do
  d="$work/run$rep"; mkdir -p "$d"
  /usr/bin/time -f "%e %M %U %S" -o "$d/dump.time" "$pgbin/pg_dump" -Fc "${dump_flags[@]}" -t kv -f "$d/kv.dump" src
  psql -d postgres -c "CREATE DATABASE dst$rep"
  /usr/bin/time -f "%e %M %U %S" -o "$d/restore.time" "$pgbin/pg_restore" --exit-on-error -d "dst$rep" "$d/kv.dump"
  restored=$(psql -d "dst$rep" -At -c 'SELECT count(*) FROM kv')
  [ "$restored" -eq "$pg_rows" ] || { echo "bench-pgdump: restored $restored rows of $pg_rows" >&2; exit 1; }
  stat -c %s "$d/kv.dump" >"$d/size"
  cut -d' ' -f1-3 /proc/loadavg >"$d/load"
  psql -d postgres -c "DROP DATABASE dst$rep"
  rm -f "$d/kv.dump"
done
version=$("$pgbin/postgres" --version)
stop_pg

python3 - "$work" "$REPS" "$ROWS" "$pg_rows" "$cat_bytes" "$cat_disk" "$pg_bytes" "$heap" "$total" "$version" "${dump_flags[*]}" <<'PY'
import os, sys
work, reps, rows, keys = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
cat_bytes, cat_disk, pg_bytes, heap, total = map(int, sys.argv[5:10])
version, flags = sys.argv[10], " ".join(["-Fc"] + sys.argv[11].split())
mib = lambda b: f"{b / 1048576:.1f} MiB"
runs = []
for r in range(1, reps + 1):
    d = os.path.join(work, f"run{r}")
    t = {}
    for step in ("dump", "restore"):
        secs, kb, user, sys_ = open(os.path.join(d, f"{step}.time")).read().split()
        t[step] = dict(secs=float(secs), kb=int(kb), cpu=float(user) + float(sys_))
    runs.append(dict(t=t, total=t["dump"]["secs"] + t["restore"]["secs"],
                     size=int(open(os.path.join(d, "size")).read()), load=open(os.path.join(d, "load")).read().strip()))
runs.sort(key=lambda x: x["total"])
best, med = runs[0], runs[(len(runs) - 1) // 2]
print(f"pg_dump {flags} + pg_restore, {rows} rows ({keys} keys), {reps} run(s), {version}: {best['total']:.1f} s best / {med['total']:.1f} s median "
      f"({keys / best['total']:,.0f} rows/s); load average after each run: {', '.join(r['load'] for r in runs)}")
print("| step (best run) | seconds | client CPU s | client peak RSS |\n|---|---|---|---|")
for step in ("dump", "restore"):
    s = best["t"][step]
    print(f"| pg_{step} | {s['secs']:.2f} | {s['cpu']:.2f} | {s['kb'] / 1024:.0f} MiB |")
print(f"| total | {best['total']:.2f} | | |")
print()
print("| bytes | |\n|---|---|")
print(f"| catalog keys + values (kv scan) | {mib(cat_bytes)} |")
print(f"| table keys + values (octet_length) | {mib(pg_bytes)} |")
print(f"| catalog on disk (SlateDB, file://) | {mib(cat_disk)} |")
print(f"| table on disk (heap / with primary key and TOAST) | {mib(heap)} / {mib(total)} |")
print(f"| dump file ({flags}) | {mib(best['size'])} |")
PY
