"""Syncing a project's data to the cluster over a real sshd: only changes travel, every file lands
whole, a cut sync resumes, and nothing is left out without a reason."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.services.sshd import start_sshd, stop_sshd_process
from workbench.cluster import data_runner, data_selection, data_sync, data_transfer
from workbench.cluster.connection import ClusterConnection
from workbench.cluster.data_selection import DataSettings, excluded_by, read_data_settings, select_data
from workbench.cluster.data_sync import SyncProgress, plan_sync, sync_data
from workbench.cluster.errors import ClusterError, ConnectionLost
from workbench.project.project_file import data_hash_cache
from workbench.cluster.profiles import ClusterProfile
from workbench.project.project_file import project_key
from workbench.tasks import CancelToken, Cancelled

pytestmark = pytest.mark.slow


def connect(server, tmp_path: Path, data_root: Path) -> tuple[ClusterConnection, ClusterProfile]:
    profile = ClusterProfile(name="testsshd", host=server.host, port=server.port, user=server.user,
                             key_file=str(server.client_key), work_root=str(tmp_path / "work"),
                             data_root=str(data_root), scheduler="ssh")
    conn = ClusterConnection(profile, known_hosts=tmp_path / "known_hosts", accept_new_host=True,
                             user_known_hosts_file=None)
    return conn.connect(), profile


@pytest.fixture
def cluster(sshd_server, tmp_path):
    data_root = tmp_path / "cluster-data"
    conn, profile = connect(sshd_server, tmp_path, data_root)
    yield conn, profile
    conn.close()


def make_project(root: Path, toml: str = '[cluster]\ndata = ["data/"]\n') -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "workbench.toml").write_text(toml)
    return root


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def many_files(project: Path, count: int, folders: int = 10) -> list[Path]:
    files = []
    for n in range(count):
        files.append(write(project / "data" / f"part{n % folders}" / f"sample_{n:04d}.bin",
                           os.urandom(200 + (n * 131) % 3000)))
    return files


def remote_dir(profile, project: Path) -> Path:
    return Path(profile.data_root) / project_key(project)


def tree(folder: Path, skip_internal: bool = True) -> dict[str, bytes]:
    """Every regular file under ``folder`` by relative path (the sync's own files left out)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if skip_internal and (rel.startswith((".manifest.json", ".wb-staging")) or rel.endswith(".part")):
            continue
        if path.is_file() and not path.is_symlink():
            out[rel] = path.read_bytes()
    return out


def local_data(project: Path) -> dict[str, bytes]:
    return {f"data/{rel}": data for rel, data in tree(project / "data", skip_internal=False).items()}


# ---------------------------------------------------------------------------------------------
# Settings and selection (no cluster)


def test_exclude_patterns_match_names_anywhere_and_paths_from_the_project_folder():
    assert excluded_by("data/a/b.tmp", False, ("*.tmp",)) == "*.tmp"
    assert excluded_by("data/cache", True, ("data/cache/",)) == "data/cache/"
    assert excluded_by("data/cache", False, ("data/cache/",)) is None  # a trailing / means folders only
    assert excluded_by("data/x/raw", True, ("data/*/raw",)) == "data/*/raw"
    assert excluded_by("raw", True, ("data/*/raw",)) is None
    assert excluded_by("logs", True, ("**/logs",)) == "**/logs"
    assert excluded_by("data/deep/logs", True, ("**/logs",)) == "**/logs"
    assert excluded_by("data/keep.bin", False, ("*.tmp", "/other")) is None


def test_settings_with_a_wrong_type_or_a_path_outside_the_project_are_refused(tmp_path):
    with pytest.raises(ClusterError, match="must be a list of strings"):
        read_data_settings({"cluster": {"data": 3}}, tmp_path)
    with pytest.raises(ClusterError, match="inside the project folder"):
        read_data_settings({"cluster": {"data": ["../elsewhere"]}}, tmp_path)
    with pytest.raises(ClusterError, match="inside the project folder"):
        read_data_settings({"cluster": {"data": ["/etc"]}}, tmp_path)
    with pytest.raises(ClusterError, match="data_refs"):
        read_data_settings({"cluster": {"data_refs": {"imagenet": 5}}}, tmp_path)
    settings = read_data_settings({"cluster": {"data": ["data/", "./data", "labels.csv"],
                                               "data_refs": {"data/big": "/shared/big"}}}, tmp_path)
    assert settings.data == ("data", "labels.csv")
    assert [(ref.name, ref.remote_path) for ref in settings.refs] == [("data/big", "/shared/big")]


def test_the_readme_documents_the_cluster_table_with_an_example_the_settings_accept(tmp_path):
    import re
    import tomllib

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### The `[cluster]` table of `workbench.toml`", 1)[1].split("\n## ", 1)[0]
    example = tomllib.loads(re.search(r"```toml\n(.*?)```", section, re.S).group(1))
    assert set(example["cluster"]) == {"data", "exclude", "data_refs"}
    settings = read_data_settings(example, tmp_path)
    assert settings.data and settings.exclude and settings.refs
    for key in example["cluster"]:
        assert f"- **`{key}`**" in section, key


def test_selection_reports_every_file_it_leaves_out_with_the_reason(tmp_path, monkeypatch):
    project = make_project(tmp_path / "p")
    write(project / "data" / "keep.bin", b"k")
    write(project / "data" / "scratch.tmp", b"t")
    write(project / "data" / "cache" / "c.bin", b"c")
    write(project / "data" / "secret.bin", b"s")
    os.symlink(project / "data" / "keep.bin", project / "data" / "link.bin")
    os.mkfifo(project / "data" / "pipe")
    (project / "data" / "secret.bin").chmod(0)
    if os.geteuid() == 0:  # root reads any file: refuse this one as the OS would for a user
        real = data_selection._readable
        monkeypatch.setattr(data_selection, "_readable", lambda p: not p.name == "secret.bin" and real(p))
    settings = DataSettings(data=("data", "missing.csv"), exclude=("*.tmp", "data/cache/"))

    selection = select_data(project, settings)

    assert [f.path for f in selection.files] == ["data/keep.bin"]
    assert {s.path: s.reason for s in selection.excluded} == {
        "data/cache/": "matches the exclude pattern 'data/cache/'",
        "data/scratch.tmp": "matches the exclude pattern '*.tmp'"}
    skipped = {s.path: s.reason for s in selection.skipped}
    assert skipped.keys() == {"data/link.bin", "data/pipe", "data/secret.bin", "missing.csv"}
    assert skipped["data/link.bin"].startswith("symbolic link")
    assert skipped["data/pipe"].startswith("special file (named pipe)")
    assert skipped["data/secret.bin"] == "cannot be read: permission denied"
    assert skipped["missing.csv"].startswith("does not exist")


def test_a_bundle_is_a_tar_archive_of_the_files_and_the_script_that_moves_them_into_place(tmp_path):
    import io
    import tarfile

    long_name = "data/" + "deep/" * 30 + "file.bin"
    files = [write(tmp_path / rel, os.urandom(n)) for rel, n in
             (("data/a/one.bin", 10), ("data/a/two words.bin", 600), ("top.txt", 0), (long_name, 3))]
    listed = [data_selection.LocalFile(p.relative_to(tmp_path).as_posix(), p, p.stat().st_size,
                                       p.stat().st_mtime_ns, 0o644) for p in files]

    class Sink(io.BytesIO):
        def set_pipelined(self, _on):
            pass

        def close(self):
            self.kept = self.getvalue()

    sink = Sink()
    writer = data_transfer.BundleWriter(type("Sftp", (), {"open": lambda *_a, **_k: sink})(), "/r", "b1")
    for item in listed:
        writer.add(item)
    job = writer.finish("/r")

    archive = tarfile.open(fileobj=io.BytesIO(sink.kept))
    names = archive.getnames()
    assert names == [f"d/{item.path}" for item in listed] + ["apply.sh"]
    for item in listed:
        assert archive.extractfile(f"d/{item.path}").read() == item.local.read_bytes()
    script = archive.extractfile("apply.sh").read().decode()
    assert "mv -f -t \"$R\"/data/a -- data/a/one.bin 'data/a/two words.bin'" in script
    assert "mv -f -t \"$R\" -- top.txt" in script
    assert len(sink.kept) == writer.sent_bytes and [m[0] for m in job.members] == listed


def test_without_a_connection_the_plan_lists_the_local_side_as_to_send(tmp_path):
    project = make_project(tmp_path / "p", '[cluster]\ndata = ["data/"]\nexclude = ["*.tmp"]\n')
    write(project / "data" / "a.bin", b"abc")
    write(project / "data" / "b.tmp", b"t")
    profile = ClusterProfile(name="offline", host="cluster.example.org", data_root="/scratch/me")

    plan = plan_sync(None, project, profile)

    assert plan.remote_dir == f"/scratch/me/{project_key(project)}"
    assert [(f.path, f.size) for f in plan.send] == [("data/a.bin", 3)]
    assert "not connected" in plan.send[0].reason and [s.path for s in plan.excluded] == ["data/b.tmp"]


def test_the_whole_project_as_data_leaves_out_git_runs_and_workbench_state(tmp_path):
    project = make_project(tmp_path / "p", '[cluster]\ndata = ["."]\n')
    write(project / "train.csv", b"x")
    write(project / ".git" / "HEAD", b"ref")
    write(project / ".workbench" / "state.json", b"{}")
    write(project / "runs" / "1" / "run.json", b"{}")
    write(project / "data" / "runs" / "kept.bin", b"k")

    selection = select_data(project, read_data_settings({"cluster": {"data": ["."]}}, project))

    assert [f.path for f in selection.files] == ["data/runs/kept.bin", "train.csv", "workbench.toml"]
    assert [s.path for s in selection.excluded] == [".git/", ".workbench/", "runs/"]


# ---------------------------------------------------------------------------------------------
# Syncing over the real sshd


def test_a_first_sync_sends_everything_and_the_cluster_tree_is_byte_identical(cluster, tmp_path):
    conn, profile = cluster
    project = make_project(tmp_path / "p")
    many_files(project, 300)
    write(project / "data" / "big" / "weights.bin", os.urandom(3 * 1024 * 1024 + 17))
    write(project / "data" / "empty.txt", b"")
    write(project / "data" / "name with spaces & 'quotes'.txt", b"odd name")
    local = local_data(project)
    reports = []

    report = sync_data(conn, project, profile, progress=reports.append)

    assert tree(remote_dir(profile, project)) == local
    assert report.files_sent == len(local) and report.files_unchanged == 0
    assert report.bytes_sent >= sum(map(len, local.values()))
    assert report.skipped == [] and report.remote_dir == str(remote_dir(profile, project))
    last = reports[-1]
    assert isinstance(last, SyncProgress)
    assert (last.files_done, last.files_total) == (len(local), len(local))
    assert last.bytes_done == last.bytes_total == sum(map(len, local.values()))
    # Nothing of the sync's own machinery is left behind on the cluster.
    leftovers = [p.name for p in remote_dir(profile, project).rglob("*") if p.name.endswith(".part")]
    assert leftovers == [] and list((remote_dir(profile, project) / ".wb-staging").iterdir()) == []


def test_a_second_sync_after_changing_one_percent_sends_about_one_percent(cluster, tmp_path):
    conn, profile = cluster
    project = make_project(tmp_path / "p")
    files = many_files(project, 400)
    first = sync_data(conn, project, profile)
    for path in files[::100]:
        path.write_bytes(os.urandom(path.stat().st_size))

    second = sync_data(conn, project, profile)

    assert second.files_sent == 4 and second.files_unchanged == 396
    assert second.bytes_sent / first.bytes_sent <= 0.02
    assert tree(remote_dir(profile, project)) == local_data(project)


def test_changing_only_the_modification_time_sends_nothing_but_refreshes_the_hash_cache(cluster, tmp_path):
    conn, profile = cluster
    project = make_project(tmp_path / "p")
    files = many_files(project, 20)
    sync_data(conn, project, profile)
    touched = files[3]
    later = time.time() + 100
    os.utime(touched, (later, later))
    rel = touched.relative_to(project).as_posix()
    mtime = touched.stat().st_mtime_ns

    report = sync_data(conn, project, profile)

    assert (report.files_sent, report.bytes_sent, report.files_unchanged) == (0, 0, 20)
    assert data_hash_cache(project).lookup(rel, touched.stat().st_size, mtime) is not None


def test_unchanged_files_are_not_read_again(cluster, tmp_path, monkeypatch):
    conn, profile = cluster
    project = make_project(tmp_path / "p")
    many_files(project, 30)
    sync_data(conn, project, profile)
    read = []
    original = data_sync.hash_file
    monkeypatch.setattr(data_sync, "hash_file", lambda path, cancel=None: read.append(path) or original(path))

    report = sync_data(conn, project, profile)

    assert report.files_unchanged == 30 and read == []


def test_a_file_whose_size_on_the_cluster_differs_from_the_manifest_is_sent_again(cluster, tmp_path):
    conn, profile = cluster
    project = make_project(tmp_path / "p")
    many_files(project, 10)
    sync_data(conn, project, profile)
    damaged = remote_dir(profile, project) / "data" / "part3" / "sample_0003.bin"
    damaged.write_bytes(damaged.read_bytes()[:50])
    (remote_dir(profile, project) / "data" / "part4" / "sample_0004.bin").unlink()

    plan = plan_sync(conn, project, profile)
    report = sync_data(conn, project, profile)

    assert {(f.path, f.reason) for f in plan.send} == {("data/part3/sample_0003.bin", "changed on the cluster"),
                                                      ("data/part4/sample_0004.bin", "missing on the cluster")}
    assert report.files_sent == 2
    assert tree(remote_dir(profile, project)) == local_data(project)


def test_the_plan_lists_what_a_sync_would_do_and_sends_nothing(cluster, tmp_path):
    conn, profile = cluster
    project = make_project(tmp_path / "p", '[cluster]\ndata = ["data/"]\nexclude = ["*.tmp"]\n')
    many_files(project, 5)
    write(project / "data" / "notes.tmp", b"x")
    sync_data(conn, project, profile)
    write(project / "data" / "new.bin", b"new")
    (project / "data" / "part0" / "sample_0000.bin").unlink()
    os.symlink("/etc/hostname", project / "data" / "link")

    plan = plan_sync(conn, project, profile)

    assert [(f.path, f.reason) for f in plan.send] == [("data/new.bin", "new")]
    assert plan.bytes_to_send == 3
    assert len(plan.unchanged) == 4
    assert plan.deleted == ["data/part0/sample_0000.bin"]
    assert [s.path for s in plan.excluded] == ["data/notes.tmp"]
    assert [s.path for s in plan.skipped] == ["data/link"]
    assert not (remote_dir(profile, project) / "data" / "new.bin").exists()
    text = "\n".join(plan.lines())
    assert "send      data/new.bin" in text and "skip      data/link  (symbolic link" in text
    assert "1 to send (3 B), 4 unchanged, 1 skipped, 1 excluded, 1 deleted locally" in text


def test_files_deleted_locally_are_reported_and_removed_on_the_cluster_only_when_asked(cluster, tmp_path):
    conn, profile = cluster
    project = make_project(tmp_path / "p")
    many_files(project, 6, folders=3)
    sync_data(conn, project, profile)
    gone = project / "data" / "part1" / "sample_0001.bin"
    gone.unlink()
    remote = remote_dir(profile, project) / "data" / "part1" / "sample_0001.bin"

    kept = sync_data(conn, project, profile)
    assert kept.deleted == ["data/part1/sample_0001.bin"] and kept.removed == [] and remote.exists()

    removed = sync_data(conn, project, profile, delete=True)
    assert removed.removed == ["data/part1/sample_0001.bin"] and not remote.exists()
    assert sync_data(conn, project, profile).deleted == []


def test_excluded_and_skipped_files_are_reported_and_not_sent(cluster, tmp_path):
    conn, profile = cluster
    project = make_project(tmp_path / "p", '[cluster]\ndata = ["data/", "labels.csv"]\n'
                                           'exclude = ["*.tmp", "data/cache/"]\n')
    write(project / "data" / "keep.bin", b"keep")
    write(project / "data" / "x.tmp", b"tmp")
    write(project / "data" / "cache" / "c.bin", b"cache")
    os.symlink(project / "data" / "keep.bin", project / "data" / "alias.bin")
    os.mkfifo(project / "data" / "fifo")

    report = sync_data(conn, project, profile)

    assert tree(remote_dir(profile, project)) == {"data/keep.bin": b"keep"}
    assert {s.path for s in report.excluded} == {"data/x.tmp", "data/cache/"}
    assert {s.path for s in report.skipped} == {"data/alias.bin", "data/fifo", "labels.csv"}
    assert all(s.reason for s in report.skipped + report.excluded)


def test_data_references_are_linked_on_the_cluster_and_never_uploaded(cluster, tmp_path):
    conn, profile = cluster
    shared = tmp_path / "shared" / "imagenet"
    write(shared / "train" / "0.jpg", b"on the cluster already")
    project = make_project(tmp_path / "p", '[cluster]\ndata = ["data/"]\n[cluster.data_refs]\n'
                                           f'"data/imagenet" = "{shared}"\nmissing = "/nowhere/at/all"\n')
    write(project / "data" / "labels.csv", b"a,b\n")
    write(project / "data" / "imagenet" / "sample.jpg", b"local sample for local runs")

    report = sync_data(conn, project, profile)

    remote = remote_dir(profile, project)
    assert tree(remote) == {"data/labels.csv": b"a,b\n"}
    assert os.readlink(remote / "data" / "imagenet") == str(shared)
    assert (remote / "data" / "imagenet" / "train" / "0.jpg").read_bytes() == b"on the cluster already"
    assert [s.path for s in report.excluded] == ["data/imagenet/"]
    assert "referenced on the cluster" in report.excluded[0].reason
    assert {(r.name, r.exists) for r in report.refs} == {("data/imagenet", True), ("missing", False)}
    assert report.files_sent == 1


def test_a_sync_cut_mid_file_leaves_no_corrupt_file_and_the_next_one_resumes_from_the_part(tmp_path):
    server = start_sshd(tmp_path / "own-sshd")  # its own server: the test kills its connection
    try:
        data_root = tmp_path / "cluster-data"
        conn, profile = connect(server, tmp_path, data_root)
        project = make_project(tmp_path / "p")
        many_files(project, 40)
        sync_data(conn, project, profile)
        # Cut while only the upload runs, no remote command: a login shell killed halfway can leave
        # the machine's shell start-up (pyenv's rehash lock) blocking later logins for a minute.
        big = write(project / "data" / "model" / "weights.bin", os.urandom(40 * 1024 * 1024))

        def cut_mid_file(report: SyncProgress) -> None:
            if report.bytes_done > 12 * 1024 * 1024:
                for pid in _descendants(server.process.pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:  # ended with its parent
                        pass

        with pytest.raises(ConnectionLost):
            sync_data(conn, project, profile, progress=cut_mid_file)
        conn.close()

        remote = remote_dir(profile, project)
        part = remote / "data" / "model" / "weights.bin.part"
        assert not (remote / "data" / "model" / "weights.bin").exists()
        assert 0 < part.stat().st_size < big.stat().st_size
        local = local_data(project)
        assert tree(remote) == {rel: data for rel, data in local.items() if rel != "data/model/weights.bin"}

        conn, profile = connect(server, tmp_path, data_root)
        resumed = sync_data(conn, project, profile)
        conn.close()

        assert resumed.resumed == ["data/model/weights.bin"]
        assert resumed.bytes_sent < big.stat().st_size
        assert tree(remote) == local
        assert not part.exists()
    finally:
        stop_sshd_process(server.process)


def test_a_part_left_by_another_version_of_the_file_is_replaced_by_a_whole_send(cluster, tmp_path):
    conn, profile = cluster
    project = make_project(tmp_path / "p")
    big = write(project / "data" / "weights.bin", os.urandom(2 * 1024 * 1024))
    remote = remote_dir(profile, project)
    write(remote / "data" / "weights.bin.part", os.urandom(700_000))  # the start of some other file

    plan = plan_sync(conn, project, profile)
    report = sync_data(conn, project, profile)

    assert plan.send[0].resume_from == 700_000
    assert report.resumed == [] and report.files_sent == 1
    assert (remote / "data" / "weights.bin").read_bytes() == big.read_bytes()
    assert not (remote / "data" / "weights.bin.part").exists()


def test_files_that_landed_without_a_manifest_are_recognised_by_their_hash(cluster, tmp_path):
    conn, profile = cluster
    project = make_project(tmp_path / "p")
    many_files(project, 12)
    sync_data(conn, project, profile)
    remote = remote_dir(profile, project)
    (remote / ".manifest.json").unlink()
    (remote / "data" / "part2" / "sample_0002.bin").write_bytes(b"not the same, same size?")

    report = sync_data(conn, project, profile)

    assert report.files_sent == 1 and report.files_unchanged == 11
    assert tree(remote) == local_data(project)
    assert (remote / ".manifest.json").exists()


def test_cancelling_stops_the_sync_and_what_landed_is_kept(cluster, tmp_path):
    conn, profile = cluster
    project = make_project(tmp_path / "p")
    many_files(project, 10)
    big = write(project / "data" / "z" / "weights.bin", os.urandom(8 * 1024 * 1024))
    token = CancelToken()

    def cancel_mid_file(report: SyncProgress) -> None:
        if report.bytes_done > big.stat().st_size // 2:
            token.cancel()

    with pytest.raises(Cancelled):
        sync_data(conn, project, profile, progress=cancel_mid_file, cancel=token)

    remote = remote_dir(profile, project)
    assert not (remote / "data" / "z" / "weights.bin").exists()
    assert len(tree(remote)) == 10  # the small files landed and are in the manifest
    again = sync_data(conn, project, profile)
    assert again.files_sent == 1 and again.resumed == ["data/z/weights.bin"] and again.files_unchanged == 10
    assert tree(remote) == local_data(project)


def test_many_folders_are_listed_with_one_remote_command(cluster, tmp_path, monkeypatch):
    conn, profile = cluster
    project = make_project(tmp_path / "p")
    many_files(project, 60, folders=60)
    sync_data(conn, project, profile)
    (remote_dir(profile, project) / "data" / "part7" / "sample_0007.bin").unlink()
    monkeypatch.setattr(data_transfer, "FIND_ABOVE_FOLDERS", 8)
    listdirs = []
    sftp = conn.sftp()
    real = sftp.listdir_attr
    monkeypatch.setattr(sftp, "listdir_attr", lambda path=".": listdirs.append(path) or real(path))

    report = sync_data(conn, project, profile)

    assert listdirs == [] and report.files_sent == 1 and report.files_unchanged == 59


def test_a_project_without_data_settings_syncs_nothing(cluster, tmp_path):
    conn, profile = cluster
    project = make_project(tmp_path / "p", '[project]\nname = "p"\n')
    write(project / "data" / "a.bin", b"a")

    report = sync_data(conn, project, profile)
    plan = plan_sync(conn, project, profile)

    assert (report.files_sent, report.bytes_sent) == (0, 0)
    assert not plan.configured and "No data to sync" in plan.lines()[0]
    assert not remote_dir(profile, project).exists()


def test_a_file_that_cannot_be_placed_is_named_in_the_error_and_the_others_land(cluster, tmp_path):
    conn, profile = cluster
    project = make_project(tmp_path / "p")
    many_files(project, 6, folders=2)
    (remote_dir(profile, project) / "data" / "part0" / "sample_0002.bin").mkdir(parents=True)

    with pytest.raises(ClusterError, match="could not be placed") as failure:
        sync_data(conn, project, profile)

    assert "sample_0002.bin" in str(failure.value)
    remote = tree(remote_dir(profile, project))
    assert remote == {rel: data for rel, data in local_data(project).items() if rel != "data/part0/sample_0002.bin"}


def test_a_runner_that_went_idle_is_started_again_for_the_next_job(cluster, tmp_path, monkeypatch):
    conn, profile = cluster
    project = make_project(tmp_path / "p")
    many_files(project, 50)
    monkeypatch.setattr(data_transfer, "BUNDLE_MAX_FILES", 10)
    monkeypatch.setattr(data_runner.RemoteApplier, "IDLE_S", 0.05)
    writer_add = data_transfer.BundleWriter.add

    def slow_add(self, item):  # slower than the runner's patience
        time.sleep(0.02)
        return writer_add(self, item)

    monkeypatch.setattr(data_transfer.BundleWriter, "add", slow_add)
    runners = []
    real_run = conn.run
    monkeypatch.setattr(conn, "run", lambda command, *a, **k: (runners.append(1) if "JOBS=" in command else None)
                        or real_run(command, *a, **k))

    report = sync_data(conn, project, profile)

    assert len(runners) >= 2 and report.files_sent == 50
    assert tree(remote_dir(profile, project)) == local_data(project)


def test_a_data_root_the_cluster_refuses_gives_an_error_naming_it(sshd_server, tmp_path):
    blocker = write(tmp_path / "not-a-folder", b"a file where the data root should be")
    conn, profile = connect(sshd_server, tmp_path, blocker / "data")
    project = make_project(tmp_path / "p")
    write(project / "data" / "a.bin", b"a")
    try:
        with pytest.raises(ClusterError, match="data root"):
            sync_data(conn, project, profile)
    finally:
        conn.close()


def _descendants(pid: int) -> list[int]:
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    found = []
    for child in map(int, children):
        found += [child] + _descendants(child)
    return found
