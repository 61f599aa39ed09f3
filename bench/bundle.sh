#!/usr/bin/env bash
# A bundle that runs the benchmarks on a machine without a toolchain or a network (a larger
# machine lent for a few minutes, say): the stripped release binary, its preload library,
# bench/c/timer_waits linked to liburing's shared library (carried along, so `pollwise exec` can
# interpose it), the static fio and t/io_uring of bench/peers.sh, the bench scripts, and run.sh.
#
#   bash bench/bundle.sh DIR                 # here: build and fill DIR
#   bash DIR/run.sh OUTDIR [RUNS]            # there: the decision matrix (RUNS runs, default 3),
#                                            # the peers (3 rounds) and the shared poller
#
# run.sh writes OUTDIR/machine.txt (with the clocksource and what a clock reading and a system
# call cost, bench/c/clock_costs.c), matrix.log and matrix.md, peers.log and peers.md,
# shared_poller.json; each stage is bounded (MATRIX_S, PEERS_S, POLLER_S seconds) so a lease
# that ends brings back what finished, and STAGES (default "matrix peers poller") picks them. There it needs python3, losetup and root (the RAM loop).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: bash bench/bundle.sh DIR}
say() { echo "bundle: $*" >&2; }
command -v cc >/dev/null || { say "needs cc and liburing-dev (apt-get install gcc liburing-dev)"; exit 2; }
liburing=$(cc -print-file-name=liburing.so.2)
[ -e "$liburing" ] || { say "no liburing.so.2: apt-get install liburing-dev"; exit 2; }

cargo build --release --locked -q -p pollwise-cli -p pollwise-preload
bash bench/peers.sh build
peers=${CACHE:-"${XDG_CACHE_HOME:-$HOME/.cache}/pollwise/peers"}

mkdir -p "$dir/lib" "$dir/bench" "$dir/peers/bin"
cp target/release/pollwise target/release/libpollwise_preload.so "$dir/"
strip "$dir/pollwise" "$dir/libpollwise_preload.so"
cc -O2 -o "$dir/timer_waits" bench/c/timer_waits.c -luring
cc -O2 -static -o "$dir/clock_costs" bench/c/clock_costs.c
cp -L "$liburing" "$dir/lib/liburing.so.2"
cp "$peers/bin/fio" "$peers/bin/t_io_uring" "$dir/peers/bin/"
cp bench/decision_matrix.py bench/peers.sh bench/peers_measure.py "$dir/bench/"

cat >"$dir/run.sh" <<'EOF'
#!/usr/bin/env bash
# Runs the bundle's benchmarks (see bench/bundle.sh in pollwise's repository).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: run.sh OUTDIR [RUNS]}
runs=${2:-3}
mkdir -p "$out"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
{
	echo "cpus: $(nproc)"
	uname -a
	grep -m1 "model name" /proc/cpuinfo
	lsblk -o NAME,SIZE,ROTA,TYPE,MOUNTPOINT 2>/dev/null
	cat /proc/loadavg
	echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
	"$here/clock_costs"
} >"$out/machine.txt" 2>&1
stages=" ${STAGES:-matrix peers poller} "
# stage NAME SECONDS COMMAND...: runs COMMAND for at most SECONDS if NAME is among the stages.
stage() {
	local name=$1 secs=$2 t0 rc
	shift 2
	[[ $stages == *" $name "* ]] || return 0
	t0=$(date +%s)
	timeout "$secs" "$@"
	rc=$?
	# Not to stdout: the stage's output is redirected with it.
	echo "$name: exit $rc after $(($(date +%s) - t0)) s" >>"$out/machine.txt"
}
stage matrix "${MATRIX_S:-400}" python3 "$here/bench/decision_matrix.py" --pollwise "$here/pollwise" \
	--timer-prog "$here/timer_waits" --runs "$runs" --write "$out/matrix.md" >"$out/matrix.log" 2>&1
touch "$out/peers.md"
PW="$here/pollwise" CACHE="$here/peers" OUT="$out/peers.md" FILE="$here/peers.dat" \
	ROUNDS=${PEERS_ROUNDS:-3} RUNTIME=${PEERS_RUNTIME:-2} \
	stage peers "${PEERS_S:-200}" bash "$here/bench/peers.sh" >"$out/peers.log" 2>&1
stage poller "${POLLER_S:-60}" "$here/pollwise" scenario shared-poller --rounds=3 --runtime=2s \
	--output-format=json >"$out/shared_poller.json" 2>"$out/shared_poller.err"
rm -f "$here/peers.dat"
cat "$out/machine.txt"
EOF
chmod +x "$dir/run.sh"
say "made $dir ($(du -sh "$dir" | cut -f1)): run it there with bash $dir/run.sh OUTDIR"
