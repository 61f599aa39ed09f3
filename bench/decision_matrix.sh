#!/usr/bin/env bash
# The decision matrix: auto, dpas and khybrid against auto's objective in every condition
# (bench/decision_matrix.py says which and how they are judged). Builds the release binary when
# cargo is here; on a machine without a toolchain, give the prebuilt one:
#   bash bench/decision_matrix.sh [--runs 3] [--write docs/results.md]      # about 5 minutes a run on 2 vCPUs
#   bash bench/decision_matrix.sh --pollwise ./pollwise --timer-prog ./timer_waits --runs 3
#   bash bench/decision_matrix.sh --brief                                   # CI: every mode does I/O
set -euo pipefail
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || { echo "decision_matrix: needs python3 (apt-get install python3)" >&2; exit 1; }
case " $* " in
  *" --pollwise "*|*" --pollwise="*) ;;
  *) cargo build --release --locked -q -p pollwise-cli -p pollwise-preload ;;
esac
exec python3 bench/decision_matrix.py "$@"
