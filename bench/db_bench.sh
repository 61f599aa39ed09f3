#!/usr/bin/env bash
# The hybrid-polling study's own benchmark: RocksDB's db_bench, multireadrandom through io_uring MultiRead (batch 256,
# direct reads, cache_size=0), without pollwise and under `pollwise exec --mode=M` for every mode,
# at 1x, 2x and 4x the cores. Reports ops/s, CPU per op (user+sys of db_bench) and, from the
# preload library's summary, how many waits were taken over, as a markdown table of medians (with
# min-max ranges when there is more than one round).
#
#   bash bench/db_bench.sh                          # 2 GiB DB, 10 s per run, 1 round
#   bash bench/db_bench.sh --rounds=3 --duration=30 --out=bench/results/db_bench.md
#
# Options (each also settable through the environment variable in brackets):
#   --db-gib=N      size of the database's values in GiB (DB_GIB, default 2)
#   --db-dir=DIR    where the database lives, on a real disk (DB_DIR, default CACHE/db)
#   --duration=S    seconds per multireadrandom run (DURATION, default 10)
#   --rounds=N      interleaved rounds; the table shows medians and ranges (ROUNDS, default 1)
#   --threads=LIST  thread counts, e.g. "2 4 8" (THREADS, default 1x 2x 4x nproc)
#   --modes=LIST    "none" is db_bench alone (MODES, default "none interrupt poll hybrid adaptive auto");
#                   auto:F is auto with --auto_slack=F (auto:0.03 trades at most 3% of throughput)
#   --batch=N       keys per MultiGet (BATCH, default 256, as the seed)
#   --out=FILE      also write the table (and the run's description) to FILE
#   --cache=DIR     build cache, outside the git tree so every clone reuses it
#                   (POLLWISE_ROCKSDB_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/pollwise/rocksdb)
#
# First run (root, network): adds a bookworm deb-src line if none is configured, `apt-get source
# rocksdb` (7.8.3) into the cache, installs the build dependencies and builds db_bench with
# liburing (`nice -n 19 make -j2`, a long build on 2 cores). Later runs reuse the cached binary and
# the database. Every failure ends the script with one line on stderr naming what went wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

# One line per failure, always prefixed, so a log shows at once which step broke.
die() {
  echo "db_bench.sh: $*" >&2
  exit 1
}

DB_GIB=${DB_GIB:-2}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-1}
BATCH=${BATCH:-256}
NCPU=$(nproc)
THREADS=${THREADS:-"$NCPU $((2 * NCPU)) $((4 * NCPU))"}
MODES=${MODES:-"none interrupt poll hybrid adaptive auto"}
CACHE=${POLLWISE_ROCKSDB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pollwise/rocksdb}
DB_DIR=${DB_DIR:-}
OUT_FILE=""
for arg in "$@"; do
  case $arg in
    --db-gib=*) DB_GIB=${arg#*=} ;;
    --db-dir=*) DB_DIR=${arg#*=} ;;
    --duration=*) DURATION=${arg#*=} ;;
    --rounds=*) ROUNDS=${arg#*=} ;;
    --threads=*) THREADS=${arg#*=} ;;
    --modes=*) MODES=${arg#*=} ;;
    --batch=*) BATCH=${arg#*=} ;;
    --out=*) OUT_FILE=${arg#*=} ;;
    --cache=*) CACHE=${arg#*=} ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *) die "unknown argument '$arg' (see --help)" ;;
  esac
done
DB_DIR=${DB_DIR:-$CACHE/db}
for v in DB_GIB DURATION ROUNDS BATCH; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number, not '${!v}'"
done
for t in $THREADS; do
  [[ $t =~ ^[1-9][0-9]*$ ]] || die "--threads takes positive whole numbers, not '$t'"
done
for m in $MODES; do
  case $m in none | interrupt | poll | hybrid | adaptive | auto | auto:[0-9]*) ;;
    *) die "unknown mode '$m' (none interrupt poll hybrid adaptive auto auto:SLACK)" ;;
  esac
done
# Relative paths given by the user are relative to where they ran us, not to the repo root.
case $OUT_FILE in "" | /*) ;; *) OUT_FILE=$OLDPWD/$OUT_FILE ;; esac
case $DB_DIR in /*) ;; *) DB_DIR=$OLDPWD/$DB_DIR ;; esac
case $CACHE in /*) ;; *) CACHE=$OLDPWD/$CACHE ;; esac

ROCKSDB_VERSION=7.8.3
SRC=$CACHE/rocksdb-$ROCKSDB_VERSION
BIN=$CACHE/bin/db_bench-$ROCKSDB_VERSION-uring
BUILD_LOG=$CACHE/build.log
# The build needs these (Debian names). liburing-dev must ship liburing.so so that -luring links
# liburing.so.2 dynamically: the preload library can only interpose a shared liburing.
BUILD_DEPS="build-essential liburing-dev libgflags-dev libsnappy-dev zlib1g-dev libbz2-dev liblz4-dev libzstd-dev"

# uring_ok BIN: db_bench was built with io_uring (ROCKSDB_IOURING_PRESENT makes MultiRead call
# io_uring_submit_and_wait/io_uring_wait_cqe) and takes those from liburing.so.2 at run time.
# (Outputs are read whole before grep: `cmd | grep -q` under pipefail fails when grep's early exit
# kills cmd with SIGPIPE.)
uring_ok() {
  local libs syms
  libs=$(ldd "$1" 2>/dev/null) && syms=$(nm -D --undefined-only "$1" 2>/dev/null) || return 1
  grep -q 'liburing\.so\.2' <<<"$libs" && grep -qw 'io_uring_submit_and_wait' <<<"$syms"
}

# have_source: apt knows bookworm's rocksdb source package (a deb-src line and a fresh index).
have_source() {
  local src
  src=$(apt-cache showsrc rocksdb 2>/dev/null) || return 1
  grep -q "^Version: $ROCKSDB_VERSION" <<<"$src"
}

build_db_bench() {
  if [ -x "$BIN" ] && uring_ok "$BIN"; then
    echo "== db_bench: cached $BIN"
    return
  fi
  [ "$(id -u)" = 0 ] || die "the first run must be root: it adds a deb-src line and installs build dependencies with apt-get"
  mkdir -p "$CACHE/bin"
  if [ ! -f "$SRC/Makefile" ]; then
    if ! have_source; then
      # shellcheck source=bench/lib/deb_src.sh
      . "$REPO/bench/lib/deb_src.sh"
      deb_src_ensure bookworm
      # apt-get update exits 0 when an index fails to download, so the check is what apt knows after.
      apt-get update -qq >"$CACHE/apt-update.log" 2>&1 || true
      have_source || die "no network for apt (or no bookworm deb-src line): apt-cache showsrc rocksdb has no $ROCKSDB_VERSION after apt-get update (see $CACHE/apt-update.log)"
    fi
    echo "== apt-get source rocksdb into $CACHE"
    (cd "$CACHE" && apt-get source -qq rocksdb >"$CACHE/apt-source.log" 2>&1) ||
      die "apt-get source rocksdb failed (no network for apt?): see $CACHE/apt-source.log"
    [ -f "$SRC/Makefile" ] || die "apt-get source rocksdb did not unpack $SRC (another version? see $CACHE/apt-source.log)"
  fi
  local missing="" p
  for p in $BUILD_DEPS; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" = "install ok installed" ] || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    echo "== installing build dependencies:$missing"
    # shellcheck disable=SC2086 # a word list
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
      >"$CACHE/apt-install.log" 2>&1 ||
      die "apt-get install$missing failed (no network for apt?): see $CACHE/apt-install.log"
  fi
  # g++ -print-file-name answers the bare name when the linker would not find the file.
  [ "$(g++ -print-file-name=liburing.so)" != liburing.so ] ||
    die "no liburing.so (liburing-dev): db_bench would link liburing statically and the preload could not interpose it"

  # Rules for the build: DEBUG_LEVEL=0 is RocksDB's release build (-O2, NDEBUG); PORTABLE=1 keeps
  # the binary usable on other x86-64 machines (no -march=native); -g0 drops debug info (the
  # Makefile adds -g; the later -g0 wins), which shortens compiling and linking; no tests are
  # built (only the db_bench target); DISABLE_WARNING_AS_ERROR because gcc 12 warns on 7.8.3.
  # nice -n 19 and -j2: the machine is shared with other builds. TEST_TMPDIR names a directory of
  # ours: otherwise every make invocation leaves an empty /dev/shm/rocksdb.XXXX behind (common.mk).
  echo "== building db_bench (nice -n 19 make -j2; log $BUILD_LOG)"
  local t0=$SECONDS rc=0
  mkdir -p "$CACHE/tmp"
  (cd "$SRC" && nice -n 19 make -j2 DEBUG_LEVEL=0 PORTABLE=1 DISABLE_WARNING_AS_ERROR=1 \
    EXTRA_CXXFLAGS=-g0 EXTRA_CFLAGS=-g0 ROCKSDB_USE_IO_URING=1 TEST_TMPDIR="$CACHE/tmp" \
    db_bench) >"$BUILD_LOG" 2>&1 || rc=$?
  [ "$rc" = 0 ] || die "build failed (make db_bench exited $rc): see $BUILD_LOG"
  grep -q -- '-DROCKSDB_IOURING_PRESENT' "$SRC/make_config.mk" ||
    die "db_bench was built without io_uring: build_detect_platform found no liburing (no ROCKSDB_IOURING_PRESENT in $SRC/make_config.mk; install liburing-dev, rm it, rerun)"
  uring_ok "$SRC/db_bench" ||
    die "db_bench does not take io_uring_submit_and_wait from liburing.so.2 (ldd $SRC/db_bench): the preload library cannot interpose it"
  cp "$SRC/db_bench" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
  echo "$((SECONDS - t0))" >"$CACHE/bin/build-seconds"
  echo "== built $BIN in $((SECONDS - t0)) s"
}

build_pollwise() {
  echo "== building pollwise and its preload library (release)"
  nice -n 19 cargo build --release --locked -q -p pollwise-cli -p pollwise-preload ||
    die "cargo build --release -p pollwise-cli -p pollwise-preload failed"
  POLLWISE=$REPO/target/release/pollwise
  [ -f "$REPO/target/release/libpollwise_preload.so" ] || die "no target/release/libpollwise_preload.so after the build"
}

# The database: NUM keys of 4 bytes (the seed's key_size=4) and 4096-byte values, uncompressed so
# the DB on disk is DB_GIB GiB. With use_direct_reads=true and cache_size=0 every data block read
# goes to the device whatever the page cache holds, so a DB smaller than this machine's RAM still
# reads from the disk (the seed's DB exceeded its 16 GB of RAM; ours need not, and fits the disk).
NUM=$((DB_GIB * 262144))
DB_ARGS=(--db="$DB_DIR" --wal_dir="$DB_DIR" --num="$NUM" --key_size=4 --value_size=4096
  --compression_type=none --statistics=0 --histogram=0)

# fs_of FIELD PATH: the filesystem's FIELD (FSTYPE, SOURCE) holding PATH; one line even where
# the same filesystem is mounted twice (findmnt then prints one line per mount).
fs_of() {
  local v
  v=$(findmnt -no "$1" -T "$2" 2>/dev/null) || v=unknown
  echo "${v%%$'\n'*}"
}

make_db() {
  local stamp="$DB_DIR/POLLWISE-DB" want="num=$NUM key_size=4 value_size=4096 rocksdb=$ROCKSDB_VERSION"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "== database: reusing $DB_DIR ($want)"
    return
  fi
  local parent=$DB_DIR
  while [ ! -d "$parent" ]; do parent=$(dirname "$parent"); done
  # Direct reads must reach a block device: tmpfs and ramfs have no O_DIRECT and no disk.
  local fstype
  fstype=$(fs_of FSTYPE "$parent")
  case $fstype in tmpfs | ramfs | overlay | unknown)
    die "$DB_DIR is on $fstype, not a real disk: give --db-dir=DIR on the disk's filesystem" ;;
  esac
  # Room for the DB plus a quarter for flushes and compaction, and 1 GiB to spare for others.
  local need=$(((DB_GIB * 5 / 4 + 1) * 1073741824)) avail
  [ -d "$DB_DIR" ] && rm -rf "$DB_DIR"
  avail=$(df -B1 --output=avail "$parent" | tail -1)
  [ "$avail" -ge "$need" ] ||
    die "no disk space: the $DB_GIB GiB database needs $((need >> 30)) GiB free at $parent, which has $((avail >> 30)) GiB (--db-gib=N for a smaller one)"
  mkdir -p "$DB_DIR"
  echo "== database: $NUM keys of 4 KiB values in $DB_DIR ($fstype on $(fs_of SOURCE "$parent"))"
  local t0=$SECONDS
  # fillseq writes sorted, non-overlapping files (no compaction rewrites); no WAL, then a flush
  # and a wait for the compactions so the reads below start from a settled tree.
  nice -n 19 "$BIN" "${DB_ARGS[@]}" --benchmarks=fillseq,flush,waitforcompaction --threads=1 \
    --disable_wal=1 --use_existing_db=0 >"$DB_DIR.fill.log" 2>&1 ||
    die "db_bench fillseq failed: see $DB_DIR.fill.log"
  echo "$want" >"$stamp"
  echo "== database made in $((SECONDS - t0)) s: $(du -sh "$DB_DIR" | cut -f1)"
}

build_db_bench
build_pollwise
make_db

RAW=$CACHE/runs/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RAW"
RESULTS=$RAW/results.jsonl
# The seed's read run: multireadrandom, batched MultiGet (multiread_batched=true, stride 0), batch
# 256, direct reads, no block cache. Compactions are off so nothing but the reads touch the disk.
READ_ARGS=("${DB_ARGS[@]}" --benchmarks=multireadrandom --use_existing_db=1 --use_direct_reads=true
  --cache_size=0 --batch_size="$BATCH" --multiread_batched=true --multiread_stride=0
  --duration="$DURATION" --disable_auto_compactions=1)

# run_one MODE THREADS ROUND: one db_bench run; appends one JSON line to RESULTS. /usr/bin/time
# measures db_bench alone in both cases (under pollwise it runs inside `pollwise exec`, so the
# CPU is db_bench's own, not pollwise's). A run under pollwise that took over no wait is a
# failure, not a figure: db_bench would then have waited through liburing itself.
run_one() {
  local mode=$1 t=$2 r=$3 base="$RAW/$1-t$2-r$3" rc=0
  local timed=(/usr/bin/time -f '%U %S %e' -o "$base.time" "$BIN" "${READ_ARGS[@]}" --threads="$t")
  if [ "$mode" = none ]; then
    "${timed[@]}" >"$base.log" 2>&1 || rc=$?
  else
    local how=(--mode="$mode")
    case $mode in auto:*) how=(--mode=auto --auto_slack="${mode#auto:}") ;; esac
    "$POLLWISE" exec "${how[@]}" --summary="$base.summary" -- "${timed[@]}" >"$base.log" 2>&1 || rc=$?
  fi
  python3 - "$mode" "$t" "$r" "$base" "$rc" "$RESULTS" <<'PY'
import json, re, sys
mode, t, r, base, rc, results = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6]
out = {"mode": mode, "threads": t, "round": r, "log": base + ".log", "error": None}
log = open(base + ".log", errors="replace").read()
m = re.search(r"^multireadrandom\s*:\s*([\d.]+) micros/op (\d+) ops/sec\s+([\d.]+) seconds (\d+) operations;.*\((\d+) of (\d+) found\)", log, re.M)
try:
    u, s, e = open(base + ".time").read().split()[-3:]
    out["cpu_s"] = float(u) + float(s)
except (OSError, ValueError):
    out["cpu_s"] = None
if rc != 0 or not m:
    out["error"] = f"db_bench failed (exit {rc}): see {base}.log"
else:
    out["ops_s"], out["ops"] = int(m.group(2)), int(m.group(4))
    found, read = int(m.group(5)), int(m.group(6))
    if found != read:
        out["error"] = f"only {found} of {read} keys found: the database is incomplete"
    elif out["cpu_s"] is not None:
        out["cpu_us_op"] = out["cpu_s"] * 1e6 / out["ops"]
if mode != "none":
    procs = []
    try:
        procs = [json.loads(l) for l in open(base + ".summary") if l.strip()]
    except OSError:
        pass
    waiting = [p for p in procs if sum(p.get("calls", {}).values()) > 0]
    out["taken"] = sum(sum(p.get("taken", {}).values()) for p in waiting)
    out["fallbacks"] = sum(sum(p.get("fallbacks", {}).values()) for p in waiting)
    out["calls"] = {k: v for p in waiting for k, v in p.get("calls", {}).items() if v}
    # Time spent waiting in each mode: for auto, what it chose.
    out["mode_ns"] = {}
    for p in waiting:
        for k, v in p.get("mode_ns", {}).items():
            out["mode_ns"][k] = out["mode_ns"].get(k, 0) + v
    # auto's decisions by reason (what made it explore, hold or fall back to interrupt).
    out["reasons"] = {}
    for p in waiting:
        for k, v in p.get("auto_reasons", {}).items():
            out["reasons"][k] = out["reasons"].get(k, 0) + v
    # What auto's process-wide judge last measured (null when it never concluded a trial).
    out["judge"] = next((p["judge"] for p in waiting if p.get("judge")), None)
    if out["error"] is None and out["taken"] == 0:
        out["error"] = ("no wait taken over: db_bench waited through liburing itself "
                        f"(summary {base}.summary)")
with open(results, "a") as f:
    f.write(json.dumps(out) + "\n")
head = f"   {mode:<9} threads {t:>2} round {r}:"
if out["error"]:
    print(f"{head} FAILED: {out['error']}")
else:
    taken = f", {out['taken']} waits taken over" if "taken" in out else ""
    cpu = f"{out['cpu_us_op']:.2f}" if "cpu_us_op" in out else "?"
    print(f"{head} {out['ops_s']} ops/s, {cpu} us CPU/op{taken}")
PY
}

LOAD_BEFORE=$(uptime)
read -r -a modes <<<"$MODES"
n=${#modes[@]}
echo "== multireadrandom: threads [$THREADS], modes [$MODES], $DURATION s per run, $ROUNDS round(s); raw output in $RAW"
echo "   load before: $LOAD_BEFORE"
for round in $(seq 1 "$ROUNDS"); do
  for t in $THREADS; do
    # Rounds rotate the mode order (A B C, B C A, ...) so drift and warm-up do not favour one mode.
    for i in $(seq 0 $((n - 1))); do
      run_one "${modes[$(((i + round - 1) % n))]}" "$t" "$round"
    done
  done
done
LOAD_AFTER=$(uptime)

# The table: per thread count and mode, the median over rounds (and min-max when rounds > 1).
TABLE=$(python3 - "$RESULTS" "$MODES" "$THREADS" "$ROUNDS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
modes, threads, rounds = sys.argv[2].split(), [int(t) for t in sys.argv[3].split()], int(sys.argv[4])
def fmt(vals, f):
    med = f(statistics.median(vals))
    return med if rounds == 1 or len(vals) == 1 else f"{med} [{f(min(vals))}-{f(max(vals))}]"
ops = lambda x: f"{x:,.0f}"
us = lambda x: f"{x:.2f}"
print("| threads | mode | ops/s | x none | x best mode | CPU us/op | auto against the objective's pick: ops/s, CPU | waits taken over | handed to liburing | auto's wait time | auto's decisions | the judge's trials: last stretches x interrupt's |")
print("|---:|---|---:|---:|---:|---:|---|---:|---:|---|---|---|")
def decisions(rs):
    # auto's decisions by reason, summed over its rounds, most first.
    tot = {}
    for r in rs:
        for k, v in r.get("reasons", {}).items():
            tot[k] = tot.get(k, 0) + v
    return ", ".join(f"{k} {v}" for k, v in sorted(tot.items(), key=lambda kv: -kv[1]) if v) or "-"

def split(rs):
    # auto's wait time per mode over all its rounds, largest first, 1% and more.
    tot = {}
    for r in rs:
        for k, v in r.get("mode_ns", {}).items():
            tot[k] = tot.get(k, 0) + v
    s = sum(tot.values())
    parts = [f"{k} {100 * v / s:.0f}%" for k, v in sorted(tot.items(), key=lambda kv: -kv[1]) if s and v >= s / 100]
    return ", ".join(parts) or "-"
def judged(rs):
    # Per round: the judge's trials, and each candidate's last stretch against interrupt's.
    out = []
    for r in rs:
        j = r.get("judge")
        if not j:
            out.append("-")
            continue
        vs = [f"{m} {s['x_interrupt']:.2f}" for m, s in j["last"].items()
              if m != "interrupt" and s["x_interrupt"] is not None]
        out.append(f"{j['trials']}: " + ", ".join(vs))
    return "; ".join(out) or "-"
failed = 0
for t in threads:
    cells = {}
    for m in modes:
        rs = [r for r in rows if r["threads"] == t and r["mode"] == m]
        bad = [r for r in rs if r["error"]]
        cells[m] = (rs, bad)
    med = {m: statistics.median(r["ops_s"] for r in rs) for m, (rs, bad) in cells.items() if rs and not bad}
    # The best mode: the fastest of pollwise's fixed modes (db_bench alone is not a mode, and
    # auto is judged against them).
    fastest = max((m for m in med if m != "none" and not m.startswith("auto")), key=med.get, default=None)
    best = med[fastest] if fastest else None
    cpu_med = {m: statistics.median(c) for m, (rs, bad) in cells.items()
               if rs and not bad and (c := [r["cpu_us_op"] for r in rs if r.get("cpu_us_op") is not None])}
    def pick(slack):
        # auto's objective over the fixed modes' medians: the cheapest (CPU per op) whose ops/s
        # is within the slack of the fastest.
        ok = [m for m, v in med.items() if m != "none" and not m.startswith("auto")
              and best and v >= best * (1 - slack) and m in cpu_med]
        return min(ok, key=lambda m: cpu_med[m], default=None)
    def vs_pick(m):
        if not m.startswith("auto"):
            return "-"
        p = pick(float(m.split(":", 1)[1]) if ":" in m else 0.10)
        if p is None or m not in cpu_med:
            return "-"
        return f"{med[m] / med[p]:.2f}, {cpu_med[m] / cpu_med[p]:.2f} ({p})"
    for m in modes:
        rs, bad = cells[m]
        if not rs:
            continue
        if bad:
            failed += 1
            print(f"| {t} | {m} | FAILED: {bad[0]['error']} (round {bad[0]['round']}) | | | | | | | | | |")
            continue
        o = [r["ops_s"] for r in rs]
        c = [r["cpu_us_op"] for r in rs if r.get("cpu_us_op") is not None]
        vs_none = f"{med[m] / med['none']:.2f}" if "none" in med else "-"
        taken = fmt([r["taken"] for r in rs], ops) if m != "none" else "-"
        fell = fmt([r["fallbacks"] for r in rs], ops) if m != "none" else "-"
        vs_best = f"{med[m] / best:.2f}" if best else "-"
        if best and m.startswith("auto") and rounds > 1:
            # Paired by round: auto against the fastest fixed mode in the same round. A round's
            # state (the disk, the host) moves every mode alike, and the fastest of several
            # modes' medians is biased up when they are equal within noise; the pairs are not.
            by_round = {r["round"]: r["ops_s"] for r in cells[fastest][0]}
            pairs = [r["ops_s"] / by_round[r["round"]] for r in rs if r["round"] in by_round]
            if pairs:
                vs_best += (f"; paired with {fastest} by round {statistics.median(pairs):.2f} "
                            f"[{min(pairs):.2f}-{max(pairs):.2f}]")
        print(f"| {t} | {m} | {fmt(o, ops)} | {vs_none} | {vs_best} | "
              f"{fmt(c, us) if c else '-'} | {vs_pick(m)} | {taken} | {fell} | {split(rs) if m.startswith('auto') else '-'} | "
              f"{decisions(rs) if m.startswith('auto') else '-'} | {judged(rs) if m.startswith('auto') else '-'} |")
sys.exit(3 if failed else 0)
PY
) && table_rc=0 || table_rc=$?
[ "$table_rc" = 0 ] || [ "$table_rc" = 3 ] || die "could not make the table from $RESULTS"

DISK=$(fs_of SOURCE "$DB_DIR")
DEV=$(basename "$DISK")
RANGES=""
[ "$ROUNDS" -le 1 ] || RANGES=", [min-max] over the rounds after them"
REPORT="RocksDB $ROCKSDB_VERSION db_bench multireadrandom, batch $BATCH (multiread_batched, stride 0),
use_direct_reads=true, cache_size=0, key_size=4, value_size=4096, $NUM keys ($DB_GIB GiB, uncompressed),
$DURATION s per run, $ROUNDS round(s) (medians$RANGES).
Machine: $NCPU CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), kernel $(uname -r),
DB on $DISK ($(fs_of FSTYPE "$DB_DIR"), io_poll=$(cat "/sys/block/$DEV/queue/io_poll" 2>/dev/null || echo '?')).
Load before: $(echo "$LOAD_BEFORE" | sed 's/.*load average/load average/'); after: $(echo "$LOAD_AFTER" | sed 's/.*load average/load average/').
x none: ops/s against db_bench alone; x best mode: against the fastest of pollwise's fixed modes
at that thread count (db_bench alone is not a mode; auto:F is auto with --auto_slack=F); for auto,
with more than one round, also the median [range] of auto's ops/s over that mode's in each round. The
objective's pick: the cheapest fixed mode (median CPU per op) whose median ops/s is within auto's
slack (10%, or F) of the fastest; auto against it, ops/s and CPU per op. auto's
decisions: the preload's count of each reason auto switched for (start, explore, best, periodic, clat_shift, contention, ...).
CPU us/op: user+sys of the db_bench process (/usr/bin/time) over the keys read. Waits taken over
and handed to liburing: the preload library's summary; auto's wait time: its time in each mode.
The judge's trials (auto's process-wide choice while its threads fill the cores or contend), per
round: how many it concluded, and each candidate's throughput in its last stretch (100 ms) against
interrupt's in that trial.

$TABLE"
echo
echo "$REPORT"
if [ -n "$OUT_FILE" ]; then
  mkdir -p "$(dirname "$OUT_FILE")"
  echo "$REPORT" >"$OUT_FILE"
  echo "(written to $OUT_FILE; raw output in $RAW)"
fi
[ "$table_rc" = 0 ] || die "some runs failed (FAILED rows above): no figure is reported for them"
