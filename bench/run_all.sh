#!/usr/bin/env bash
# Every benchmark the issues ask for, one after another, on a quiet machine.
# Writes each command and its output to the log given (default bench/results.txt).
# Installs fio if missing (through bench/fio_compare.py). Takes about 40 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results.txt}
cargo build --release -q -p pollwise-cli
P=target/release/pollwise
F=${POLLWISE_BENCH_FILE:-/tmp/pollwise-bench.dat}
: > "$out"
run() {
  echo "\$ $*" | tee -a "$out"
  "$@" 2>&1 | tee -a "$out"
  echo | tee -a "$out"
}
run python3 bench/fio_compare.py --filename="$F" --rounds 5 --runtime 4
"$P" run --filename="$F" --size=256M --io_size=4k > /dev/null
run "$P" compare --filename="$F" --size=256M --runtime=5s --rounds=5 --plot=docs/plots
run "$P" compare --ioengine=sim --sim_latency=fixed:10us --runtime=4s --rounds=4
run "$P" scenario hybrid-contention
run "$P" scenario shared-poller
run "$P" scenario fairness
run "$P" scenario idle-sources --sources 100 --active 1 --rounds 5
run "$P" scenario idle-sources --sources 100 --active 1 --rounds 5 --fdmon epoll
run "$P" scenario slow-handler --handler_us 40 --rounds 5
run "$P" scenario slow-handler --handler_us 40 --rounds 5 --fdmon epoll
run python3 bench/fio_slat_clat.py --filename="$F" --pollwise "$P"
run python3 bench/auto_table.py --runs 3 --filename="$F" --pollwise "$P"
run python3 bench/model_vs_real.py --filename="$F" --rounds 2 --runtime 2 --no-build
run "$P" advise --filename="$F" --time=60s
rm -f "$F"
