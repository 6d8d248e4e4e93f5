import json

from workbench.project import OpenFile, WindowState, WindowStateStore, load_project


def test_window_state_round_trips(tmp_path):
    project = load_project(tmp_path)
    state = WindowState(
        geometry_b64="AdnQywADAAA=",
        dock_state_b64="AAAA/wAAAAD9",
        open_files=[OpenFile("train.py", line=12, column=5), OpenFile("data/x.py")],
        current_file="train.py",
        tree_expanded=["data", "hparams"],
    )

    WindowStateStore(project).save(state)

    assert WindowStateStore(project).load() == state
    assert (tmp_path / ".workbench" / "window-state.json").is_file()


def test_state_folder_is_ignored_by_git_on_its_own(tmp_path):
    WindowStateStore(load_project(tmp_path)).save(WindowState())
    assert (tmp_path / ".workbench" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_no_saved_state_gives_the_defaults(tmp_path):
    assert WindowStateStore(load_project(tmp_path)).load() == WindowState()


def test_a_corrupt_state_file_gives_the_defaults(tmp_path):
    (tmp_path / ".workbench").mkdir()
    (tmp_path / ".workbench" / "window-state.json").write_text("{\"open_files\": [", "utf-8")
    assert WindowStateStore(load_project(tmp_path)).load() == WindowState()


def test_bad_values_lose_only_themselves(tmp_path):
    (tmp_path / ".workbench").mkdir()
    (tmp_path / ".workbench" / "window-state.json").write_text(json.dumps({
        "geometry_b64": 7,
        "open_files": [{"path": "a.py", "line": "x"}, {"nope": 1}, "b.py"],
        "current_file": "a.py",
        "tree_expanded": "not a list",
    }), "utf-8")

    state = WindowStateStore(load_project(tmp_path)).load()

    assert state == WindowState(open_files=[OpenFile("a.py")], current_file="a.py")


def test_saving_in_a_read_only_project_does_nothing(tmp_path):
    project = load_project(tmp_path)
    project.writable = False
    WindowStateStore(project).save(WindowState(current_file="a.py"))
    assert not (tmp_path / ".workbench").exists()
