"""Run ▸ Cluster Profiles…: profiles saved to and read back from the user's config folder, and
the Test button against the real sshd (trusting a new host key, refusing a changed one, asking
for a key's passphrase)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cluster_widgets.conftest import TIMEOUT_MS, profile_values, screenshot, trust_host
from workbench.cluster.profiles import ClusterProfile, load_profiles, profiles_file, save_profile
from workbench.cluster.widgets import commands_of


def fill(form, **values) -> None:
    """Type ``values`` into the profile form as a user would."""
    for name in ("name", "host", "user", "jump_host", "work_root", "data_root", "partition", "account", "qos"):
        if name in values:
            getattr(form, name).setText(values[name])
            getattr(form, name).textEdited.emit(values[name])
    if "port" in values:
        form.port.setValue(values["port"])
    if values.get("key_file"):
        form.use_key.setChecked(True)
        form.key_file.setText(values["key_file"])
    if "python_setup" in values:
        form.python_setup.setPlainText(values["python_setup"])
    if "env" in values:
        form.env.setPlainText(values["env"])
    if "scheduler" in values:
        form.scheduler.setCurrentIndex(form.scheduler.findData(values["scheduler"]))


def open_profiles(qtbot, window, select: str = ""):
    dialog = commands_of(window).show_profiles(select)
    qtbot.waitUntil(lambda: not window.tasks.is_running("cluster.loadProfiles"), timeout=TIMEOUT_MS)
    return dialog


def test_a_profile_typed_in_the_dialog_is_saved_and_shown_again(qtbot, open_window, project, tmp_path):
    window = open_window(project)
    assert "cluster.profiles" in window.commands and "cluster.runOnCluster" in window.commands
    assert window.commands.get("cluster.runOnCluster").shortcut == "Shift+F5"
    dialog = open_profiles(qtbot, window)
    assert dialog.profiles.currentItem().text() == "(new profile)"  # none yet: the form is for a new one

    fill(dialog.form, name="gpu", host="login.example.org", port=2222, user="ada", key_file="~/.ssh/id_ed25519",
         jump_host="ada@bastion.example.org:22", work_root="/scratch/ada/wb", data_root="/shared/ada",
         python_setup="module load cuda\nsource ~/venv/bin/activate", env="SLURM_CONF=/etc/slurm/test.conf\nA=b c",
         scheduler="slurm", partition="gpu", account="ml", qos="normal")
    dialog.save()
    qtbot.waitUntil(lambda: dialog.message.text() == "Saved gpu.", timeout=TIMEOUT_MS)

    saved = load_profiles()
    assert saved == [ClusterProfile(
        name="gpu", host="login.example.org", port=2222, user="ada", key_file="~/.ssh/id_ed25519",
        jump_host="ada@bastion.example.org:22", work_root="/scratch/ada/wb", data_root="/shared/ada",
        python_setup="module load cuda\nsource ~/venv/bin/activate", scheduler="slurm", partition="gpu",
        account="ml", qos="normal", env={"SLURM_CONF": "/etc/slurm/test.conf", "A": "b c"})]
    assert profiles_file().parent == tmp_path / "config"  # the test's private config folder
    assert [dialog.profiles.item(i).text() for i in range(dialog.profiles.count())] == ["gpu"]
    dialog.reject()

    again = open_profiles(qtbot, window)
    qtbot.waitUntil(lambda: again.form.host.text() == "login.example.org", timeout=TIMEOUT_MS)
    assert again.form.profile() == saved[0]
    assert again.form.partition.isEnabled()  # a Slurm profile

    # Renaming and switching to the agent replace the profile; Remove deletes it.
    fill(again.form, name="gpu2")
    again.form.use_agent.setChecked(True)
    again.save()
    qtbot.waitUntil(lambda: again.message.text() == "Saved gpu2.", timeout=TIMEOUT_MS)
    assert [(p.name, p.key_file) for p in load_profiles()] == [("gpu2", "")]
    again.confirm = lambda question: True
    again.remove_current()
    qtbot.waitUntil(lambda: load_profiles() == [] and again.message.text() == "Removed gpu2.", timeout=TIMEOUT_MS)
    again.reject()


def test_a_profile_with_mistakes_is_not_saved_and_says_what_is_wrong(qtbot, open_window, project):
    window = open_window(project)
    dialog = open_profiles(qtbot, window)
    fill(dialog.form, name="bad name", host="", work_root="relative/path", env="1X=2")
    dialog.save()
    assert "Environment:" in dialog.message.text() and "'1X=2'" in dialog.message.text()
    fill(dialog.form, env="")
    dialog.form.env.setPlainText("")
    dialog.save()
    assert "not valid" in dialog.message.text() and "host is missing" in dialog.message.text()
    assert "must be an absolute path" in dialog.message.text()
    assert load_profiles() == []
    dialog.confirm = lambda question: True
    dialog.reject()


def test_testing_a_new_host_asks_to_trust_its_key_then_every_check_passes(qtbot, open_window, project, sshd_server,
                                                                          tmp_path):
    window = open_window(project)
    dialog = open_profiles(qtbot, window)
    fill(dialog.form, **profile_values(sshd_server, tmp_path / "remote"))
    asked = []
    dialog.ask_trust = lambda parent, error: asked.append(error) or True

    with qtbot.waitSignal(dialog.sig_test_finished, timeout=240_000) as finished:
        dialog.test()

    assert len(asked) == 1  # asked once; the test ran again with the key trusted
    from workbench.cluster.widgets.prompts import trust_question

    question = trust_question(asked[0])
    assert question.startswith(f"The authenticity of host [{sshd_server.host}]:{sshd_server.port} can't be "
                               f"established.")
    assert asked[0].fingerprint.startswith("SHA256:") and asked[0].fingerprint in question
    assert question.endswith("Trust it and remember?")
    outcome = finished.args[0]
    assert outcome.ok, [(c.name, c.detail) for c in outcome.checks]
    assert set(dialog.checks.outcomes().values()) == {"ok"}
    assert dialog.message.text() == "box is ready for runs."
    known = (Path(profiles_file().parent) / "known_hosts").read_text()
    assert f"[{sshd_server.host}]:{sshd_server.port} ssh-ed25519 " in known
    dialog.save()  # a tested profile keeps its checks on screen once saved
    qtbot.waitUntil(lambda: dialog.message.text() == "Saved box.", timeout=TIMEOUT_MS)
    assert set(dialog.checks.outcomes().values()) == {"ok"}
    assert dialog.profiles.currentItem().text() == "box" and dialog.remove_button.isEnabled()
    screenshot(dialog, "cluster-profiles-dialog")
    dialog.reject()


def test_a_changed_host_key_is_refused_with_no_way_to_go_on(qtbot, open_window, project, sshd_server, tmp_path):
    from workbench.cluster.host_keys import remember_host_key

    other = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")],
                           check=True, capture_output=True)
    assert other.returncode == 0
    wrong = " ".join((tmp_path / "other.pub").read_text().split()[:2])
    remember_host_key(f"[{sshd_server.host}]:{sshd_server.port} {wrong}")
    values = profile_values(sshd_server, tmp_path / "remote")
    save_profile(ClusterProfile(**values))
    window = open_window(project)
    dialog = open_profiles(qtbot, window, select="box")
    qtbot.waitUntil(lambda: dialog.form.host.text() == sshd_server.host, timeout=TIMEOUT_MS)
    refused, asked = [], []
    dialog.show_changed = lambda parent, error: refused.append(error)
    dialog.ask_trust = lambda parent, error: asked.append(error) or True

    with qtbot.waitSignal(dialog.sig_test_finished, timeout=TIMEOUT_MS):
        dialog.test()

    assert asked == [] and len(refused) == 1
    assert "has changed" in str(refused[0]) and "Someone may be intercepting" in str(refused[0])
    assert dialog.checks.outcomes()["connect"] == "failed"
    assert dialog.checks.outcomes()["git"] == "skipped"
    assert dialog.message.text() == str(refused[0])


def test_a_locked_key_asks_for_its_passphrase_and_keeps_it_only_in_the_keyring(
        qtbot, open_window, project, sshd_server, tmp_path, private_keyring):
    key = tmp_path / "locked_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "open sesame", "-f", str(key)], check=True,
                   capture_output=True)
    sshd_server.authorize(key.with_suffix(".pub").read_text())
    trust_host(sshd_server)
    window = open_window(project)
    dialog = open_profiles(qtbot, window)
    fill(dialog.form, **profile_values(sshd_server, tmp_path / "remote", key_file=str(key)))
    answers = [("wrong", True), ("open sesame", True)]
    asked = []

    def ask(parent, key_file, problem):
        asked.append((key_file, problem))
        return answers.pop(0)

    dialog.ask_passphrase = ask
    with qtbot.waitSignal(dialog.sig_test_finished, timeout=240_000) as finished:
        dialog.test()
    assert finished.args[0].checks[0].ok, finished.args[0].checks[0].detail

    assert asked == [(str(key), ""), (str(key), f"That passphrase does not unlock {key}.")]
    assert private_keyring.passwords == {("workbench-ssh", str(key)): "open sesame"}
    dialog.save()
    qtbot.waitUntil(lambda: load_profiles() != [], timeout=TIMEOUT_MS)
    assert "open sesame" not in profiles_file().read_text()
    dialog.reject()


def test_a_passphrase_not_to_remember_stays_out_of_the_keyring(qtbot, open_window, project, sshd_server, tmp_path,
                                                              private_keyring):
    key = tmp_path / "locked_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "pw", "-f", str(key)], check=True, capture_output=True)
    sshd_server.authorize(key.with_suffix(".pub").read_text())
    trust_host(sshd_server)
    window = open_window(project)
    dialog = open_profiles(qtbot, window)
    fill(dialog.form, **profile_values(sshd_server, tmp_path / "remote", key_file=str(key),
                                       python_setup="exit 3"))  # the checks after connect fail fast
    dialog.ask_passphrase = lambda parent, key_file, problem: ("pw", False)
    with qtbot.waitSignal(dialog.sig_test_finished, timeout=TIMEOUT_MS) as finished:
        dialog.test()
    assert finished.args[0].checks[0].ok
    assert private_keyring.passwords == {}
    dialog.confirm = lambda question: True
    dialog.reject()
