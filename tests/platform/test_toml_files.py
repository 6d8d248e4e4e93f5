"""Changing TOML files the user also edits: their comments and layout survive."""

from __future__ import annotations

import tomllib

import pytest

from workbench.cluster.profiles import ClusterProfile, load_profiles, remove_profile, save_profile
from workbench.platform.toml_files import TomlFileError, editing, read_document, update_table
from workbench.project.templates import create_from_template

USER_PROFILES = """\
# My clusters. Ask Ana before changing the lab's partition.
version = 1

[clusters.lab]   # the group's cluster
host = "lab.example.org"  # the login node, not a compute node
port = 22
partition = "gpu"

# The old one, kept for the archive runs.
[clusters.old]
host = "old.example.org"
"""


def test_saving_a_profile_keeps_the_users_comments_and_layout(tmp_path):
    path = tmp_path / "clusters.toml"
    path.write_text(USER_PROFILES)
    lab = next(p for p in load_profiles(tmp_path) if p.name == "lab")
    lab.partition = "a100"
    lab.env = {"OMP_NUM_THREADS": "4"}
    save_profile(lab, tmp_path)
    save_profile(ClusterProfile(name="new", host="new.example.org", scheduler="ssh"), tmp_path)
    text = path.read_text()
    for kept in ("# My clusters. Ask Ana before changing the lab's partition.\n",
                 "[clusters.lab]   # the group's cluster\n",
                 'host = "lab.example.org"  # the login node, not a compute node\n',
                 "# The old one, kept for the archive runs.\n[clusters.old]\n"):
        assert kept in text
    assert 'partition = "a100"' in text and "gpu" not in text
    profiles = {p.name: p for p in load_profiles(tmp_path)}
    assert profiles["lab"].env == {"OMP_NUM_THREADS": "4"} and profiles["lab"].partition == "a100"
    assert profiles["new"].scheduler == "ssh" and profiles["old"].host == "old.example.org"
    remove_profile("new", tmp_path)
    assert "new.example.org" not in path.read_text()
    assert path.read_text().startswith("# My clusters.")


def test_a_first_profile_makes_a_private_file_that_says_what_it_is(tmp_path):
    save_profile(ClusterProfile(name="lab", host="lab.example.org", python_setup='source "a b"\nmodule load x'),
                 tmp_path)
    path = tmp_path / "clusters.toml"
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_text().startswith("# Workbench's cluster profiles")
    data = tomllib.loads(path.read_text())
    assert data["version"] == 1 and data["clusters"]["lab"]["python_setup"] == 'source "a b"\nmodule load x'


def test_naming_a_new_project_keeps_the_templates_comments(tmp_path):
    project = create_from_template("empty", tmp_path / "p", name='Dan\'s "empty"')
    text = (project.root / "workbench.toml").read_text()
    assert text.startswith("# Workbench's project file.")
    assert "# The file a new window opens first." in text
    assert tomllib.loads(text)["project"]["name"] == 'Dan\'s "empty"'


def test_an_unchanged_value_keeps_how_the_user_wrote_it(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text("[run]\nsteps = 0x10  # hex, on purpose\nname = 'literal'\n")
    with editing(path) as document:
        update_table(document, "run", {"steps": 16, "name": "literal", "seed": 3})
    assert path.read_text() == "[run]\nsteps = 0x10  # hex, on purpose\nname = 'literal'\nseed = 3\n"


def test_a_file_that_is_not_toml_is_named_and_left_alone(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("[run\n")
    with pytest.raises(TomlFileError, match="broken.toml is not valid TOML"):
        read_document(path)
    assert path.read_text() == "[run\n"
