#!/usr/bin/env bash
# The guest test: boots the guest (scripts/guest/boot.sh: an emulated NVMe with poll queues) and
# checks that pollwise's kernel polled I/O works there (scripts/guest/kernel-polling.sh).
#
#   bash scripts/guest/test.sh [PATH-TO-POLLWISE]     # default: target/debug/pollwise, built if missing
#
# Needs root (virtiofsd), network the first time (QEMU and the kernel; cached afterwards).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-target/debug/pollwise}
if [ ! -x "$bin" ]; then
  cargo build --locked -p pollwise-cli
fi
bin=$(realpath "$bin")
here=$(realpath scripts/guest)
# The C test program on liburing, for the Waiter on an IOPOLL ring: through the C ABI (linked
# statically) and unmodified (with the preload library beside it).
rm_dir=target/guest-c
mkdir -p "$rm_dir"
cargo build --locked -q -p pollwise-capi -p pollwise-preload
cc -O2 -DUSE_POLLWISE -Icrates/pollwise-capi/include tests/c/ring_modes.c target/debug/libpollwise_capi.a \
  -luring -lpthread -ldl -lm -o "$rm_dir/ring_modes_capi"
cc -O2 tests/c/ring_modes.c -luring -o "$rm_dir/ring_modes"
cp target/debug/libpollwise_preload.so "$rm_dir/"
GUEST_TIMEOUT=${GUEST_TIMEOUT:-600} bash "$here/boot.sh" bash "$here/kernel-polling.sh" "$bin" "$(realpath "$rm_dir")"
