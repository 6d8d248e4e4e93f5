import json

from workbench.project import RecentProjects, user_config_dir
from workbench.project.recent import MAX_RECENT


def test_config_dir_follows_the_environment_override(private_config_dir):
    assert user_config_dir() == private_config_dir


def test_recent_projects_are_listed_most_recent_first(tmp_path):
    recent = RecentProjects(tmp_path / "cfg")
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
        recent.add(tmp_path / name, name=name.upper())

    assert [e.name for e in recent.list()] == ["C", "B", "A"]
    assert all(e.exists for e in recent.list())


def test_opening_a_listed_project_again_moves_it_to_the_top_once(tmp_path):
    recent = RecentProjects(tmp_path / "cfg")
    for name in ("a", "b", "c"):
        recent.add(tmp_path / name)
    recent.add(tmp_path / "a")
    assert [e.path.name for e in recent.list()] == ["a", "c", "b"]


def test_the_list_keeps_at_most_twenty_projects(tmp_path):
    recent = RecentProjects(tmp_path / "cfg")
    for number in range(MAX_RECENT + 5):
        recent.add(tmp_path / f"p{number}")
    entries = recent.list()
    assert len(entries) == MAX_RECENT == 20
    assert entries[0].path.name == f"p{MAX_RECENT + 4}"
    assert entries[-1].path.name == "p5"


def test_removing_a_project_takes_it_off_the_list(tmp_path):
    recent = RecentProjects(tmp_path / "cfg")
    recent.add(tmp_path / "a")
    recent.add(tmp_path / "b")
    recent.remove(tmp_path / "a")
    recent.remove(tmp_path / "never-there")
    assert [e.path.name for e in recent.list()] == ["b"]


def test_moved_projects_are_flagged_as_missing(tmp_path):
    recent = RecentProjects(tmp_path / "cfg")
    (tmp_path / "here").mkdir()
    recent.add(tmp_path / "here")
    recent.add(tmp_path / "gone")
    assert {e.path.name: e.exists for e in recent.list()} == {"here": True, "gone": False}


def test_the_list_survives_a_new_instance(tmp_path):
    RecentProjects(tmp_path / "cfg").add(tmp_path / "a", name="Alpha")
    [entry] = RecentProjects(tmp_path / "cfg").list()
    assert entry.name == "Alpha"
    assert entry.last_opened.tzinfo is not None


def test_a_corrupt_file_is_kept_aside_and_gives_an_empty_list(tmp_path):
    config = tmp_path / "cfg"
    config.mkdir()
    (config / "recent.json").write_text("{ not json", encoding="utf-8")
    recent = RecentProjects(config)

    assert recent.list() == []
    assert (config / "recent.json.corrupt").read_text(encoding="utf-8") == "{ not json"

    recent.add(tmp_path / "a")
    assert [e.path.name for e in recent.list()] == ["a"]
    assert json.loads((config / "recent.json").read_text())["projects"][0]["path"].endswith("a")


def test_a_second_corrupt_file_does_not_overwrite_the_first(tmp_path):
    config = tmp_path / "cfg"
    config.mkdir()
    (config / "recent.json.corrupt").write_text("first", encoding="utf-8")
    (config / "recent.json").write_text('{"projects": 3}', encoding="utf-8")

    assert RecentProjects(config).list() == []
    assert (config / "recent.json.corrupt").read_text() == "first"
    assert (config / "recent.json.corrupt.1").read_text() == '{"projects": 3}'
