"""Real processes against one registry: two registering or cutting at once take turns, and a
registration that runs out of room (a file size limit, as a full disk) leaves the registry as
it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.registry.conftest import make_project, open_project, register_run

ROOT = Path(__file__).resolve().parents[2]

REGISTER = textwrap.dedent('''\
    import json, sys, time
    from pathlib import Path
    from workbench.registry import RegistryError, open_versions

    root, name, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    settings = {"data": {"train": "data/train"}, "registry": {"version_max": 50}}
    while not go.exists():
        time.sleep(0.01)
    run = root / "runs" / name
    try:
        result = open_versions(root, settings, python=sys.executable).models.register(
            [(root / "outside" / f"{name}.pt", "weights"), (run / "model.onnx", "onnx")], {"run": name},
            run_folder=run)
        print(json.dumps({"number": result.version.number}))
    except RegistryError as exc:
        print(json.dumps({"error": str(exc)}))
''')

CUT = textwrap.dedent('''\
    import json, sys, time
    from pathlib import Path
    from workbench.registry import open_versions

    root, go = Path(sys.argv[1]), Path(sys.argv[2])
    settings = {"data": {"train": "data/train", "val": "data/val"}}
    while not go.exists():
        time.sleep(0.01)
    print(json.dumps({"number": open_versions(root, settings, python=sys.executable).datasets.cut().version.number}))
''')

LIMITED = textwrap.dedent('''\
    import json, resource, signal, sys
    from pathlib import Path
    from workbench.registry import RegistryError, open_versions

    # A file size limit makes a write past it fail with EFBIG, as a full disk fails with ENOSPC.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limit = int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    root, what = Path(sys.argv[1]), sys.argv[2]
    settings = {"data": {"train": "data/train", "val": "data/val"}, "registry": {"version_max": 5}}
    versions = open_versions(root, settings, python=sys.executable)
    try:
        if what == "register":
            run = root / "runs" / "big"
            versions.models.register([(run / "best.pt", "weights"), (root / "big.onnx", "onnx")], {"run": "big"},
                                     run_folder=run)
        else:
            versions.datasets.cut()
        print(json.dumps({"ok": True}))
    except RegistryError as exc:
        print(json.dumps({"error": str(exc)}))
''')


def child(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def answer(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_two_processes_registering_at_once_both_succeed_with_numbers_of_their_own(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    make_project(root, train=1, val=0)
    (root / "outside").mkdir()
    for name in ("a", "b"):
        run = root / "runs" / name
        run.mkdir(parents=True)
        (run / "model.onnx").write_bytes(name.encode() * 1000)
        # Copied, not linked (outside the run folder): each registration takes a while.
        (root / "outside" / f"{name}.pt").write_bytes(os.urandom(1) * (30 << 20) + name.encode())
    go = tmp_path / "go"
    processes = [child(REGISTER, str(root), name, str(go)) for name in ("a", "b")]
    time.sleep(1.0)  # both interpreters started and waiting
    go.touch()
    answers = [answer(process) for process in processes]
    assert sorted(a.get("number") for a in answers) == [0, 1], answers
    models = open_project(root, {"data": {"train": "data/train"}, "registry": {"version_max": 50}}).models
    versions = models.list()
    assert [v.number for v in versions] == [0, 1]
    for version in versions:
        assert models.problems(version) == []
        run = version.info["run"]
        assert (models.folder / version.files[0].name).read_bytes()[-1:] == run.encode()
        assert (models.folder / version.files[1].name).read_bytes() == run.encode() * 1000
    assert not list(models.folder.glob(".incoming-*"))


def test_two_processes_cutting_at_once_both_succeed_with_numbers_of_their_own(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    settings = make_project(root, train=300, val=10)
    go = tmp_path / "go"
    processes = [child(CUT, str(root), str(go)) for _ in range(2)]
    time.sleep(1.0)
    go.touch()
    assert sorted(answer(process)["number"] for process in processes) == [0, 1]
    datasets = open_project(root, settings).datasets
    assert [datasets.get(v.number).samples for v in datasets.list()] == [300, 300]


def test_a_registration_that_runs_out_of_room_registers_nothing_and_keeps_what_was_there(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    settings = make_project(root, train=1, val=0, registry={"version_max": 5})
    models = open_project(root, settings).models
    first = register_run(models, root, "small", b"small weights", {"model.onnx": b"small graph"}).version
    before = {path.name: path.read_bytes() for path in models.folder.iterdir() if path.is_file()}
    run = root / "runs" / "big"
    run.mkdir(parents=True)
    (run / "best.pt").write_bytes(os.urandom(64 << 10))       # linked: no bytes written
    (root / "big.onnx").write_bytes(os.urandom(4 << 20))      # copied: past the limit
    result = answer(child(LIMITED, str(root), "register", str(1 << 20)))
    assert "error" in result, result
    message = result["error"]
    assert "could not register model version 0001 (big.onnx): File too large" in message
    assert "Nothing was registered" in message and "register again" in message and "\n" not in message
    assert [v.number for v in models.list()] == [first.number]
    after = {path.name: path.read_bytes() for path in models.folder.iterdir() if path.is_file()}
    assert after == before
    assert not list(models.folder.glob(".incoming-*")) and not list(models.folder.glob(".*.tmp"))
    assert models.weights_path(0).read_bytes() == b"small weights"
    # The failed number is not given again; the next registration works.
    following = register_run(models, root, "next", b"next weights").version
    assert following.number == 2 and models.problems(following) == []


def test_a_cut_that_runs_out_of_room_cuts_nothing(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    settings = make_project(root, train=200, val=3)
    result = answer(child(LIMITED, str(root), "cut", "4000"))
    assert "could not cut a dataset version" in result.get("error", ""), result
    assert "File too large" in result["error"] and "Nothing was cut" in result["error"]
    datasets = open_project(root, settings).datasets
    assert datasets.list() == []
    assert datasets.cut().version.number == 1 and datasets.get(1).samples == 200


def test_the_size_limit_really_stops_a_large_write(tmp_path):
    """The limit the tests above rely on does fail a write in a child (else they prove nothing)."""
    code = textwrap.dedent('''\
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        try:
            open(sys.argv[1], "wb").write(b"x" * (2 << 20))
        except OSError as exc:
            print(exc.errno)
    ''')
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "big")], capture_output=True, text=True,
                         timeout=60).stdout
    import errno

    assert out.strip() == str(errno.EFBIG)
