"""Cluster profiles in clusters.toml, host key records, and the `workbench cluster` commands that
need no server."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from workbench.cli import cli
from workbench.cluster.errors import ClusterError, HostKeyChanged, UnknownHostKey
from workbench.cluster.host_keys import PresentedKey, check_host_key, remember_host_key, workbench_known_hosts
from workbench.cluster.profiles import (ClusterProfile, get_profile, load_profiles, parse_jump_host, profiles_file,
                                        remove_profile, save_profile)

KEY_A = PresentedKey("ssh-ed25519", base64.b64encode(b"\0\0\0\x0bssh-ed25519\0\0\0\x20" + b"A" * 32).decode())
KEY_B = PresentedKey("ssh-ed25519", base64.b64encode(b"\0\0\0\x0bssh-ed25519\0\0\0\x20" + b"B" * 32).decode())


def workbench_cmd(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


# ---------------------------------------------------------------------------------------------
# Profiles


def test_a_saved_profile_comes_back_the_same_with_any_text_in_it():
    profile = ClusterProfile(name="gpu-box_2", host="login.example.org", port=2222, user="ada",
                             key_file="/home/ada/.ssh/id_ed25519", jump_host="ada@bastion:22",
                             work_root="/scratch/ada/wb", data_root="/shared/data", scheduler="slurm",
                             python_setup='module load cuda\nsource "$HOME/venv/bin/activate"  # tab\there',
                             partition="gpu", account="proj-1", qos="normal",
                             env={"SLURM_CONF": "/etc/slurm/a b.conf", "QUOTE": 'say "hi" \\ é ✓', "EMPTY": ""})
    path = save_profile(profile)
    assert path == profiles_file() and path.parent == Path(os.environ["WORKBENCH_CONFIG_DIR"])
    assert load_profiles() == [profile]
    assert get_profile("gpu-box_2") == profile
    tomllib.loads(path.read_text(encoding="utf-8"))  # plain TOML a user can edit
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["clusters.toml"]  # no temporary file left behind


def test_profiles_are_listed_by_name_and_replaced_by_name():
    save_profile(ClusterProfile(name="zeta", host="z"))
    save_profile(ClusterProfile(name="Alpha", host="a"))
    save_profile(ClusterProfile(name="zeta", host="z2", port=2200))
    assert [(p.name, p.host, p.port) for p in load_profiles()] == [("Alpha", "a", 22), ("zeta", "z2", 2200)]


def test_a_removed_profile_is_gone_and_a_missing_one_is_named_with_the_existing_ones():
    save_profile(ClusterProfile(name="one", host="h"))
    save_profile(ClusterProfile(name="two", host="h"))
    remove_profile("one")
    assert [p.name for p in load_profiles()] == ["two"]
    with pytest.raises(ClusterError, match=r"no cluster profile named 'one' \(profiles: two\)"):
        remove_profile("one")
    with pytest.raises(ClusterError, match="workbench cluster add nope --host"):
        get_profile("nope")


def test_defaults_are_the_agent_a_work_folder_in_home_and_data_beside_it():
    profile = ClusterProfile(name="c", host="h")
    assert (profile.port, profile.key_file, profile.work_root, profile.data_root, profile.scheduler) == \
        (22, "", "~/workbench", "~/workbench/data", "slurm")
    assert ClusterProfile(name="c", host="h", work_root="/scratch/x/").data_root == "/scratch/x/data"
    assert profile.destination.endswith("@h") and ":" not in profile.destination


@pytest.mark.parametrize("changes, fragment", [
    ({"name": "has space"}, "profile name"),
    ({"name": "x" * 41}, "profile name"),
    ({"name": "../etc"}, "profile name"),
    ({"host": ""}, "host is missing"),
    ({"host": "ada@login"}, "--user"),
    ({"port": 0}, "port"),
    ({"port": "22"}, "port"),
    ({"user": "a b"}, "user name"),
    ({"jump_host": "a@b@c"}, "jump host"),
    ({"work_root": "relative/folder"}, "absolute path or start with ~/"),
    ({"data_root": "~other/data"}, "absolute path"),
    ({"scheduler": "pbs"}, "scheduler"),
    ({"partition": "gpu; rm -rf /"}, "partition"),
    ({"env": {"1BAD": "x"}}, "variable name"),
    ({"env": {"A-B": "x"}}, "variable name"),
])
def test_an_invalid_profile_is_refused_with_what_to_fix(changes, fragment):
    profile = ClusterProfile(**{"name": "ok", "host": "login", **changes})
    with pytest.raises(ClusterError, match=fragment):
        save_profile(profile)
    assert not profiles_file().exists()


def test_a_broken_profiles_file_is_reported_and_never_overwritten():
    path = profiles_file()
    path.parent.mkdir(parents=True)
    path.write_text("[clusters.a]\nhost = \n")
    with pytest.raises(ClusterError, match=f"{path}.*not valid TOML.*line 2"):
        load_profiles()
    with pytest.raises(ClusterError):
        save_profile(ClusterProfile(name="b", host="h"))
    assert path.read_text() == "[clusters.a]\nhost = \n"


def test_keys_written_by_a_newer_version_are_ignored():
    path = profiles_file()
    path.parent.mkdir(parents=True)
    path.write_text('version = 2\n[clusters.a]\nhost = "h"\nport = 2022\nfuture_option = true\n')
    assert load_profiles() == [ClusterProfile(name="a", host="h", port=2022)]


def test_jump_hosts_parse_like_ssh_J():
    assert parse_jump_host("bastion") == ("", "bastion", 22)
    assert parse_jump_host("me@bastion.example.org:2200") == ("me", "bastion.example.org", 2200)
    assert parse_jump_host("me@[fe80::1]:22") == ("me", "fe80::1", 22)
    assert parse_jump_host("host:99999") is None
    assert parse_jump_host("a b") is None


# ---------------------------------------------------------------------------------------------
# Host keys


def test_an_unrecorded_host_key_is_unknown_with_its_fingerprint_and_how_to_trust_it(tmp_path):
    with pytest.raises(UnknownHostKey) as caught:
        check_host_key("login", 2222, KEY_A, [tmp_path / "none"], profile="gpu")
    error = caught.value
    expected = "SHA256:" + base64.b64encode(hashlib.sha256(base64.b64decode(KEY_A.key_base64)).digest()).decode().rstrip("=")
    assert error.fingerprint == KEY_A.fingerprint == expected
    assert error.known_hosts_line == f"[login]:2222 ssh-ed25519 {KEY_A.key_base64}"
    assert "`workbench cluster test gpu --trust`" in str(error) and expected in str(error)


def test_a_remembered_key_is_known_and_remembering_twice_writes_one_line(tmp_path):
    try:
        check_host_key("login", 22, KEY_A, [workbench_known_hosts()])
    except UnknownHostKey as unknown:
        path = remember_host_key(unknown)
        remember_host_key(unknown)
    assert path == workbench_known_hosts()
    assert path.read_text() == f"login ssh-ed25519 {KEY_A.key_base64}\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert check_host_key("login", 22, KEY_A, [path]) == "known"
    with pytest.raises(UnknownHostKey):  # port 22 and another port are different entries
        check_host_key("login", 2222, KEY_A, [path])


def test_a_changed_key_is_refused_naming_the_file_and_line(tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text(f"# comment\nother ssh-ed25519 {KEY_B.key_base64}\n[login]:2222 ssh-ed25519 {KEY_A.key_base64}\n")
    with pytest.raises(HostKeyChanged) as caught:
        check_host_key("login", 2222, KEY_B, [known])
    assert (caught.value.known_hosts, caught.value.line) == (str(known), 3)
    assert f"line 3 of {known}" in str(caught.value) and KEY_B.fingerprint in str(caught.value)


def test_a_key_of_another_type_than_the_recorded_one_is_refused(tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text(f"login ecdsa-sha2-nistp256 {KEY_B.key_base64}\n")
    with pytest.raises(HostKeyChanged, match="records a ecdsa-sha2-nistp256 key"):
        check_host_key("login", 22, KEY_A, [known])


def test_hashed_wildcard_and_negated_entries_match_as_in_openssh(tmp_path):
    salt = os.urandom(20)
    digest = hmac.new(salt, b"[login]:2222", hashlib.sha1).digest()
    hashed = f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"
    known = tmp_path / "known_hosts"
    known.write_text(f"{hashed} ssh-ed25519 {KEY_A.key_base64}\n"
                     f"*.example.org,!bad.example.org ssh-ed25519 {KEY_B.key_base64}\n")
    assert check_host_key("login", 2222, KEY_A, [known]) == "known"
    assert check_host_key("node1.example.org", 22, KEY_B, [known]) == "known"
    with pytest.raises(UnknownHostKey):
        check_host_key("bad.example.org", 22, KEY_B, [known])


def test_a_revoked_key_is_refused_even_when_also_recorded(tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text(f"login ssh-ed25519 {KEY_A.key_base64}\n@revoked * ssh-ed25519 {KEY_A.key_base64}\n")
    with pytest.raises(HostKeyChanged, match="revoked on line 2"):
        check_host_key("login", 22, KEY_A, [known])


def test_hashed_entries_written_by_ssh_keygen_match(tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text(f"[login]:2222 ssh-ed25519 {KEY_A.key_base64}\n")
    subprocess.run(["ssh-keygen", "-H", "-f", str(known)], check=True, capture_output=True)
    assert known.read_text().startswith("|1|")
    assert check_host_key("login", 2222, KEY_A, [known]) == "known"


# ---------------------------------------------------------------------------------------------
# The commands that need no server


def test_cluster_add_list_show_edit_remove(tmp_path):
    key = tmp_path / "id_test"
    key.write_text("not checked here")
    result = workbench_cmd("cluster", "add", "gpu", "--host", "login.example.org", "--port", "2222", "--user", "ada",
                           "--key", str(key), "--jump", "ada@bastion", "--work-root", "/scratch/ada",
                           "--python-setup", "source ~/venv/bin/activate", "--partition", "gpu",
                           "--env", "SLURM_CONF=/etc/slurm/slurm.conf", "--env", "GREETING=a=b c")
    assert result.exit_code == 0, result.output
    assert "Added gpu (ada@login.example.org:2222)" in result.output and "workbench cluster test gpu" in result.output
    profile = get_profile("gpu")
    assert (profile.key_file, profile.data_root, profile.env) == (
        str(key), "/scratch/ada/data", {"SLURM_CONF": "/etc/slurm/slurm.conf", "GREETING": "a=b c"})

    listing = workbench_cmd("cluster", "list")
    assert listing.output.splitlines()[1].split() == ["gpu", "ada@login.example.org:2222", "via", "ada@bastion",
                                                      "slurm", "/scratch/ada"]
    assert json.loads(workbench_cmd("cluster", "list", "--json").output)[0]["host"] == "login.example.org"
    shown = workbench_cmd("cluster", "show", "gpu").output
    assert "work root     /scratch/ada" in shown and "env           GREETING=a=b c" in shown
    assert json.loads(workbench_cmd("cluster", "show", "gpu", "--json").output) == profile.to_json()

    edited = workbench_cmd("cluster", "edit", "gpu", "--work-root", "/scratch/ada2", "--unset-env", "GREETING",
                           "--no-key", "--scheduler", "ssh")
    assert edited.exit_code == 0, edited.output
    profile = get_profile("gpu")
    assert (profile.work_root, profile.data_root, profile.key_file, profile.scheduler, profile.env, profile.port) == (
        "/scratch/ada2", "/scratch/ada2/data", "", "ssh", {"SLURM_CONF": "/etc/slurm/slurm.conf"}, 2222)

    assert workbench_cmd("cluster", "remove", "gpu").output == "Removed the cluster profile gpu.\n"
    assert "No cluster profiles yet" in workbench_cmd("cluster", "list").output


def test_cluster_commands_fail_on_one_line_saying_what_to_do(tmp_path):
    def fails(*args: str) -> str:
        result = subprocess.run([sys.executable, "-m", "workbench", "cluster", *args], capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 1, result
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("workbench: "), result.stderr
        return lines[0]

    assert "--user" in fails("add", "x", "--host", "me@login")
    assert "does not exist" in fails("add", "x", "--host", "login", "--key", str(tmp_path / "missing"))
    assert "NAME=VALUE" in fails("add", "x", "--host", "login", "--env", "NOVALUE")
    assert "no cluster profile named 'x'" in fails("show", "x")
    assert "no cluster profile named 'x'" in fails("test", "x")
    subprocess.run([sys.executable, "-m", "workbench", "cluster", "add", "x", "--host", "login"], check=True,
                   capture_output=True)
    assert "workbench cluster edit x" in fails("add", "x", "--host", "login")


def test_a_passphrase_goes_to_the_keyring_after_it_unlocks_the_key_and_never_to_a_file(tmp_path,
                                                                                      private_keyring_and_agent):
    key = tmp_path / "locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "s3cret-phrase", "-f", str(key)], check=True)
    assert workbench_cmd("cluster", "add", "c", "--host", "login", "--key", str(key)).exit_code == 0

    wrong = workbench_cmd("cluster", "passphrase", "c", input="wrong\n")
    assert wrong.exit_code == 1 and "does not unlock" in wrong.output
    assert private_keyring_and_agent.passwords == {}

    stored = workbench_cmd("cluster", "passphrase", "c", input="s3cret-phrase\n")
    assert stored.exit_code == 0, stored.output
    assert private_keyring_and_agent.passwords == {("workbench-ssh", str(key)): "s3cret-phrase"}
    config = Path(os.environ["WORKBENCH_CONFIG_DIR"])
    assert not any("s3cret-phrase" in p.read_text(errors="replace") for p in config.rglob("*") if p.is_file())

    assert "Forgot" in workbench_cmd("cluster", "passphrase", "c", "--forget").output
    assert private_keyring_and_agent.passwords == {}
