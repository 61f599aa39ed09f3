#!/usr/bin/env bash
# QEMU's event-loop claims where reads are fast enough to show them, beside this machine's disk:
# - cached: the disk file read buffered (--direct=0) after a warm-up read, so every read is a
#   page-cache hit that io_uring completes inside the submit call (a few microseconds);
# - zram: a zram RAM disk (a real block device, O_DIRECT; io_uring hands its reads to a worker
#   thread, about 10-20 us);
# - disk: the disk file with O_DIRECT (this VM's virtio-blk: 16-63 us, longer than QEMU's 32.768 us
#   polling window, so the loop blocks whatever it does).
#
#   bash bench/reactor_ram.sh                    # 3 runs of each scenario, 3 rounds of 1 s each
#   RUNS=5 ROUNDS=3 RUNTIME=2s CHRT=1 bash bench/reactor_ram.sh
#
# - slow-handler: a 40 us handler per request; with its run time kept out of the block time the
#   loop keeps polling (the seed: ppoll and eventfd reads gone).
# - idle-sources at QEMU's scale (3200 channels, 100 devices x 32 queues): pruning idle
#   sources keeps the loop's IOPS near one source's; without pruning each poll round walks them all.
#
# CHRT=1 runs pollwise under SCHED_FIFO (chrt -f 50): on a machine busy with other work the daemon's
# reactor and client threads then own the two cores, as a pinned IOThread and vCPU do; say so
# beside its figures. Needs root and the kernel's zram (/sys/class/zram-control): a device of our
# own is added (hot_add) and removed on exit, signals included; an existing zram device is never
# touched.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-1s}
CHRT=${CHRT:-0}
SIZE_MB=${SIZE_MB:-128}

if [ "$(id -u)" != 0 ] || [ ! -w /sys/class/zram-control/hot_add ]; then
  echo "reactor_ram: needs root and zram (/sys/class/zram-control/hot_add); load it with modprobe zram" >&2
  exit 2
fi
cargo build -q --release --locked
P=target/release/pollwise
pw=("$P")
[ "$CHRT" = 1 ] && pw=(chrt -f 50 "$P")

id=$(cat /sys/class/zram-control/hot_add)
dev=/dev/zram$id
tmp=$(mktemp -d)
cleanup() {
  echo 1 > "/sys/block/zram$id/reset" 2>/dev/null || true
  echo "$id" > /sys/class/zram-control/hot_remove 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
echo "$((SIZE_MB * 2))M" > "/sys/block/zram$id/disksize"
# Written with random bytes (incompressible): a zram page never written reads as zeros at once.
dd if=/dev/urandom of="$dev" bs=1M count="$SIZE_MB" oflag=direct status=none
disk="$tmp/disk.dat"
dd if=/dev/urandom of="$disk" bs=1M count="$SIZE_MB" status=none

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'): bash bench/reactor_ram.sh (RUNS=$RUNS ROUNDS=$ROUNDS RUNTIME=$RUNTIME CHRT=$CHRT)"
echo "# $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); zram: $dev ($(cat /sys/block/zram$id/comp_algorithm | tr -d '[]' | cut -d' ' -f1)); disk: a file on $(df --output=source "$tmp" | tail -1)"
for run in $(seq 1 "$RUNS"); do
  for name in cached zram disk; do
    case $name in
      cached) target=$disk; direct=0 ;;
      zram) target=$dev; direct=1 ;;
      disk) target=$disk; direct=1 ;;
    esac
    "${pw[@]}" scenario slow-handler --filename="$target" --direct=$direct --size="${SIZE_MB}M" --rounds="$ROUNDS" \
      --runtime="$RUNTIME" --output-format=json --output="$tmp/sh.json" > /dev/null
    python3 - "$tmp/sh.json" "$name" "$run" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
print("slow-handler %-6s run %s: " % (sys.argv[2], sys.argv[3]) + "; ".join(
    "%s fdmon-waits/req %.3f, %.0f IOPS, p50 %.1f us" % (r["variant"], r["fdmon_waits_per_req"], r["iops"], r["lat_ns"]["p50"] / 1e3)
    for r in rows))
EOF
    "${pw[@]}" scenario idle-sources --filename="$target" --direct=$direct --size="${SIZE_MB}M" --sources=3200 --rounds="$ROUNDS" \
      --runtime="$RUNTIME" --output-format=json --output="$tmp/is.json" > /dev/null
    python3 - "$tmp/is.json" "$name" "$run" <<'EOF'
import json, sys
rows = {r["variant"]: r for r in json.load(open(sys.argv[1]))["results"]}
single = rows["single-source"]["iops"]
print("idle-sources %-6s run %s: single-source %.0f IOPS; " % (sys.argv[2], sys.argv[3], single) + "; ".join(
    "%s (%d sources) %.0f IOPS = %.2fx single, fdmon-waits/req %.3f" % (n, r["sources"], r["iops"], r["iops"] / single, r["fdmon_waits_per_req"])
    for n, r in rows.items() if n != "single-source"))
EOF
  done
done
