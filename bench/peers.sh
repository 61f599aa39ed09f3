#!/usr/bin/env bash
# pollwise beside its peers: fio 3.33 and fio's t/io_uring, with the same ring features on both
# sides, in interleaved rounds; CPU per I/O (user + system time of the whole process / I/Os) and
# IOPS, medians with their ranges over the rounds, as a markdown table in docs/results.md.
#
#   bash bench/peers.sh build        # only build (and cache) fio and t/io_uring
#   bash bench/peers.sh              # build if needed, then ROUNDS rounds of every case
#   ROUNDS=5 RUNTIME=5 CASES="qd1 nop" bash bench/peers.sh
#   PW=./pollwise CACHE=DIR OUT=table.md bash bench/peers.sh   # prebuilt, peers in DIR/bin
#
# The peers: Debian bookworm's `fio` source package (`apt-get source`, through a deb-src line
# added under /etc/apt/sources.list.d if none is there), configured with --build-static and
# built once into $CACHE (default ~/.cache/pollwise/peers): static binaries, so they run on a
# machine without the libraries. Build needs: a C compiler, make, libc6-dev and zlib1g-dev
# (static libc.a and libz.a); fio's other build dependencies (librbd, glusterfs, ...) are left out
# on purpose, as their engines are not measured and they have no static archives.
#
# Cases (CASES, default all), each one job per thread, THREADS="1 2xcores" (default both):
# - qd1:    4 KiB random reads at QD1, O_DIRECT, fixed buffers + registered files + registered ring
#           (t/io_uring -d1 -s1 -c1 -B1 -F1 -X1; fio --ioengine=io_uring --fixedbufs
#           --registerfiles (fio 3.33 has no registered ring); pollwise the same and
#           --registered_ring), interrupt mode; pollwise submits and waits in one enter
#           (--submit_mode=with_wait), as t/io_uring does (fio enters twice, as pollwise's default),
#           and opens the file O_NOATIME (--noatime=1), as t/io_uring does (fio 3.33 only for
#           devices): else each read checks the access time in the kernel (~1.5% of its CPU).
# - qd128:  the same at QD128, batches of 32 (t/io_uring -d128 -s32 -c32; fio/pollwise
#           --iodepth_batch_submit=32 --iodepth_batch_complete_min=32).
# - null:   fio --ioengine=null vs pollwise --ioengine=null, QD32, 512 B, poll mode for pollwise.
# - nop:    t/io_uring -N1 (QD128, batches of 32, registered ring) vs pollwise --ioengine=nop at
#           the same depth and batches with --registered_ring, in poll mode, sequential offsets:
#           t/io_uring's NOPs draw no offset (its init_io returns before), and a sequential one
#           is the cheapest pollwise draws (a random one, every block once a pass, costs ~6 ns).
# - nop_gtod: the same with pollwise's --gtod_reduce=1 (one clock reading a batch, as fio's
#           gtod_reduce): t/io_uring reads no clock per I/O unless given -t1.
# - qd128_lat: qd128 with latencies tracked on both sides, each by one clock reading a batch:
#           t/io_uring -t1 (a TSC reading per submitted batch and per reap, a histogram add per
#           reaped group) against pollwise --gtod_reduce=1 (a reading per batch, a histogram
#           record per I/O); the plain qd128 row's t/io_uring keeps no latency at all.
# The file is $FILE (default: 1 GiB under target/, on /dev/vda's filesystem), read O_DIRECT.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${CACHE:-"${XDG_CACHE_HOME:-$HOME/.cache}/pollwise/peers"}
FIO_VERSION=3.33
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-3}
CASES=${CASES:-"qd1 qd128 qd128_lat null nop nop_gtod"}
CORES=$(nproc)
THREADS=${THREADS:-"1 $((2 * CORES))"}
FILE=${FILE:-target/peers.dat}
FILE_MB=${FILE_MB:-1024}
OUT=${OUT:-docs/results.md}

say() { echo "peers: $*" >&2; }

build_peers() {
	local src="$CACHE/fio-$FIO_VERSION"
	if [ -x "$CACHE/bin/fio" ] && [ -x "$CACHE/bin/t_io_uring" ]; then
		return
	fi
	mkdir -p "$CACHE"
	if [ ! -d "$src" ]; then
		local codename
		codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
		if ! (cd "$CACHE" && apt-get source --download-only "fio=$FIO_VERSION" >/dev/null 2>&1); then
			# shellcheck source=bench/lib/deb_src.sh
			. "$(dirname "${BASH_SOURCE[0]}")/lib/deb_src.sh"
			deb_src_ensure "$codename"
			apt-get update -qq
		fi
		# The version Debian has for this release (3.33-3 in bookworm).
		(cd "$CACHE" && apt-get source "fio=$FIO_VERSION" >/dev/null 2>&1 || apt-get source fio >/dev/null)
		src=$(ls -d "$CACHE"/fio-"$FIO_VERSION"* | head -1)
	fi
	for pkg in gcc make libc6-dev zlib1g-dev; do
		if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed'; then
			say "installing the build dependency $pkg"
			apt-get install -y -qq "$pkg" >/dev/null
		fi
	done
	say "building fio $FIO_VERSION and t/io_uring statically in $src"
	(
		cd "$src"
		./configure --build-static --disable-native >"$CACHE/configure.log" 2>&1
		nice -n 10 make -j"$CORES" fio t/io_uring >"$CACHE/make.log" 2>&1
	)
	mkdir -p "$CACHE/bin"
	cp "$src/fio" "$CACHE/bin/fio"
	cp "$src/t/io_uring" "$CACHE/bin/t_io_uring"
	for b in fio t_io_uring; do
		if ldd "$CACHE/bin/$b" >/dev/null 2>&1; then
			say "$b is not static: $(ldd "$CACHE/bin/$b" | head -3)"
			exit 1
		fi
	done
	say "built: $CACHE/bin/fio, $CACHE/bin/t_io_uring"
}

build_peers
[ "${1:-}" = build ] && exit 0

command -v python3 >/dev/null || { say "needs python3"; exit 2; }
# PW: a prebuilt pollwise (a machine without a toolchain: bench/bundle.sh); else built here.
if [ -z "${PW:-}" ]; then
	nice -n 10 cargo build -q --release -p pollwise-cli
	PW=target/release/pollwise
fi
[ -x "$PW" ] || { say "$PW is not an executable pollwise"; exit 2; }
FIO="$CACHE/bin/fio"
TIO="$CACHE/bin/t_io_uring"

if [ ! -f "$FILE" ] || [ "$(stat -c %s "$FILE")" -lt $((FILE_MB << 20)) ]; then
	say "laying out $FILE ($FILE_MB MiB)"
	dd if=/dev/urandom of="$FILE" bs=1M count="$FILE_MB" status=none conv=fsync
fi

# One measurement: bench/peers_measure.py runs the command and prints "iops cpu_ns_per_io" from
# its whole-process rusage (user + system, every thread) and the I/Os it reports.
measure() { python3 bench/peers_measure.py "$@"; }

pw_common=(--name=peers --output-format=json --time_based --runtime="${RUNTIME}s")
fio_common=(--name=peers --output-format=json --time_based --runtime="${RUNTIME}s" --thread)
tio_common=(-r "$RUNTIME")

# Each case: the three sides' command lines, for $threads threads. Empty: no such side.
case_cmds() {
	local c=$1 n=$2
	tio=() fio=() pw=()
	case $c in
	qd1 | qd128 | qd128_lat)
		local d=1 b=1
		[ "$c" != qd1 ] && d=128 b=32
		tio=("$TIO" -d"$d" -s"$b" -c"$b" -b4096 -p0 -B1 -F1 -X1 -O1 -R1 -n"$n" "${tio_common[@]}" "$FILE")
		fio=("$FIO" "${fio_common[@]}" --filename="$FILE" --ioengine=io_uring --direct=1 --rw=randread
			--bs=4k --iodepth="$d" --iodepth_batch_submit="$b" --iodepth_batch_complete_min="$b"
			--fixedbufs=1 --registerfiles=1 --numjobs="$n" --group_reporting)
		pw=("$PW" run "${pw_common[@]}" --filename="$FILE" --ioengine=io_uring --direct=1 --rw=randread
			--bs=4k --iodepth="$d" --iodepth_batch_submit="$b" --iodepth_batch_complete_min="$b"
			--fixedbufs=1 --registerfiles=1 --registered_ring=1 --numjobs="$n" --group_reporting
			--mode=interrupt --submit_mode=with_wait --noatime=1)
		if [ "$c" = qd128_lat ]; then
			tio=("${tio[@]:0:${#tio[@]}-1}" -t1 "$FILE")
			fio=()
			pw+=(--gtod_reduce=1)
		fi
		;;
	null)
		fio=("$FIO" "${fio_common[@]}" --ioengine=null --size=1g --rw=randread --bs=512 --iodepth=32
			--numjobs="$n" --group_reporting)
		pw=("$PW" run "${pw_common[@]}" --ioengine=null --size=1g --rw=randread --bs=512 --iodepth=32
			--numjobs="$n" --group_reporting --mode=poll)
		;;
	nop | nop_gtod)
		tio=("$TIO" -N1 -d128 -s32 -c32 -X1 -n"$n" "${tio_common[@]}" "$FILE")
		pw=("$PW" run "${pw_common[@]}" --ioengine=nop --size=1g --rw=read --bs=4k --iodepth=128
			--iodepth_batch_submit=32 --iodepth_batch_complete_min=32 --registered_ring=1
			--numjobs="$n" --group_reporting --mode=poll)
		if [ "$c" = nop_gtod ]; then pw+=(--gtod_reduce=1); fi
		;;
	esac
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq 1 "$ROUNDS"); do
	for c in $CASES; do
		for t in $THREADS; do
			case_cmds "$c" "$t"
			# Interleaved: each round runs every side of a case back to back, in turn.
			for side in tio fio pw; do
				declare -n cmd=$side
				[ "${#cmd[@]}" = 0 ] && continue
				kind=$side
				[ "$side" = tio ] && kind=t_io_uring
				[ "$side" = pw ] && kind=pollwise
				if r=$(measure "$kind" "${cmd[@]}"); then
					echo "$c $t $kind $r" >>"$results"
					say "round $round: $c, $t threads, $kind: $r (IOPS, ns CPU per I/O)"
				else
					say "round $round: $c, $t threads, $kind failed: ${cmd[*]}"
				fi
			done
		done
	done
done

load=$(cut -d' ' -f1-3 /proc/loadavg)
table=$(python3 bench/peers_measure.py --table "$results" "$ROUNDS" "$RUNTIME" "$load")
echo "$table"
python3 bench/peers_measure.py --write "$OUT" "$table"
say "wrote the table into $OUT"
