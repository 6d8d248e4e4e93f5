"""Is a cluster profile ready for runs? The checks behind `workbench cluster test` and the
profiles dialog's Test button: each one says what it found, and what to do when it failed."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Callable

from workbench.cluster.errors import ClusterError, UnknownHostKey
from workbench.cluster.profiles import ClusterProfile

CHECK_NAMES = ("connect", "work root", "data root", "git", "python", "torch", "scheduler")
REMOTE_PYTHON = "python3"
QUICK_TIMEOUT_S = 90  # generous: a login shell on a busy node can take long; this only stops hangs
TORCH_TIMEOUT_S = 180  # importing torch from a network file system can take a while the first time


@dataclass(frozen=True)
class ProfileCheck:
    """One check: ``name`` (one of CHECK_NAMES), whether it passed, what was found, and for a
    failure what to do. ``skipped`` when an earlier failure made it impossible to run.
    ``error`` is the exception behind a failure, if any (an UnknownHostKey lets a dialog offer to
    trust the key)."""

    name: str
    ok: bool
    detail: str
    advice: str = ""
    skipped: bool = False
    error: Exception | None = None


def check_profile(profile: ClusterProfile, *, accept_new_host: bool = False, known_hosts=None,
                  passphrase: str | None = None, connection=None,
                  on_check: Callable[[ProfileCheck], None] | None = None) -> list[ProfileCheck]:
    """Run every check on ``profile`` in order (one connection for all), calling ``on_check``
    as each ends. ``connection`` is an open ClusterConnection to use instead of a new one."""
    from workbench.cluster.connection import ClusterConnection

    results: list[ProfileCheck] = []

    def record(check: ProfileCheck) -> None:
        results.append(check)
        if on_check is not None:
            on_check(check)

    conn = connection or ClusterConnection(profile, known_hosts=known_hosts, accept_new_host=accept_new_host,
                                           passphrase=passphrase)
    try:
        try:
            conn.connect()
        except ClusterError as exc:
            record(ProfileCheck("connect", False, str(exc), _connect_advice(profile, exc), error=exc))
            for name in CHECK_NAMES[1:]:
                record(ProfileCheck(name, False, "not checked: there is no connection", skipped=True))
            return results
        key = f", host key {conn.host_key.fingerprint}" if conn.host_key else ""
        via = f" through {profile.jump_host}" if profile.jump_host else ""
        record(ProfileCheck("connect", True, f"logged in as {profile.destination}{via}{key}"))
        for name, check in (("work root", lambda: _writable(conn, profile.work_root, "--work-root", profile)),
                            ("data root", lambda: _writable(conn, profile.data_root, "--data-root", profile)),
                            ("git", lambda: _git(conn)),
                            ("python", lambda: _python(conn, profile)),
                            ("torch", lambda: _torch(conn, profile)),
                            ("scheduler", lambda: _scheduler(conn, profile))):
            try:
                ok, detail, advice = check()
            except ClusterError as exc:
                ok, detail, advice = False, str(exc), "Run the test again; if it keeps failing, check the cluster."
                record(ProfileCheck(name, ok, detail, advice, error=exc))
                continue
            record(ProfileCheck(name, ok, detail, "" if ok else advice))
        return results
    finally:
        if connection is None:
            conn.close()


def test_profile(profile: ClusterProfile, **options) -> list[str]:
    """The problems of ``profile`` (one line each, what is wrong and what to do); empty when it
    is ready for runs. Takes check_profile's keyword arguments."""
    return [f"{c.name}: {c.detail}" + (f" {c.advice}" if c.advice else "")
            for c in check_profile(profile, **options) if not c.ok and not c.skipped]


test_profile.__test__ = False  # a library function, not a pytest test, whatever its name says


def shell_path(path: str) -> str:
    """``path`` as one word of a bash command line; a leading ``~`` means the home folder."""
    if path == "~" or path.startswith("~/"):
        rest = path[2:]
        return '"$HOME"' + (f"/{shlex.quote(rest)}" if rest else "")
    return shlex.quote(path)


def _connect_advice(profile: ClusterProfile, error: Exception) -> str:
    if isinstance(error, UnknownHostKey):
        return (f"Compare the fingerprint with the one the cluster's administrators publish, then run "
                f"`workbench cluster test {profile.name} --trust`.")
    return ""  # the connection's messages already say what to check


def _writable(conn, path: str, option: str, profile: ClusterProfile) -> tuple[bool, str, str]:
    result = conn.run(f"mkdir -p {shell_path(path)} && cd {shell_path(path)} && "
                      f"probe=$(mktemp .workbench-check.XXXXXX) && rm -f \"$probe\" && pwd -P",
                      timeout=QUICK_TIMEOUT_S, check=False, retry_if_dropped=True)
    if result.ok:
        return True, f"{result.stdout.strip()} is writable", ""
    return (False, f"cannot write in {path}: {_last_line(result)}",
            f"Choose a folder you can write to: `workbench cluster edit {profile.name} {option} FOLDER`.")


def _git(conn) -> tuple[bool, str, str]:
    result = conn.run("git --version", timeout=QUICK_TIMEOUT_S, check=False, retry_if_dropped=True)
    if result.ok:
        return True, result.stdout.strip(), ""
    return (False, f"git does not run on the cluster: {_last_line(result)}",
            "Code reaches the cluster through Git: ask its administrators to install git, or load it in "
            "the profile's --python-setup (for example `module load git`).")


def _python(conn, profile: ClusterProfile) -> tuple[bool, str, str]:
    result = conn.run(_with_setup(profile, f"{REMOTE_PYTHON} -c 'import sys; print(sys.version.split()[0], "
                                           f"sys.executable)'"), timeout=QUICK_TIMEOUT_S, check=False, retry_if_dropped=True)
    if result.ok and result.stdout.strip():
        version, _, executable = result.stdout.strip().splitlines()[-1].partition(" ")
        return True, f"Python {version} ({executable})", ""
    return (False, f"{REMOTE_PYTHON} does not run after the set-up lines: {_last_line(result)}",
            f"Set the lines that activate Python on the cluster: `workbench cluster edit {profile.name} "
            f"--python-setup 'source ~/venv/bin/activate'`.")


def _torch(conn, profile: ClusterProfile) -> tuple[bool, str, str]:
    probe = ("import torch; print(torch.__version__, torch.cuda.is_available(), torch.cuda.device_count())")
    result = conn.run(_with_setup(profile, f"{REMOTE_PYTHON} -c {shlex.quote(probe)}"),
                      timeout=TORCH_TIMEOUT_S, check=False, retry_if_dropped=True)
    if result.ok and result.stdout.split():
        version, cuda, count = (result.stdout.split() + ["", "", ""])[:3]
        gpus = f"{count} GPU(s) visible here" if cuda == "True" else "no GPU visible on the login node"
        return True, f"torch {version}, {gpus}", ""
    return (False, f"{REMOTE_PYTHON} cannot import torch: {_last_line(result)}",
            "Install PyTorch in the environment the profile's --python-setup activates.")


def _scheduler(conn, profile: ClusterProfile) -> tuple[bool, str, str]:
    if profile.scheduler == "ssh":
        result = conn.run("command -v setsid && command -v nohup", timeout=QUICK_TIMEOUT_S, check=False, retry_if_dropped=True)
        if result.ok:
            return True, "plain SSH: setsid and nohup are there", ""
        return (False, "setsid or nohup is missing on the host",
                "Runs without a scheduler need util-linux's setsid and coreutils' nohup on the host.")
    result = conn.run("sinfo -h -o '%P %a %D %T'", timeout=QUICK_TIMEOUT_S, check=False, retry_if_dropped=True)
    if not result.ok:
        return (False, f"sinfo does not answer: {_last_line(result)}",
                "Check that Slurm's commands are on the PATH of a login shell (or load them in --python-setup), "
                "that SLURM_CONF is right if the cluster needs it (--env SLURM_CONF=…), or use --scheduler ssh "
                "for a machine without Slurm.")
    partitions = {line.split()[0].rstrip("*"): line for line in result.stdout.splitlines() if line.split()}
    if profile.partition and profile.partition not in partitions:
        return (False, f"Slurm has no partition {profile.partition!r} (it has: {', '.join(sorted(partitions))})",
                f"Pick one of them: `workbench cluster edit {profile.name} --partition NAME`.")
    summary = ", ".join(f"{name} ({line.split()[-1]})" for name, line in sorted(partitions.items())) or "none"
    return True, f"Slurm answers; partitions: {summary}", ""


def _with_setup(profile: ClusterProfile, command: str) -> str:
    return f"{profile.python_setup}\n{command}" if profile.python_setup.strip() else command


def _last_line(result) -> str:
    return next((line.strip() for line in reversed((result.stderr or result.stdout).splitlines()) if line.strip()),
                f"exit status {result.code}")
