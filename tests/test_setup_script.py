"""scripts/setup.sh waits while another package manager holds apt's lock (unattended upgrades
after boot, a second set-up) instead of failing, and still fails at once on any other apt error.
Its apt_waiting function runs here against an apt-get on PATH that answers as apt does."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LOCKED = "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (unattended-upgr)"


def _apt_waiting(tmp_path: Path, answers: list[tuple[int, str]], *args: str) -> subprocess.CompletedProcess:
    """Run setup.sh's apt_waiting with an apt-get that gives ``answers`` in turn; sleep is instant."""
    script = (ROOT / "scripts" / "setup.sh").read_text()
    function = script[script.index("apt_waiting() {"):]
    function = function[:function.index("\n}\n") + 3]
    calls = tmp_path / "calls"
    apt = tmp_path / "bin" / "apt-get"
    apt.parent.mkdir()
    cases = "\n".join(f'  {index}) echo "{text}"; exit {status} ;;' for index, (status, text) in enumerate(answers))
    apt.write_text(f'#!/bin/bash\necho "$@" >> {calls}\nn=$(($(wc -l < {calls}) - 1))\ncase $n in\n{cases}\n'
                   f'  *) exit 99 ;;\nesac\n')
    apt.chmod(0o755)
    (tmp_path / "bin" / "sleep").write_text("#!/bin/bash\nexit 0\n")
    (tmp_path / "bin" / "sleep").chmod(0o755)
    return subprocess.run(["bash", "-c", f'set -euo pipefail\n{function}\napt_waiting "$@"', "setup", *args],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})


def test_apt_waiting_waits_for_the_lock_then_runs(tmp_path):
    done = _apt_waiting(tmp_path, [(100, LOCKED), (100, LOCKED), (0, "fine")], "update", "-qq")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("waiting for it") == 1  # said once, not at every try
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == ["-o DPkg::Lock::Timeout=600 update -qq"] * 3


def test_apt_waiting_fails_at_once_on_another_error_and_shows_it(tmp_path):
    done = _apt_waiting(tmp_path, [(100, "E: Unable to locate package nosuchpackage")], "install", "nosuchpackage")
    assert done.returncode == 1
    assert "Unable to locate package nosuchpackage" in done.stderr
    assert len((tmp_path / "calls").read_text().splitlines()) == 1
