#!/usr/bin/env bash
# The test command: every test of the workspace on real io_uring, then the loom models.
# Needs only Rust (cargo) and a Linux kernel with io_uring enabled.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" != "0" ]; then
  echo "io_uring is disabled on this machine (sysctl kernel.io_uring_disabled); enable it: sysctl -w kernel.io_uring_disabled=0" >&2
  exit 1
fi

cargo test --workspace --locked
# Lock-free protocols, model-checked (a separate target dir: cfg(loom) rebuilds everything).
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p pollwise --lib --release --locked -- loom
