#!/usr/bin/env bash
# Sets Workbench up and runs the whole test suite (real processes, offscreen Qt).
# Extra arguments go to pytest, e.g. `./scripts/test.sh tests/ipc -x`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export QT_QPA_PLATFORM=offscreen
exec .venv/bin/python -m pytest -q "$@"
