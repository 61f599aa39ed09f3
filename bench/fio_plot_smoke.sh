#!/usr/bin/env bash
# bench-fio (PyPI fio-plot) drives pollwise installed as `fio` on its PATH, and fio-plot draws
# charts from what it wrote: the short form CI runs (tests/fio_plot_smoke.rs), under a minute
# once fio-plot is installed.
#
# Usage: bench/fio_plot_smoke.sh [POLLWISE_BINARY]   (default: target/debug/pollwise)
#
# Installs fio-plot into a venv under the target directory the first time (needs python3 with
# venv and the network); a missing python3, venv, pip or network fails the script, it never
# skips. bench-fio's defaults are used where pollwise takes them: its engine (libaio) and its
# invalidate=1 are replaced by io_uring and invalidate=0 only while pollwise's option table
# lacks them, and the script says so.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-target/debug/pollwise}")
[ -x "$bin" ] || { echo "fio_plot_smoke: no pollwise binary at $bin: build it (cargo build -p pollwise-cli)" >&2; exit 1; }
FIO_PLOT_VERSION=1.1.21
venv="${CARGO_TARGET_DIR:-target}/fio-plot-$FIO_PLOT_VERSION"
mkdir -p "$(dirname "$venv")"
venv=$(realpath -m "$venv")

# One installer at a time (tests may run this script concurrently).
exec 9>"$venv.lock"
flock 9
if [ ! -x "$venv/bin/bench-fio" ] || [ ! -x "$venv/bin/fio-plot" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" || { echo "fio_plot_smoke: python3 -m venv failed: install python3-venv" >&2; exit 1; }
  "$venv/bin/pip" install --quiet --disable-pip-version-check "fio-plot==$FIO_PLOT_VERSION" \
    || { rm -rf "$venv"; echo "fio_plot_smoke: pip could not install fio-plot==$FIO_PLOT_VERSION (network?)" >&2; exit 1; }
fi
flock -u 9

work=$(mktemp -d "${TMPDIR:-/tmp}/pollwise-fio-plot.XXXXXX")
name="$(basename "$work").dat"
# bench-fio writes its job file as /tmp/<target's name>-tmpjobfile.fio.
trap 'rm -rf "$work" "/tmp/$name-tmpjobfile.fio"' EXIT
mkdir "$work/bin"
ln -s "$bin" "$work/bin/fio"
target="$work/$name"
head -c 16M /dev/zero > "$target"

adapt=()
if ! "$bin" --cmdhelp=ioengine | grep -q 'libaio'; then
  echo "note: pollwise takes no ioengine=libaio (bench-fio's default): bench-fio is asked for --engine io_uring"
  adapt+=(--engine io_uring)
fi
if ! "$bin" --cmdhelp=invalidate > /dev/null 2>&1; then
  echo "note: pollwise takes no invalidate option (bench-fio writes invalidate=1): bench-fio is asked for --invalidate 0"
  adapt+=(--invalidate 0)
fi

echo "== bench-fio: randread, 4k, iodepth 1 and 2, 2 s each, with pollwise as fio"
PATH="$work/bin:$PATH" "$venv/bin/bench-fio" --target "$target" --type file --size 16M \
  --output "$work/out" --mode randread --iodepth 1 2 --numjobs 1 --runtime 2 --time-based \
  "${adapt[@]}" --quiet > "$work/bench-fio.log" 2>&1 \
  || { cat "$work/bench-fio.log"; echo "fio_plot_smoke: bench-fio failed" >&2; exit 1; }
grep -q "An error occurred" "$work/bench-fio.log" && { cat "$work/bench-fio.log"; exit 1; }
results="$work/out/$name/4k"

# What bench-fio left: one fio JSON per run, from pollwise, with I/O in it; its logs.
"$venv/bin/python" - "$results" <<'EOF'
import json, os, sys
d = sys.argv[1]
for depth in (1, 2):
    path = os.path.join(d, f"randread-{depth}-1.json")
    with open(path) as f:
        v = json.load(f)
    assert v["fio version"].startswith("pollwise-"), v["fio version"]
    job = v["jobs"][0]
    assert job["job options"]["iodepth"] == str(depth), job["job options"]
    assert job["read"]["total_ios"] > 0 and job["read"]["iops"] > 0, job["read"]
    for kind in ("bw", "iops", "lat", "clat", "slat"):
        log = os.path.join(d, f"randread-iodepth-{depth}-numjobs-1_{kind}.1.log")
        assert os.path.getsize(log) > 0, log
    print(f"  iodepth {depth}: {job['read']['iops']:.0f} IOPS, {job['read']['total_ios']} reads")
EOF

echo "== fio-plot: IOPS and latency by queue depth (-l), and the logs over time (-g)"
"$venv/bin/fio-plot" -i "$results" -T "pollwise as fio" -l -r randread -n 1 -d 1 2 \
  -o "$work/depths.png" > "$work/plot1.log" 2>&1 || { cat "$work/plot1.log"; exit 1; }
"$venv/bin/fio-plot" -i "$results" -T "pollwise as fio" -g -r randread -n 1 -d 1 2 \
  -t iops lat -o "$work/logs.png" > "$work/plot2.log" 2>&1 || { cat "$work/plot2.log"; exit 1; }
for png in depths logs; do
  f="$work/$png.png"
  [ -s "$f" ] && [ "$(head -c 4 "$f" | tail -c 3)" = "PNG" ] \
    || { cat "$work"/plot*.log; echo "fio_plot_smoke: fio-plot drew no $png.png" >&2; exit 1; }
  echo "  $png.png: $(stat -c %s "$f") bytes"
done
if [ -n "${FIO_PLOT_KEEP:-}" ]; then
  mkdir -p "$FIO_PLOT_KEEP" && cp "$work"/*.png "$FIO_PLOT_KEEP"/
fi
echo "fio_plot_smoke: ok"
