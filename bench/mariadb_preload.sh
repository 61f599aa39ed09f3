#!/usr/bin/env bash
# MariaDB (Debian's mariadbd, InnoDB on io_uring through liburing.so.2) under sysbench, once per
# wait mode through pollwise's preload library (`pollwise exec`): TPS, p95 latency, the server's
# CPU per transaction, sysbench's errors, and what the preload summary counted (it must show the
# waits were taken over). From a fresh machine: installs mariadb-server and sysbench (apt-get,
# root), builds pollwise and its preload library, makes its own data directory in a temp
# directory (removed at the end, however the script ends) and a server on a Unix socket only.
#
#   bash bench/mariadb_preload.sh                 # every mode, 1 round, 15 s per run
#   MODES="interrupt poll auto" ROUNDS=3 TIME=30 bash bench/mariadb_preload.sh
#
# The buffer pool (BUFFER_POOL, default 32M) is small against the data (TABLES x ROWS, default
# 8 x 100000, about 200 MiB), so reads miss it and read-ahead and page flushing go to the disk
# through io_uring (innodb_use_native_aio=ON, O_DIRECT). Rounds interleave the modes (A B C, B C
# A, ...). Results: one line per run on stdout, and the raw sysbench and summary output in
# bench/results/mariadb_preload-<time>/ (OUT=dir to choose).
set -euo pipefail
cd "$(dirname "$0")/.."

MODES=${MODES:-"interrupt poll hybrid adaptive auto"}
ROUNDS=${ROUNDS:-1}
TIME=${TIME:-15}
THREADS=${THREADS:-4}
TABLES=${TABLES:-8}
ROWS=${ROWS:-100000}
BUFFER_POOL=${BUFFER_POOL:-32M}
WORKLOADS=${WORKLOADS:-"oltp_write_only oltp_read_only"}
OUT=${OUT:-bench/results/mariadb_preload-$(date -u +%Y%m%dT%H%M%SZ)}

if [ "$(id -u)" != 0 ]; then
  echo "mariadb_preload: run as root (it installs packages and runs mariadbd as root)" >&2
  exit 2
fi
if ! command -v mariadbd >/dev/null && [ ! -x /usr/sbin/mariadbd ] || ! command -v sysbench >/dev/null; then
  echo "== installing mariadb-server and sysbench (apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server sysbench >/dev/null
fi
MARIADBD=/usr/sbin/mariadbd
if ! ldd "$MARIADBD" | grep -q liburing.so.2; then
  echo "mariadb_preload: $MARIADBD is not linked with liburing.so.2: nothing to interpose" >&2
  exit 2
fi

echo "== building pollwise and its preload library (release)"
cargo build --release --locked -q -p pollwise-cli -p pollwise-preload
POLLWISE=$PWD/target/release/pollwise

mkdir -p "$OUT"
WORK=$(mktemp -d /var/tmp/pollwise-mariadb.XXXXXX)
SOCK=$WORK/mysqld.sock
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    mariadb-admin --socket="$SOCK" shutdown 2>/dev/null || kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat > "$WORK/my.cnf" <<EOF
[mariadbd]
datadir=$WORK/data
socket=$SOCK
skip-networking
user=root
log-error=$WORK/error.log
innodb_use_native_aio=ON
innodb_flush_method=O_DIRECT
innodb_buffer_pool_size=$BUFFER_POOL
innodb_log_file_size=64M
innodb_read_io_threads=2
innodb_write_io_threads=2
innodb_io_capacity=2000
innodb_flush_log_at_trx_commit=1
max_connections=64
EOF

echo "== a data directory in $WORK"
mariadb-install-db --defaults-file="$WORK/my.cnf" --auth-root-authentication-method=socket >"$WORK/install.log" 2>&1

# start_server [CMD_PREFIX...]: starts mariadbd (under the prefix), waits for its socket.
start_server() {
  "$@" "$MARIADBD" --defaults-file="$WORK/my.cnf" >>"$WORK/server.out" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    if mariadb-admin --socket="$SOCK" ping >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.2
  done
  echo "mariadb_preload: the server did not start; its log:" >&2
  tail -20 "$WORK/error.log" >&2
  exit 1
}
stop_server() {
  mariadb-admin --socket="$SOCK" shutdown
  wait "$server_pid" || true
  server_pid=""
}
server_cpu_ticks() {
  # utime + stime of mariadbd (clock ticks), from /proc.
  local pid
  pid=$(pgrep -x mariadbd | head -1)
  awk '{print $14 + $15}' "/proc/$pid/stat"
}
SB=(sysbench --db-driver=mysql --mysql-socket="$SOCK" --mysql-user=root --mysql-db=sbtest
    --tables="$TABLES" --table-size="$ROWS")

echo "== preparing $TABLES tables of $ROWS rows (no preload)"
start_server
mariadb --socket="$SOCK" -e "CREATE DATABASE IF NOT EXISTS sbtest"
"${SB[@]}" --threads="$THREADS" oltp_read_write prepare >"$OUT/prepare.log" 2>&1
stop_server

HZ=$(getconf CLK_TCK)
read -r -a modes <<<"$MODES"
n=${#modes[@]}
printf "%-6s %-9s %-16s %9s %8s %12s %s\n" round mode workload tps p95_ms cpu_us/txn errors
for round in $(seq 1 "$ROUNDS"); do
  for i in $(seq 0 $((n - 1))); do
    mode=${modes[$(( (i + round - 1) % n ))]}
    sum="$OUT/summary-$mode-r$round.jsonl"
    start_server "$POLLWISE" exec --mode="$mode" --summary="$sum" --
    for w in $WORKLOADS; do
      log="$OUT/$w-$mode-r$round.log"
      c0=$(server_cpu_ticks)
      "${SB[@]}" --threads="$THREADS" --time="$TIME" --report-interval=0 --percentile=95 "$w" run >"$log" 2>&1
      c1=$(server_cpu_ticks)
      tps=$(sed -n 's/.*transactions: *[0-9]* *(\([0-9.]*\) per sec.).*/\1/p' "$log")
      p95=$(sed -n 's/.*95th percentile: *\([0-9.]*\).*/\1/p' "$log")
      txns=$(sed -n 's/.*transactions: *\([0-9]*\) .*/\1/p' "$log")
      errs=$(sed -n 's/.*ignored errors: *\([0-9]*\) .*/\1/p' "$log")
      cpu_us=$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" -v t="${txns:-0}" \
        'BEGIN { if (t > 0) printf "%.0f", (b - a) * 1e6 / hz / t; else print "-" }')
      printf "%-6s %-9s %-16s %9s %8s %12s %s\n" "$round" "$mode" "$w" "${tps:--}" "${p95:--}" "$cpu_us" "${errs:--}"
    done
    stop_server
    # The server's summary line (the process that waited), from the preload library.
    python3 - "$sum" "$mode" <<'PY'
import json, sys
path, mode = sys.argv[1], sys.argv[2]
for line in open(path):
    d = json.loads(line)
    if sum(d["calls"].values()) == 0:
        continue
    taken = sum(d["taken"].values())
    fell = {k: v for k, v in d["fallbacks"].items() if v}
    print(f"       {mode:<9} server pid {d['pid']} ({d['comm']}): {taken} waits taken over, "
          f"fallbacks {fell or 0}, spins {d['spins']}, blocks {d['blocks']}, sleeps {d['sleeps']}, "
          f"mode time {d['mode_ns']}, cpu {(d['cpu_user_ns'] + d['cpu_sys_ns']) / 1e9:.2f} s")
PY
  done
done
if grep -E "\[ERROR\]" "$WORK/error.log" | grep -vi "plugin\|Can't open and lock privilege" >"$OUT/server-errors.log"; then
  echo "mariadb_preload: the server logged errors (see $OUT/server-errors.log)" >&2
  exit 1
fi
cp "$WORK/error.log" "$OUT/server-error.log"
echo "raw output in $OUT"
