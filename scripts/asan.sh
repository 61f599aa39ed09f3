#!/usr/bin/env bash
# The workspace's tests (unit and integration; not the doc tests, not loom) under
# AddressSanitizer and LeakSanitizer, on nightly. Slow: a separate target dir (ASan rebuilds
# everything) and debug builds. Needs the nightly toolchain (rustup toolchain install nightly);
# std itself is not rebuilt (-Zbuild-std is not needed on x86_64-unknown-linux-gnu).
# Leaks pollwise makes on purpose (buffers the kernel may still hold) are in scripts/lsan.supp.
set -euo pipefail
cd "$(dirname "$0")/.."
target="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Zsanitizer=address"
export RUSTDOCFLAGS="-Zsanitizer=address"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
export CARGO_TARGET_DIR="${ASAN_TARGET_DIR:-$PWD/target/asan}"
exec cargo +nightly test --workspace --all-targets --locked --no-fail-fast \
  --target "$target" "$@"
