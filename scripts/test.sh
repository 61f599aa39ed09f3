#!/usr/bin/env bash
# The test command: the checks that hold the line, every test of the workspace on real io_uring
# (examples and doc examples included), then the loom models.
# Needs Rust (cargo, with rustfmt and clippy), a Linux kernel with io_uring enabled, root and the
# network the first time (apt-get: fio, QEMU, liburing-dev, pkg-config, a C compiler, groff, zsh;
# the guest's kernel), cached afterwards.
#
#   bash scripts/test.sh          the whole suite (what CI runs)
#   bash scripts/test.sh quick    format, lints, the library's unit tests, the command's main tests
#                                 and the docs checks: a newcomer's first check, no loom, no guest
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-full}
case $mode in
  full|quick) ;;
  *) echo "usage: bash scripts/test.sh [quick]" >&2; exit 2 ;;
esac

if [ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" != "0" ]; then
  echo "io_uring is disabled on this machine (sysctl kernel.io_uring_disabled); enable it: sysctl -w kernel.io_uring_disabled=0" >&2
  exit 1
fi

# fio is the peer the output tests compare with (fio 3.33's JSON keys, fio_jsonplus_clat2csv,
# its example job files): install it if it is missing, and make those tests fail rather than
# skip if it still is.
if ! command -v fio >/dev/null 2>&1 || [ ! -d /usr/share/doc/fio/examples ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "== installing fio and its examples (apt-get)"
    apt-get update -qq && apt-get install -y -qq fio fio-examples >/dev/null
  else
    echo "fio is missing: install it (apt-get install fio fio-examples) and run again" >&2
    exit 1
  fi
fi
export POLLWISE_REQUIRE_FIO=1

# The C ABI's tests compile tests/c/ring_modes.c on liburing (liburing-dev, pkg-config, a C
# compiler): install them if missing; the tests fail, never skip, without them.
if [ ! -f /usr/include/liburing.h ] || ! command -v pkg-config >/dev/null 2>&1 || ! command -v cc >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "== installing liburing-dev, pkg-config and a C compiler (apt-get)"
    apt-get update -qq && apt-get install -y -qq liburing-dev pkg-config gcc libc6-dev >/dev/null
  else
    echo "liburing-dev, pkg-config or cc is missing: install them (apt-get install liburing-dev pkg-config gcc) and run again" >&2
    exit 1
  fi
fi

# The docs tests (crates/pollwise-cli/tests/docs.rs) build the man page with groff and parse the
# zsh completion with zsh: install them if missing; the tests fail, never skip, without them.
if ! command -v groff >/dev/null 2>&1 || ! command -v zsh >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "== installing groff-base and zsh (apt-get)"
    apt-get update -qq && apt-get install -y -qq groff-base zsh >/dev/null
  else
    echo "groff or zsh is missing: install them (apt-get install groff-base zsh) and run again" >&2
    exit 1
  fi
fi

echo "== format, lints, docs"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings -W clippy::undocumented_unsafe_blocks
RUSTDOCFLAGS=-Dwarnings cargo doc --workspace --lib --no-deps --locked

if [ "$mode" = quick ]; then
  echo "== quick: the library's unit tests, the command's main tests, the docs"
  cargo test --workspace --lib --locked
  cargo test -p pollwise --locked --test module_docs --test public_face
  cargo test -p pollwise-cli --locked --test cli --test options_cli --test docs
  echo "quick check passed: bash scripts/test.sh runs the whole suite"
  exit 0
fi

echo "== tests (unit, integration, doc examples; examples are built)"
# Bounded: a test that hangs fails this stage in 40 minutes with its name on screen (cargo
# prints "has been running for over 60 seconds"), instead of eating CI's whole budget.
bounded() {
  local rc=0
  timeout --signal=KILL 40m "$@" || rc=$?
  if [ "$rc" = 137 ]; then echo "scripts/test.sh: '$*' ran over 40 minutes: a test hangs (named above)" >&2; fi
  return "$rc"
}
bounded cargo test --workspace --all-targets --locked
bounded cargo test --workspace --doc --locked
# Lock-free protocols, model-checked (a separate target dir: cfg(loom) rebuilds everything).
echo "== loom models"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p pollwise --lib --release --locked -- loom

# Kernel polled I/O (IOPOLL, HYBRID_IOPOLL) needs a device with poll queues, which this machine's
# disk may lack: boot a guest with an emulated NVMe that has them and check function there.
echo "== guest: kernel polled I/O on an emulated NVMe with poll queues (scripts/guest/test.sh)"
bash scripts/guest/test.sh target/debug/pollwise

# liburing's own test suite, plain and under the preload library in every mode: the same
# outcome for every test (scripts/liburing_suite.sh installs what it needs with apt-get, caches
# the suite's build under ~/.cache/pollwise, and fails when something is missing).
echo "== liburing's test suite under the preload library (scripts/liburing_suite.sh)"
bounded bash scripts/liburing_suite.sh

# The decision matrix, brief: every wait mode completes I/O in every condition auto is judged in
# (disk, RAM loop device, contention, timers under exec). Speed is judged by the full matrix
# (bash bench/decision_matrix.sh --runs 3), a benchmark, not here.
echo "== the decision matrix, brief (bench/decision_matrix.py --brief)"
bounded python3 bench/decision_matrix.py --brief --pollwise target/debug/pollwise
