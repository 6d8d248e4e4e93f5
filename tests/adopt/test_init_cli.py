"""`workbench init` in a child process: what it writes, what it leaves alone, how it asks."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
import tomllib

from tests.adopt.scripts import HANGING_HELP, PLAIN_ARGPARSE, hydra_project, write


def workbench(*args, cwd=None, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)


def snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_init_writes_only_workbench_toml_and_a_git_repository_stays_as_it_is(tmp_path):
    write(tmp_path, "train.py", PLAIN_ARGPARSE)
    write(tmp_path, "model.py", "import torch\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "mine"], cwd=tmp_path,
                   check=True)
    before = snapshot(tmp_path)
    result = workbench("init", tmp_path)
    assert result.returncode == 0, result.stderr
    after = snapshot(tmp_path)
    assert set(after) - set(before) == {"workbench.toml"}
    assert all(after[name] == content for name, content in before.items() if not name.startswith(".git/index"))
    assert "train.py needs --data: set it with --set data=PATH or in the Train dialog." in result.stdout
    settings = tomllib.loads((tmp_path / "workbench.toml").read_text())["training"]
    assert settings == {"script": "train.py", "parameters": "argparse"}
    text = (tmp_path / "workbench.toml").read_text()
    assert "#   lr: --lr (float, default 0.001): learning rate" in text
    assert "# Required, and not guessed: train.py needs --data" in text
    status = subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert status.splitlines() == ["?? workbench.toml"]


def test_init_on_a_folder_that_is_set_up_says_so_and_what_to_do(tmp_path):
    write(tmp_path, "train.py", PLAIN_ARGPARSE)
    write(tmp_path, "workbench.toml", "[project]\nname = 'mine'\n")
    result = workbench("init", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (f"workbench: {tmp_path / 'workbench.toml'} already exists: this folder is set "
                                     "up. Edit its [training] table (script, parameters) to change what trains, or "
                                     "delete it and run `workbench init` again.")
    assert (tmp_path / "workbench.toml").read_text() == "[project]\nname = 'mine'\n"


def test_fifty_train_scripts_without_a_terminal_list_them_and_ask_for_script(tmp_path):
    for number in range(50):
        write(tmp_path, f"train_{number:02}.py", PLAIN_ARGPARSE)
    result = workbench("init", tmp_path)
    assert result.returncode == 1 and not (tmp_path / "workbench.toml").exists()
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"workbench: {tmp_path} has 50 scripts that could be the training entry point "
                           "(train_00.py, train_01.py,")
    assert line.endswith("and 38 more): choose one with --script PATH.")
    chosen = workbench("init", tmp_path, "--script", "train_07.py", "--json")
    assert chosen.returncode == 0, chosen.stderr
    assert tomllib.loads((tmp_path / "workbench.toml").read_text())["training"]["script"] == "train_07.py"


def test_on_a_terminal_init_asks_which_script_then_whether_to_write(tmp_path):
    import pty

    write(tmp_path, "train_a.py", PLAIN_ARGPARSE)
    write(tmp_path, "train_b.py", PLAIN_ARGPARSE)
    controller, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "workbench", "init", str(tmp_path)], stdin=terminal,
                               stdout=terminal, stderr=terminal, env={**os.environ, "TERM": "xterm"})
    os.close(terminal)
    seen = b""

    def read_until(text: bytes) -> None:
        nonlocal seen
        deadline = time.monotonic() + 60
        while text not in seen:
            assert time.monotonic() < deadline, seen
            ready, _, _ = select.select([controller], [], [], 1)
            if ready:
                seen += os.read(controller, 4096)

    try:
        read_until(b"Which one trains? (number):")
        assert b"1. train_a.py" in seen and b"2. train_b.py" in seen
        os.write(controller, b"2\n")
        read_until(b"workbench.toml? [Y/n]:")
        assert b"--lr (float, default 0.001): learning rate" in seen
        os.write(controller, b"y\n")
        read_until(b"Nothing else in the folder was changed.")
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        os.close(controller)
    assert tomllib.loads((tmp_path / "workbench.toml").read_text())["training"]["script"] == "train_b.py"


def test_a_script_whose_help_hangs_is_adopted_with_one_message(tmp_path):
    write(tmp_path, "train.py", HANGING_HELP)
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", "import sys; from workbench.adopt import argparse_help as h; "
                             "h.HELP_TIMEOUT_S = 0.5; from workbench.adopt.cli import init_command; "
                             "init_command.main(sys.argv[1:], standalone_mode=True)", str(tmp_path)],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 30
    assert "train.py --help did not answer within 0.5 s; its flags are not known: give them with --set" \
        in result.stdout
    assert "# The script's hyper-parameters could not be read: train.py --help did not answer" in \
        (tmp_path / "workbench.toml").read_text()


def test_a_hydra_app_is_adopted_with_its_config(tmp_path):
    hydra_project(tmp_path)
    result = workbench("init", tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    settings = tomllib.loads((tmp_path / "workbench.toml").read_text())["training"]
    assert settings == {"script": "my_app.py", "parameters": "hydra", "config": "conf/config.yaml"}
    assert '"data.path"' in result.stdout and '"required": [\n    "data.path"\n  ]' in result.stdout
