#!/usr/bin/env bash
# Creates .venv and installs Workbench with its test tools. Safe to run again: it does nothing
# when pyproject.toml has not changed since the last successful run.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
stamp=.venv/.workbench-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)

if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    # torch goes first and pinned: the CPU build of this version is what every machine has.
    .venv/bin/pip install --disable-pip-version-check -q "torch==2.13.0"
    .venv/bin/pip install --disable-pip-version-check -q -e '.[test]'
    echo "$want" > "$stamp"
fi
