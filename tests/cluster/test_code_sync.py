"""Shipping a project's exact code to the cluster through Git, over a real sshd."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.git.conftest import git, git_identity, make_repo  # noqa: F401  (fixtures)
from tests.services.sshd import start_sshd, stop_sshd_process
from workbench.cluster.code_sync import ship_code, ship_trainkit
from workbench.cluster.connection import ClusterConnection
from workbench.cluster.errors import ClusterError
from workbench.git import snapshot as git_snapshot


@pytest.fixture
def cluster(cluster_profile):
    """A connection to the session's real sshd, and the work root it uses (a local folder, as
    the "cluster" is this machine)."""
    conn = ClusterConnection(cluster_profile)
    try:
        yield SimpleNamespace(conn=conn, profile=cluster_profile, work_root=Path(cluster_profile.work_root))
    finally:
        conn.close()


def remote_git(cluster, *args):
    repos = list((cluster.work_root / "repos").glob("*.git"))
    assert len(repos) == 1
    return git(repos[0], *args)


def files_under(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def test_a_clean_tree_ships_head_itself_and_checks_it_out(make_repo, cluster):
    repo = make_repo(files={"train.py": "print('train')\n", "lib/model.py": "class Net: pass\n"})
    head = git(repo, "rev-parse", "HEAD").strip()

    shipped = ship_code(cluster.conn, repo, cluster.profile, "run-1")

    assert (shipped.commit, shipped.dirty) == (head, False)
    assert shipped.snapshot_ref == "refs/workbench/snapshots/run-1"
    assert git(repo, "rev-parse", shipped.snapshot_ref).strip() == head
    assert shipped.remote_checkout == f"{cluster.work_root}/runs/run-1/code"
    assert files_under(Path(shipped.remote_checkout)) == {"lib/model.py": b"class Net: pass\n",
                                                          "train.py": b"print('train')\n"}
    assert remote_git(cluster, "rev-parse", "refs/workbench/runs/run-1").strip() == head
    assert shipped.bytes_sent > 0
    # The bundle was deleted once fetched; nothing else is left beside the checkout.
    assert list((cluster.work_root / "repos" / "incoming").iterdir()) == []
    assert sorted(p.name for p in (cluster.work_root / "runs" / "run-1").iterdir()) == ["code"]


def test_uncommitted_and_untracked_work_ships_as_a_snapshot_without_touching_index_head_or_stash(
        make_repo, cluster, monkeypatch):
    repo = make_repo(files={"train.py": "print(1)\n", "old.py": "gone\n", ".gitignore": "runs/\n*.log\n"})
    git(repo, "stash", "list")
    (repo / "stashed.py").write_text("x\n")
    git(repo, "add", "stashed.py")
    git(repo, "stash", "-q")
    (repo / "train.py").write_text("print(2)\n")
    (repo / "staged.py").write_text("staged = True\n")
    git(repo, "add", "staged.py")
    (repo / "staged.py").write_text("staged = 'and edited after'\n")
    (repo / "old.py").unlink()
    (repo / "new_model.py").write_text("class Net: pass\n")
    (repo / "notes.log").write_text("ignored\n")
    (repo / "runs").mkdir()
    (repo / "runs" / "metrics.jsonl").write_text("{}\n")
    (repo / "weights.bin").write_bytes(os.urandom(3000))
    monkeypatch.setattr(git_snapshot, "COMMIT_MAX_UNTRACKED_BYTES", 2000)
    head = git(repo, "rev-parse", "HEAD").strip()
    before = ((repo / ".git" / "index").read_bytes(), git(repo, "status", "--porcelain"),
              git(repo, "stash", "list"), git(repo, "symbolic-ref", "HEAD"), git(repo, "for-each-ref"))

    shipped = ship_code(cluster.conn, repo, cluster.profile, "run-2")

    after = ((repo / ".git" / "index").read_bytes(), git(repo, "status", "--porcelain"),
             git(repo, "stash", "list"), git(repo, "symbolic-ref", "HEAD"),
             "".join(line + "\n" for line in git(repo, "for-each-ref").splitlines()
                     if "refs/workbench/" not in line))
    assert after == before
    assert shipped.dirty and shipped.commit != head
    assert git(repo, "rev-parse", f"{shipped.commit}^").strip() == head
    assert git(repo, "rev-parse", "refs/workbench/snapshots/run-2").strip() == shipped.commit
    assert shipped.untracked_skipped == ["weights.bin"]
    assert files_under(Path(shipped.remote_checkout)) == {
        ".gitignore": b"runs/\n*.log\n", "new_model.py": b"class Net: pass\n",
        "staged.py": b"staged = 'and edited after'\n", "train.py": b"print(2)\n"}


def test_a_project_without_changes_since_a_shipped_commit_sends_nothing(make_repo, cluster):
    repo = make_repo(files={"train.py": "print(1)\n"})
    first = ship_code(cluster.conn, repo, cluster.profile, "run-a")
    git(repo, "commit", "-q", "--allow-empty", "-m", "empty")  # new commit, same tree
    git(repo, "checkout", "-q", "HEAD~1")  # back on the shipped commit

    again = ship_code(cluster.conn, repo, cluster.profile, "run-b")

    assert again.commit == first.commit and again.bytes_sent == 0
    assert files_under(Path(again.remote_checkout)) == {"train.py": b"print(1)\n"}
    assert remote_git(cluster, "rev-parse", "refs/workbench/runs/run-b").strip() == first.commit


def test_the_second_run_of_a_project_sends_only_the_new_objects(make_repo, cluster, record_property):
    repo = make_repo(files={"train.py": "lr = 0.1\n"})
    (repo / "assets").mkdir()
    for number in range(4):
        (repo / "assets" / f"table{number}.bin").write_bytes(os.urandom(1_000_000))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "assets")

    first = ship_code(cluster.conn, repo, cluster.profile, "run-1")
    (repo / "train.py").write_text("lr = 0.2\n")
    second = ship_code(cluster.conn, repo, cluster.profile, "run-2")

    record_property("bytes_sent", {"first": first.bytes_sent, "second": second.bytes_sent})
    print(f"\nbytes sent: first {first.bytes_sent}, second {second.bytes_sent}")
    assert first.bytes_sent > 4_000_000
    assert second.bytes_sent < 2_000
    assert (Path(second.remote_checkout) / "train.py").read_text() == "lr = 0.2\n"
    assert (Path(second.remote_checkout) / "assets" / "table3.bin").read_bytes() == \
        (repo / "assets" / "table3.bin").read_bytes()
    assert (Path(first.remote_checkout) / "train.py").read_text() == "lr = 0.1\n"


def test_a_run_shipped_again_gets_a_fresh_checkout(make_repo, cluster):
    repo = make_repo(files={"train.py": "print(1)\n", "extra.py": "x\n"})
    shipped = ship_code(cluster.conn, repo, cluster.profile, "run-1")
    (Path(shipped.remote_checkout) / "leftover.txt").write_text("from an earlier try\n")
    (repo / "extra.py").unlink()

    again = ship_code(cluster.conn, repo, cluster.profile, "run-1")

    assert files_under(Path(again.remote_checkout)) == {"train.py": b"print(1)\n"}


def test_a_project_in_a_sub_folder_of_its_repository_points_at_that_folder(make_repo, cluster):
    repo = make_repo(files={"README": "mono\n", "vision/train.py": "print(1)\n"})

    shipped = ship_code(cluster.conn, repo / "vision", cluster.profile, "run-1")

    assert shipped.remote_project_dir == f"{shipped.remote_checkout}/vision"
    assert (Path(shipped.remote_project_dir) / "train.py").read_text() == "print(1)\n"


def test_a_repository_without_commits_ships_its_files(make_repo, cluster):
    repo = make_repo()
    (repo / "train.py").write_text("print(1)\n")

    shipped = ship_code(cluster.conn, repo, cluster.profile, "run-1")

    assert shipped.dirty
    assert git(repo, "rev-list", "--parents", "-n1", shipped.commit).split() == [shipped.commit]
    assert files_under(Path(shipped.remote_checkout)) == {"train.py": b"print(1)\n"}
    assert git(repo, "status", "--porcelain") == "?? train.py\n"


def test_a_project_outside_git_is_refused_with_how_to_start(tmp_path, cluster):
    project = tmp_path / "plain"
    project.mkdir()
    (project / "train.py").write_text("print(1)\n")

    with pytest.raises(ClusterError) as caught:
        ship_code(cluster.conn, project, cluster.profile, "run-1")

    message = str(caught.value)
    assert "through Git" in message and "git init" in message and "commit" in message
    assert not cluster.work_root.exists()


def test_what_login_scripts_print_does_not_confuse_it(make_repo, cluster):
    class ChattyLogin:  # a cluster whose shell start-up files greet on stdout
        def run(self, command, timeout=None, check=True, retry_if_dropped=False):
            result = cluster.conn.run(command, timeout, check, retry_if_dropped)
            return replace(result, stdout="Welcome to the cluster!\n/scratch is full\n" + result.stdout)

        def sftp(self):
            return cluster.conn.sftp()

    repo = make_repo(files={"train.py": "print(1)\n"})

    shipped = ship_code(ChattyLogin(), repo, cluster.profile, "run-1")
    kit = ship_trainkit(ChattyLogin(), cluster.profile.work_root)

    assert (Path(shipped.remote_checkout) / "train.py").read_text() == "print(1)\n"
    assert Path(kit).parent == cluster.work_root / "trainkit"


def test_a_run_id_that_cannot_name_a_ref_is_refused_before_anything_is_sent(make_repo, cluster):
    repo = make_repo(files={"train.py": "print(1)\n"})

    with pytest.raises(ClusterError, match="cannot name a Git ref"):
        ship_code(cluster.conn, repo, cluster.profile, "run 1..")

    assert not cluster.work_root.exists()
    assert "refs/workbench/" not in git(repo, "for-each-ref")


def test_a_snapshot_without_a_git_identity_still_commits(make_repo, cluster, monkeypatch):
    repo = make_repo(files={"train.py": "print(1)\n"})
    git(repo, "config", "--unset", "user.name")
    git(repo, "config", "--unset", "user.email")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("EMAIL", "")
    (repo / "train.py").write_text("print(2)\n")

    shipped = ship_code(cluster.conn, repo, cluster.profile, "run-1")

    assert shipped.dirty
    assert (Path(shipped.remote_checkout) / "train.py").read_text() == "print(2)\n"


def test_the_trainkit_goes_up_once_per_version(cluster, tmp_path):
    package = tmp_path / "kit" / "workbench_trainkit"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VERSION = 1\n")
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.pyc").write_bytes(b"junk")

    folder = ship_trainkit(cluster.conn, cluster.profile.work_root, package)
    untouched = (cluster.work_root / "trainkit").stat().st_mtime_ns
    again = ship_trainkit(cluster.conn, cluster.profile.work_root, package)
    assert (cluster.work_root / "trainkit").stat().st_mtime_ns == untouched  # nothing uploaded
    (package / "__init__.py").write_text("VERSION = 2\n")
    changed = ship_trainkit(cluster.conn, cluster.profile.work_root, package)

    assert folder == again != changed
    assert Path(folder).parent == cluster.work_root / "trainkit"
    assert files_under(Path(folder)) == {"workbench_trainkit/__init__.py": b"VERSION = 1\n"}
    assert files_under(Path(changed)) == {"workbench_trainkit/__init__.py": b"VERSION = 2\n"}
    assert sorted(p.name for p in (cluster.work_root / "trainkit").iterdir()) == sorted(
        [Path(folder).name, Path(changed).name])
    imported = subprocess.run(["python3", "-c", "import workbench_trainkit as k; print(k.VERSION)"],
                              env={**os.environ, "PYTHONPATH": folder}, cwd=tmp_path, capture_output=True,
                              text=True)
    assert imported.stdout == "1\n"


def test_the_real_trainkit_package_is_found_and_shipped_whole(cluster):
    import workbench_trainkit

    folder = ship_trainkit(cluster.conn, cluster.profile.work_root)

    source = Path(workbench_trainkit.__file__).parent
    expected = {f"workbench_trainkit/{name}": data for name, data in files_under(source).items()
                if "__pycache__" not in name}
    assert files_under(Path(folder)) == expected


def test_a_cluster_without_git_is_told_plainly(make_repo, cluster_profile_for, sshd_server, tmp_path):
    repo = make_repo(files={"train.py": "print(1)\n"})
    (tmp_path / "empty-bin").mkdir()
    profile = cluster_profile_for(sshd_server, env={"PATH": str(tmp_path / "empty-bin")})

    with ClusterConnection(profile) as conn, pytest.raises(ClusterError) as caught:
        ship_code(conn, repo, profile, "run-1")

    assert "Git is not installed on the cluster" in str(caught.value)


def sshd_children(listener: int) -> list[int]:
    """The processes under sshd's listener: one set per connection it serves."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [listener]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


@pytest.mark.slow
def test_a_connection_cut_mid_upload_fetches_nothing_and_the_next_ship_works(
        make_repo, cluster_profile_for, tmp_path):
    # An sshd of this test's own, so ending its children cuts only this test's connection.
    server = start_sshd(tmp_path / "sshd")
    try:
        profile = cluster_profile_for(server)
        work_root = Path(profile.work_root)
        repo = make_repo(files={"train.py": "print(1)\n"})
        (repo / "weights.bin").write_bytes(os.urandom(6_000_000))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "big")
        cut = []

        def cut_mid_upload(report):
            if report.message.startswith("Uploading the code (") and " of " in report.message and not cut:
                cut.extend(sshd_children(server.process.pid))
                for pid in cut:
                    os.kill(pid, 9)

        conn = ClusterConnection(profile)
        with pytest.raises(ClusterError) as caught:
            ship_code(conn, repo, profile, "run-1", progress=cut_mid_upload)
        conn.close()
        assert "lost" in str(caught.value)

        assert cut
        remote = next((work_root / "repos").glob("*.git"))
        assert git(remote, "for-each-ref") == ""
        assert not (work_root / "runs" / "run-1").exists()
        leftovers = [p.name for p in (work_root / "repos" / "incoming").iterdir()]
        assert leftovers in ([], ["run-1.bundle.part"])
        if leftovers:
            assert (work_root / "repos" / "incoming" / "run-1.bundle.part").stat().st_size < 6_000_000

        with ClusterConnection(profile) as conn:
            shipped = ship_code(conn, repo, profile, "run-1")
        assert shipped.bytes_sent > 6_000_000
        assert git(remote, "rev-parse", "refs/workbench/runs/run-1").strip() == shipped.commit
        assert (Path(shipped.remote_checkout) / "weights.bin").read_bytes() == (repo / "weights.bin").read_bytes()
        assert list((work_root / "repos" / "incoming").iterdir()) == []
    finally:
        stop_sshd_process(server.process)
