"""The run history in SQLite, and run folders."""

from __future__ import annotations

import sqlite3

from workbench.training.run_folder import create_run_folder
from workbench.training.run_info import RunInfo
from workbench.training.run_store import RunStore


def _info(project, run_id, created_at, state="completed"):
    return RunInfo(id=run_id, state=state, run_dir=str(project / "runs" / run_id), project_dir=str(project),
                   created_at=created_at, final_metrics={"loss": 0.5})


def test_the_store_lists_runs_newest_first_in_a_wal_database(tmp_path):
    store = RunStore(tmp_path)
    assert store.all() == [] and store.get("x") is None  # nothing created just by reading
    assert not (tmp_path / ".workbench").exists()
    store.put(_info(tmp_path, "a", 1.0))
    store.put(_info(tmp_path, "b", 2.0))
    store.put(_info(tmp_path, "a", 1.0, state="failed"))
    assert [(i.id, i.state) for i in store.all()] == [("b", "completed"), ("a", "failed")]
    assert store.get("b").final_metrics == {"loss": 0.5}
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (tmp_path / ".workbench" / ".gitignore").read_text().strip().endswith("*")
    store.delete("a")
    assert [i.id for i in store.all()] == ["b"]


def test_a_moved_project_finds_its_runs_where_they_are_now(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    RunStore(old).put(_info(old, "a", 1.0))
    (old).rename(tmp_path / "new")
    info = RunStore(tmp_path / "new").get("a")
    assert info.run_dir == str(tmp_path / "new" / "runs" / "a") and info.project_dir == str(tmp_path / "new")


def test_run_ids_are_unique_sortable_and_runs_are_ignored_by_git(tmp_path):
    ids = [create_run_folder(tmp_path).id for _ in range(5)]
    assert len(set(ids)) == 5 and sorted(ids) == ids
    assert (tmp_path / "runs" / ids[0] / "checkpoints").is_dir() and (tmp_path / "runs" / ids[0] / "outputs").is_dir()
    assert (tmp_path / "runs" / ".gitignore").read_text().strip().endswith("*")


def test_run_info_round_trips_through_json_and_ignores_unknown_keys(tmp_path):
    info = _info(tmp_path, "a", 1.0)
    assert RunInfo.from_json({**info.to_json(), "from_a_newer_workbench": 1}) == info
    assert not info.can_resume and not info.is_active and info.duration is None


def test_a_key_overridden_again_by_a_resume_shows_once_with_its_last_value():
    from workbench.training.run_info import RunInfo

    info = RunInfo(id="r", state="completed", run_dir="/r", project_dir="/p",
                   overrides=["num_epochs=10", "learning_rate=0.1", "num_epochs=14"])
    assert info.effective_overrides == ["learning_rate=0.1", "num_epochs=14"]
