#!/usr/bin/env bash
# Creates .venv and installs Workbench with its test tools. Safe to run again: it does nothing
# when pyproject.toml has not changed since the last successful run.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}

# apt-get "$@", waiting while another package manager (unattended upgrades after boot, a second
# set-up) holds apt's or dpkg's lock, instead of failing; its output only when it fails.
apt_waiting() {
    local waited=0 out
    until out=$(apt-get -o DPkg::Lock::Timeout=600 "$@" 2>&1); do
        if grep -qE "Could not get lock|Unable to lock|Unable to acquire the dpkg frontend lock" <<<"$out" \
                && [ "$waited" -lt 600 ]; then
            [ "$waited" = 0 ] && echo "Another package manager holds apt's lock; waiting for it (up to 10 minutes)..."
            sleep 5
            waited=$((waited + 5))
        else
            echo "$out" >&2
            return 1
        fi
    done
}

# System packages first (Qt's libraries, fonts, xvfb, git); only what is missing, only as root.
missing=$(grep -v '^#' scripts/system-packages.txt | xargs -n1 | while read -r pkg; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
done | xargs)
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "Installing system packages: $missing"
        apt_waiting update -qq
        DEBIAN_FRONTEND=noninteractive apt_waiting install -y -qq --no-install-recommends $missing
    else
        echo "Missing system packages (install them as root): $missing" >&2
    fi
fi

stamp=.venv/.workbench-installed
want=$(cat pyproject.toml plugins/workbench-mnn/pyproject.toml device_sdk/pyproject.toml | sha256sum | cut -d' ' -f1)

if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    # torch goes first and pinned: the CPU build of this version is what every machine has.
    echo "Installing Python packages into .venv (the first time takes a minute)"
    .venv/bin/pip install --disable-pip-version-check -q "torch==2.13.0" 2>&1 | grep -v "is ignored" || true
    # One command, the agent first: workbench needs the device agent, which no index has but this
    # checkout (pip 23 looks for it on the indexes when it comes after workbench).
    .venv/bin/pip install --disable-pip-version-check -q -e 'device_sdk[mdns]' -e '.[test]' \
        -e plugins/workbench-mnn 2>&1 | grep -v "is ignored" || true
    .venv/bin/python -c "import torch, PySide6, workbench" || { echo "The install failed; see above." >&2; exit 1; }
    echo "$want" > "$stamp"
fi
# Bytecode for the package, as an installed wheel has it: an editable install otherwise compiles
# every module at every start when PYTHONDONTWRITEBYTECODE is set. Skips what is up to date.
.venv/bin/python -m compileall -q -x '/(resources|templates)/' workbench >/dev/null
