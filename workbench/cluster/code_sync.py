"""Ship a project's exact code to the cluster through Git, sending only what the cluster lacks.

Each project has a bare repository on the cluster, ``<work_root>/repos/<project-key>.git``. A run:

1. snapshots the working tree as a commit (``workbench.git.snapshot``), kept locally on
   ``refs/workbench/snapshots/<run_id>``;
2. asks the cluster repository for its ``refs/workbench/*``: the commits it already has;
3. bundles the run's commit minus those commits (``git bundle create … --not …``), so a project's
   second run sends only its new objects however big ``.git`` is (nothing when the cluster has
   the commit already);
4. uploads the bundle over SFTP to ``<work_root>/repos/incoming/<run_id>.bundle.part``, renames it
   and fetches it into ``refs/workbench/runs/<run_id>``, then deletes it. A cut connection leaves
   at most a ``.part`` file, which nothing fetches and the next upload replaces;
5. checks the commit out at ``<work_root>/runs/<run_id>/code`` (built beside it, then renamed).

``ship_trainkit`` puts the ``workbench_trainkit`` helpers on the cluster once per version.

The connection is anything with ``run(command, timeout=None, check=True) -> CommandResult(code,
stdout, stderr)`` (a bash command line on the cluster) and ``sftp()`` (paramiko's SFTPClient:
``put``, ``putfo``), as ``ClusterConnection`` provides.
"""

from __future__ import annotations

import hashlib
import io
import re
import shlex
import shutil
import sys
import tarfile
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from workbench.cluster.errors import ClusterError
from workbench.git.errors import GitError
from workbench.git.repository import NotARepository
from workbench.git.snapshot import WorkingTreeCommit, commit_working_tree
from workbench.tasks import CancelToken, Progress, ProgressCallback

RUN_REFS = "refs/workbench/runs/"
_TRAINKIT = "workbench_trainkit"
# Exit status the remote scripts use for "git is not installed there".
_NO_GIT = 97
# A run id that surely names a ref (git check-ref-format would say so).
_PLAIN_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
# Printed before the answer of a remote script: login scripts on clusters may print banners first.
_ANSWER = "--- workbench answer ---"


class Connection(Protocol):
    def run(self, command: str, timeout: float | None = None, check: bool = True,
            retry_if_dropped: bool = False) -> Any: ...

    def sftp(self) -> Any: ...


@dataclass(frozen=True)
class CodeSnapshot:
    """What ``ship_code`` shipped: the run's code, and where it is on the cluster."""

    commit: str
    dirty: bool
    """The working tree had uncommitted changes, so ``commit`` is a snapshot commit on HEAD."""
    snapshot_ref: str
    """The local ref that keeps ``commit``: ``refs/workbench/snapshots/<run_id>``."""
    bytes_sent: int
    """Size of the bundle uploaded (0 when the cluster had the commit already)."""
    remote_repo: str
    remote_checkout: str
    """The commit checked out on the cluster: ``<work_root>/runs/<run_id>/code``."""
    remote_project_dir: str = ""
    """The project folder inside the checkout (the checkout itself unless the project is a
    sub-folder of its repository)."""
    untracked_skipped: list[str] = field(default_factory=list)
    """Untracked files left out of the snapshot (too big for code; see workbench.git.snapshot)."""

    def to_dict(self) -> dict:
        return asdict(self)


def ship_code(conn: Connection, project_dir: Path | str, profile, run_id: str, *,
              progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> CodeSnapshot:
    """Put the code of ``project_dir``, as it is now, on the cluster for run ``run_id``.

    ``profile`` is the ClusterProfile (its ``work_root`` is used). ClusterError when the project
    is not in a Git repository, git is missing on the cluster, or the connection fails."""
    from workbench.project import project_key

    report = progress or (lambda _: None)
    report(Progress("Taking a snapshot of the code", 0.0))
    # The cluster is asked which commits it has while the snapshot is taken (the one waits on
    # the network, the other on git here), unless the snapshot may be refused: a refused run
    # leaves nothing on the cluster.
    with ThreadPoolExecutor(1, thread_name_prefix="workbench-code-sync") as pool:
        asked = None
        if _surely_a_snapshot(project_dir, run_id):
            asked = pool.submit(_prepare_remote, conn, profile.work_root, project_key(project_dir))
        snapshot = _commit_working_tree(project_dir, run_id)
        report(Progress("Asking the cluster which commits it has", 0.1))
        layout = asked.result() if asked is not None else _prepare_remote(conn, profile.work_root,
                                                                          project_key(project_dir))
    _check(cancel)
    haves = _commits_known_locally(snapshot, layout.remote_commits)
    _check(cancel)

    scratch = Path(tempfile.mkdtemp(prefix="workbench-bundle-"))
    try:
        bundle = _make_bundle(snapshot, haves, scratch / f"{run_id}.bundle")
        bytes_sent = 0
        if bundle is not None:
            bytes_sent = bundle.stat().st_size
            report(Progress(f"Uploading the code ({_megabytes(bytes_sent)})", 0.2))
            _upload(conn, bundle, layout.incoming(run_id) + ".part",
                    lambda done: report(Progress(f"Uploading the code ({_megabytes(done)} of "
                                                 f"{_megabytes(bytes_sent)})",
                                                 0.2 + 0.6 * done / max(bytes_sent, 1))), cancel)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _check(cancel)

    report(Progress("Checking the code out on the cluster", 0.85))
    checkout = f"{layout.work_root}/runs/{run_id}/code"
    _fetch_and_check_out(conn, layout, run_id, snapshot, received=bytes_sent > 0, checkout=checkout)
    report(Progress("Code is on the cluster", 1.0))
    project_dir_remote = f"{checkout}/{snapshot.project_subdir}" if snapshot.project_subdir else checkout
    return CodeSnapshot(commit=snapshot.commit, dirty=snapshot.dirty, snapshot_ref=snapshot.ref,
                        bytes_sent=bytes_sent, remote_repo=layout.repo, remote_checkout=checkout,
                        remote_project_dir=project_dir_remote, untracked_skipped=list(snapshot.untracked_skipped))


def _surely_a_snapshot(project_dir: Path | str, run_id: str) -> bool:
    """Whether the snapshot cannot be refused for want of a repository or a run id that names
    no ref, told without running git (that would cost as much as it saves): a ``.git`` in the
    folder or above it, and a run id of letters, digits, ``-`` and ``_``."""
    if not _PLAIN_RUN_ID.fullmatch(run_id):
        return False
    folder = Path(project_dir).resolve()
    return any((parent / ".git").exists() for parent in (folder, *folder.parents))


def _commit_working_tree(project_dir: Path | str, run_id: str) -> WorkingTreeCommit:
    """The run's snapshot commit; ClusterError (saying how to start) when there is no repository."""
    try:
        return commit_working_tree(project_dir, run_id)
    except NotARepository:
        raise ClusterError(
            f"Cluster runs ship the code through Git, and {project_dir} is not in a Git repository. "
            "Make it one (Source Control ▸ Initialise Repository, or `git init`), add a .gitignore "
            "for data and run outputs, commit your code (`git add -A` and `git commit`), then run "
            "on the cluster again.") from None
    except GitError as exc:
        raise ClusterError(str(exc)) from exc


def ship_trainkit(conn: Connection, work_root: str, package_dir: Path | str | None = None) -> str:
    """Put the ``workbench_trainkit`` package on the cluster once per version of its files.

    It goes to ``<work_root>/trainkit/<sha256 of its files>/workbench_trainkit``; the folder
    above it (returned) is what PYTHONPATH needs. Skipped when that version is there already."""
    if package_dir is None:
        import workbench_trainkit

        package_dir = Path(workbench_trainkit.__file__).parent
    files = _package_files(Path(package_dir))
    digest = hashlib.sha256()
    for relative, data in files:
        digest.update(relative.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    version = digest.hexdigest()

    root = _remote_path(work_root)
    lines = _answer(_run(conn, f"set -e; mkdir -p {root}/trainkit; cd {root}/trainkit; echo '{_ANSWER}'; pwd; "
                               f"if [ -d {version}/{_TRAINKIT} ]; then echo present; fi", safe_to_repeat=True))
    trainkit_root = lines[0]
    folder = f"{trainkit_root}/{version}"
    if "present" in lines[1:]:
        return folder

    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for relative, data in files:
            info = tarfile.TarInfo(f"{_TRAINKIT}/{relative}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    archive.seek(0)
    # Unpacked beside the final folder and renamed into place, so a folder that exists is complete;
    # unique names let two uploads of the same version race harmlessly.
    part = f"{version}.{uuid.uuid4().hex[:12]}"
    _sftp_call(conn, lambda sftp: sftp.putfo(archive, f"{trainkit_root}/{part}.tar.part"))
    _run(conn, f"set -e; cd {root}/trainkit; trap 'rm -rf {part}.tar.part {part}.dir' EXIT; "
               f"mkdir {part}.dir; tar -x -f {part}.tar.part -C {part}.dir; "
               f"mv -T {part}.dir {version} 2>/dev/null || test -d {version}/{_TRAINKIT}")
    return folder


# ---------------------------------------------------------------------------------------------
# The cluster side


@dataclass(frozen=True)
class _RemoteLayout:
    work_root: str
    """Absolute, as the cluster's shell resolved it (``~`` expanded)."""
    repo: str
    remote_commits: list[str]

    def incoming(self, run_id: str) -> str:
        return f"{self.work_root}/repos/incoming/{run_id}.bundle"


def _prepare_remote(conn: Connection, work_root: str, key: str) -> _RemoteLayout:
    root = _remote_path(work_root)
    result = _run(conn, "\n".join([
        "set -e",
        f"command -v git >/dev/null 2>&1 || exit {_NO_GIT}",
        f"mkdir -p {root}/repos/incoming {root}/runs",
        f"cd {root}",
        f"echo '{_ANSWER}'",
        "pwd",
        f"[ -f repos/{key}.git/HEAD ] || git init -q --bare repos/{key}.git",
        # Stale parts of uploads cut off long ago; a recent one may belong to a running upload.
        "find repos/incoming -maxdepth 1 -name '*.part' -mmin +1440 -delete 2>/dev/null || true",
        f"git --git-dir=repos/{key}.git for-each-ref --format='%(objectname)' refs/workbench/",
    ]), safe_to_repeat=True)
    lines = _answer(result)
    absolute = lines[0]
    return _RemoteLayout(work_root=absolute, repo=f"{absolute}/repos/{key}.git",
                         remote_commits=list(dict.fromkeys(lines[1:])))


def _fetch_and_check_out(conn: Connection, layout: _RemoteLayout, run_id: str, snapshot: WorkingTreeCommit,
                         received: bool, checkout: str) -> None:
    repo, bundle, run_ref = shlex.quote(layout.repo), shlex.quote(layout.incoming(run_id)), RUN_REFS + run_id
    run_dir = shlex.quote(f"{layout.work_root}/runs/{run_id}")
    lines = ["set -e"]
    if received:
        lines += [
            f"trap 'rm -f {bundle} {bundle}.part' EXIT",
            f"mv -f {bundle}.part {bundle}",
            # Fetching checks the bundle's prerequisites and its integrity before any ref moves.
            f"git --git-dir={repo} fetch -q {bundle} '+{snapshot.ref}:{run_ref}'",
        ]
    else:
        # Reachable from a commit the cluster has, so the objects are there: only name it.
        lines.append(f"git --git-dir={repo} update-ref {run_ref} {snapshot.commit}")
    # A fresh checkout built beside the final folder: a retried run never mixes two versions.
    code, building = shlex.quote(checkout), shlex.quote(checkout + ".partial")
    index = shlex.quote(f"{layout.work_root}/runs/{run_id}/.code-index")
    lines += [
        f"mkdir -p {run_dir}",
        f"rm -rf {building} {index}",
        f"mkdir {building}",
        f"export GIT_INDEX_FILE={index}",
        f"git --git-dir={repo} --work-tree={building} read-tree {run_ref}",
        f"git --git-dir={repo} --work-tree={building} checkout-index -a -f",
        f"rm -f {index}",
        f"rm -rf {code}",
        f"mv -T {building} {code}",
    ]
    _run(conn, "\n".join(lines), what="check the code out on the cluster")


def _run(conn: Connection, command: str, what: str = "prepare the cluster for the code",
         safe_to_repeat: bool = False):
    """``command``'s result; ``safe_to_repeat`` for a script that may run twice (a query, a
    ``mkdir -p``), which is then run again once on a new connection if the first one drops."""
    try:
        result = conn.run(command, check=False, retry_if_dropped=safe_to_repeat)
    except _transport_errors() as exc:
        raise ClusterError(f"The connection to the cluster was lost while trying to {what}. "
                           f"Check the network and run again. ({exc})") from exc
    if result.code == _NO_GIT:
        raise ClusterError("Git is not installed on the cluster (or not on the PATH of a login shell). "
                           "Cluster runs ship code through it: ask the cluster's admins to install it, or "
                           "make login shells find it (for example `module load git` in ~/.bash_profile "
                           "on the cluster).")
    if result.code != 0:
        last = next((line for line in reversed(result.stderr.splitlines()) if line.strip()), "no message")
        raise ClusterError(f"Could not {what} (exit status {result.code}): {last.strip()}",
                           details=result.stderr)
    return result


def _answer(result) -> list[str]:
    """The non-empty lines a remote script printed after its ``_ANSWER`` line."""
    lines = result.stdout.splitlines()
    start = max((i for i, line in enumerate(lines) if line.strip() == _ANSWER), default=None)
    if start is None:
        raise ClusterError("The cluster's shell did not answer as expected; check the profile's login "
                           "set-up (shell start-up files).", details=result.stdout + result.stderr)
    return [line.strip() for line in lines[start + 1:] if line.strip()]


def _upload(conn: Connection, local: Path, remote: str, on_bytes, cancel: CancelToken | None) -> None:
    def callback(done: int, _total: int) -> None:
        on_bytes(done)
        _check(cancel)

    _sftp_call(conn, lambda sftp: sftp.put(str(local), remote, callback=callback, confirm=True))


def _sftp_call(conn: Connection, action) -> None:
    try:
        action(conn.sftp())
    except ClusterError:
        raise
    except _transport_errors() as exc:
        raise ClusterError(f"The connection to the cluster was lost while uploading the code. "
                           f"Check the network and run again; nothing half-sent is used. ({exc})") from exc


def _transport_errors() -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (OSError, EOFError)
    paramiko = sys.modules.get("paramiko")  # loaded by the connection if it is a paramiko one
    if paramiko is not None:
        errors += (paramiko.SSHException,)
    return errors


def _remote_path(path: str) -> str:
    """``path`` as one word of a bash command line, with a leading ``~`` meaning the home folder."""
    if path == "~" or path.startswith("~/"):
        rest = path[2:]
        return '"$HOME"' + (f"/{shlex.quote(rest)}" if rest else "")
    return shlex.quote(path)


# ---------------------------------------------------------------------------------------------
# The local side


def _commits_known_locally(snapshot: WorkingTreeCommit, commits: list[str]) -> list[str]:
    """Those of the cluster's commits that this repository has too (it cannot exclude others)."""
    from workbench.git.runner import GitRunner

    if not commits:
        return []
    check = GitRunner(snapshot.repo_root).run(["cat-file", "--batch-check=%(objectname) %(objecttype)"],
                                              input="".join(c + "\n" for c in commits).encode())
    known = []
    for line in check.text.splitlines():
        name, _, kind = line.partition(" ")
        if kind == "commit":
            known.append(name)
    return known


def _make_bundle(snapshot: WorkingTreeCommit, haves: list[str], path: Path) -> Path | None:
    """A bundle of ``snapshot.ref`` without what ``haves`` reach; None when that is nothing."""
    from workbench.git.errors import GitError
    from workbench.git.runner import GitRunner

    runner = GitRunner(snapshot.repo_root)
    revisions = "".join(f"^{commit}\n" for commit in haves).encode()
    try:
        missing = runner.run(["rev-list", "--count", "--stdin", snapshot.commit], input=revisions)
        if int(missing.text.strip() or "0") == 0:
            return None
        runner.run(["bundle", "create", "-q", str(path), "--stdin"],
                   input=(snapshot.ref + "\n").encode() + revisions)
    except GitError as exc:
        raise ClusterError(f"Could not pack the code for the cluster: {exc}") from exc
    return path


def _package_files(package_dir: Path) -> list[tuple[str, bytes]]:
    if not (package_dir / "__init__.py").is_file():
        raise ClusterError(f"{package_dir} is not the workbench_trainkit package; reinstall Workbench.")
    files = []
    for path in sorted(package_dir.rglob("*")):
        relative = path.relative_to(package_dir)
        if path.is_file() and "__pycache__" not in relative.parts and path.suffix not in {".pyc", ".pyo"}:
            files.append((relative.as_posix(), path.read_bytes()))
    return files


def _check(cancel: CancelToken | None) -> None:
    if cancel is not None:
        cancel.raise_if_cancelled()


def _megabytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 100_000 else f"{count / 1e3:.1f} kB"
