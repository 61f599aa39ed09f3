#!/usr/bin/env bash
# QEMU's `qemu-img bench` on its io_uring AIO backend (Debian 12's QEMU 7.2, liburing.so.2),
# once without pollwise's preload library and once per wait mode through it (`pollwise exec`):
# run time, IOPS, qemu-img's CPU per I/O, and what the preload summary counted. From a fresh
# machine: installs qemu-utils and time (apt-get, root), builds pollwise and its preload
# library, makes a data-filled temp file (removed at the end, however the script ends).
#
#   bash bench/qemu_preload.sh                    # every mode, 3 rounds, 50000 reads each
#   MODES="interrupt poll auto" ROUNDS=5 COUNT=50000 bash bench/qemu_preload.sh
#
# The reads are O_DIRECT (`-t none`), 4 KiB (SIZE), QD4 (DEPTH), on io_uring (`-i io_uring`;
# `-n` is left out: it asks for the native Linux AIO backend instead). The file is written with
# random data first, so the reads go to the disk (a sparse file's holes are read without I/O).
# Rounds interleave the variants (A B C, B C A, ...). The summary shows whether the waits
# reached the preload library: QEMU 7.2 waits for its ring's completions in ppoll(2) (its glib
# main loop), which liburing does not see, so expect 0 waits taken over and every
# `__io_uring_get_cqe` call a peek (bench/results/2026-11-24-qemu_preload.txt says why).
# With perf installed, one more run per variant counts the syscalls it waited in.
set -euo pipefail
cd "$(dirname "$0")/.."

MODES=${MODES:-"interrupt poll hybrid adaptive auto"}
ROUNDS=${ROUNDS:-3}
COUNT=${COUNT:-50000}
DEPTH=${DEPTH:-4}
SIZE=${SIZE:-4096}
FILE_MB=${FILE_MB:-256}

if [ "$(id -u)" != 0 ]; then
  echo "qemu_preload: run as root (it installs packages)" >&2
  exit 2
fi
if ! command -v qemu-img >/dev/null || [ ! -x /usr/bin/time ] || ! command -v python3 >/dev/null; then
  echo "== installing qemu-utils, time and python3 (apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-utils time python3 >/dev/null
fi
QEMU_IMG=$(command -v qemu-img)
if ! ldd "$QEMU_IMG" | grep -q liburing.so.2; then
  echo "qemu_preload: $QEMU_IMG is not linked with liburing.so.2: nothing to interpose" >&2
  exit 2
fi
if (( COUNT * SIZE > FILE_MB * 1024 * 1024 )); then
  echo "qemu_preload: COUNT x SIZE is past the file's end; raise FILE_MB or lower COUNT" >&2
  exit 2
fi

echo "== building pollwise and its preload library (release)"
cargo build --release --locked -q -p pollwise-cli -p pollwise-preload
POLLWISE=$PWD/target/release/pollwise

WORK=$(mktemp -d /var/tmp/pollwise-qemu.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
IMG=$WORK/disk.raw
echo "== $QEMU_IMG ($("$QEMU_IMG" --version | head -1)); a ${FILE_MB} MiB data file in $WORK"
dd if=/dev/urandom of="$IMG" bs=1M count="$FILE_MB" oflag=direct status=none
sync

BENCH=("$QEMU_IMG" bench -i io_uring -f raw -t none -c "$COUNT" -d "$DEPTH" -s "$SIZE" "$IMG")

# run VARIANT ROUND: one qemu-img bench, with or without the preload library; one line.
run() {
  local v=$1 round=$2 out=$WORK/out sum=$WORK/sum-$1-$2.jsonl tm=$WORK/time
  local pre=()
  if [ "$v" != none ]; then pre=("$POLLWISE" exec --mode="$v" --summary="$sum" --); fi
  # GNU time measures qemu-img itself (its own process's CPU, not pollwise exec's).
  if ! "${pre[@]}" /usr/bin/time -f "%U %S" -o "$tm" "${BENCH[@]}" >"$out" 2>"$WORK/err"; then
    echo "qemu_preload: qemu-img bench failed under $v:" >&2
    cat "$out" "$WORK/err" >&2
    exit 1
  fi
  local secs
  secs=$(sed -n 's/^Run completed in \([0-9.]*\) seconds.*/\1/p' "$out")
  if [ -z "$secs" ]; then
    echo "qemu_preload: qemu-img bench under $v printed no run time:" >&2
    cat "$out" >&2
    exit 1
  fi
  read -r usr sys <"$tm"
  awk -v r="$round" -v v="$v" -v s="$secs" -v c="$COUNT" -v u="$usr" -v y="$sys" 'BEGIN {
    printf "%-6s %-9s %8.3f %9.0f %10.2f %10.2f\n", r, v, s, c / s, u * 1e6 / c, (u + y) * 1e6 / c }' |
    tee -a "$WORK/rows"
  if [ "$v" != none ]; then
    python3 - "$sum" "$v" "$WORK/taken" <<'PY'
import json, sys
path, mode, tally = sys.argv[1], sys.argv[2], sys.argv[3]
lines = [json.loads(l) for l in open(path)]
d = [x for x in lines if x["comm"].startswith("qemu-img")]
if not d:
    sys.exit("qemu_preload: no summary line from qemu-img")
d = d[0]
calls = {k: v for k, v in d["calls"].items() if v}
taken = sum(d["taken"].values())
fell = {k: v for k, v in d["fallbacks"].items() if v}
print(f"       {mode:<9} preload summary: rings {d['rings']}, calls {calls or 0}, {taken} waits taken over, "
      f"handed to liburing {fell or 0}, spins {d['spins']}, blocks {d['blocks']}, sleeps {d['sleeps']}")
with open(tally, "a") as f:
    f.write(f"{taken} {sum(d['calls'].values())}\n")
PY
  fi
}

variants=(none)
read -r -a modes <<<"$MODES"
variants+=("${modes[@]}")
n=${#variants[@]}
echo "== $COUNT reads of $SIZE bytes, QD$DEPTH, O_DIRECT, io_uring; $ROUNDS interleaved rounds"
printf "%-6s %-9s %8s %9s %10s %10s\n" round variant run_s iops usr_us/io cpu_us/io
for round in $(seq 1 "$ROUNDS"); do
  for i in $(seq 0 $((n - 1))); do
    run "${variants[$(( (i + round - 1) % n ))]}" "$round"
  done
done

echo "== per variant over $ROUNDS rounds: median [min-max] (CPU from GNU time: 10 ms ticks, $(awk -v c="$COUNT" 'BEGIN { printf "%.2f", 1e4 / c }') us per I/O)"
printf "%-9s %24s %24s\n" variant iops cpu_us/io
for v in "${variants[@]}"; do
  awk -v v="$v" '$2 == v { n++; i[n] = $4; c[n] = $6 }
    function med(a, n,   j, k, t) { for (j = 1; j <= n; j++) for (k = j + 1; k <= n; k++) if (a[k] < a[j]) { t = a[j]; a[j] = a[k]; a[k] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { mi = med(i, n); lo = i[1]; hi = i[n]; mc = med(c, n)
      printf "%-9s %8.0f [%6.0f-%6.0f] %8.2f [%5.2f-%5.2f]\n", v, mi, lo, hi, mc, c[1], c[n] }' "$WORK/rows"
done

if command -v perf >/dev/null; then
  echo "== where qemu-img waits: syscalls per run (perf stat), $COUNT reads"
  printf "%-9s %8s %15s %9s\n" variant ppoll io_uring_enter epoll_wait
  for v in "${variants[@]}"; do
    pre=()
    if [ "$v" != none ]; then pre=("$POLLWISE" exec --mode="$v" --); fi
    perf stat -x, -o "$WORK/perf" -e syscalls:sys_enter_ppoll,syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_epoll_wait \
      -- "${pre[@]}" "${BENCH[@]}" >/dev/null 2>&1 || { echo "qemu_preload: perf stat failed under $v" >&2; exit 1; }
    awk -F, -v v="$v" '/sys_enter_ppoll/ {p=$1} /sys_enter_io_uring_enter/ {e=$1} /sys_enter_epoll_wait/ {w=$1}
      END { printf "%-9s %8s %15s %9s\n", v, p, e, w }' "$WORK/perf"
  done
fi

awk '{ t += $1; c += $2; n++ } END {
  if (t == 0)
    printf "verdict: 0 waits taken over in %d runs under the preload library (%d liburing calls, all handed on): qemu-img waits in ppoll, not in liburing\n", n, c
  else
    printf "verdict: %d waits taken over in %d runs under the preload library (%d liburing calls)\n", t, n, c }' "$WORK/taken"
