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
GUEST_TIMEOUT=${GUEST_TIMEOUT:-600} bash "$here/boot.sh" bash "$here/kernel-polling.sh" "$bin"
