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
# Skipped, not memory checks: two tests run under `ulimit -v`, which ASan's 16 TiB shadow
# reservation cannot start under; the others assert wall-clock, scheduling or polls-per-request
# figures that ASan's 2-3x slowdown moves (the signal tests send SIGINT 1.5 s in and expect a
# finished round). They all run in scripts/test.sh.
exec cargo +nightly test --workspace --all-targets --locked --no-fail-fast \
  --target "$target" "$@" -- \
  --skip buffers_are_checked_against_ulimit_v \
  --skip threads_that_cannot_get_memory_are_one_line \
  --skip sparse_submissions_never_lose_a_wakeup \
  --skip stonewall_serializes_and_the_rest_run_together \
  --skip run_json_has_fio_fields \
  --skip sigint_prints_results_so_far_removes_the_file_exits_130 \
  --skip sigterm_prints_results_so_far_removes_the_file_exits_143
