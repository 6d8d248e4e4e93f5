"""The language session against a real python-lsp-server, without Qt: completion, signature
help, diagnostics, definition, references, rename, symbols and formatting; an answer for text
that changed meanwhile is dropped; a killed server comes back with its documents; a missing or
crashing server ends in one clear failure."""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
from pathlib import Path

import pytest

from tests.lsp.conftest import MODEL, TRAIN, UGLY, line_of, make_project, wait_for
from workbench.lsp import (
    Diagnostics,
    LanguageSession,
    RequestFailed,
    ServerStatus,
    server_config,
)
from workbench.lsp.text_sync import apply_edits

ANSWER_TIMEOUT_S = 90.0


class Events:
    """What the session reported, from its thread."""

    def __init__(self):
        self.items: list = []
        self.lock = threading.Lock()

    def __call__(self, event) -> None:
        with self.lock:
            self.items.append(event)

    def of(self, kind) -> list:
        with self.lock:
            return [event for event in self.items if isinstance(event, kind)]

    def states(self) -> list[str]:
        return [status.state for status in self.of(ServerStatus)]


def ask(method, *args, timeout: float = ANSWER_TIMEOUT_S, **options):
    answers: queue.Queue = queue.Queue()
    method(*args, answers.put, **options)
    return answers.get(timeout=timeout)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return make_project(tmp_path_factory.mktemp("lsp") / "demo")


@pytest.fixture(scope="module")
def served(project):
    """One server for the module, with train.py and model.py open."""
    events = Events()
    session = LanguageSession(server_config(project, {}), events)
    session.start()
    session.open(project / "train.py", TRAIN)
    session.open(project / "model.py", MODEL)
    wait_for(lambda: session.status.state == "running", what="the server to start")
    yield session, events, project
    session.stop(wait=10)


def diagnostics_of(events: Events, path) -> list:
    return [event for event in events.of(Diagnostics) if event.path == path]


def test_completions_after_torch_nn_include_conv2d(served):
    session, _, project = served
    text = TRAIN + "layer = nn.\n"
    session.change(project / "train.py", text)
    line, column = line_of(text, "layer = nn.")
    found = ask(session.completion, project / "train.py", line, column + len("layer = nn."))
    labels = [candidate.label for candidate in found]
    assert "Conv2d" in labels and "Linear" in labels
    conv = found[labels.index("Conv2d")]
    assert conv.insert == "Conv2d" and conv.kind == "class"
    session.change(project / "train.py", TRAIN)


def test_a_big_namespace_lists_every_name_with_the_kind_of_the_first_ones(served):
    from workbench.lsp.pylsp_completion import KINDS_AT_MOST

    session, _, project = served
    for typed, expected in (("torch.", None), ("torch.ze", "zeros")):
        text = TRAIN + f"import torch\nvalue = {typed}\n"
        session.change(project / "train.py", text)
        line, column = line_of(text, f"value = {typed}")
        found = ask(session.completion, project / "train.py", line, column + len(f"value = {typed}"))
        labels = [candidate.label for candidate in found]
        if expected is None:
            assert len(labels) > 1000 and {"zeros", "tensor", "nn"} <= set(labels)
            assert [c.kind for c in found[:KINDS_AT_MOST]].count("") < KINDS_AT_MOST // 10
            assert {c.kind for c in found[KINDS_AT_MOST:]} == {""}
        else:
            zeros = found[labels.index(expected)]  # narrowed: every name has its kind
            assert zeros.kind == "function" and all(c.kind for c in found)
    session.change(project / "train.py", TRAIN)


def test_signature_help_of_conv2d_names_in_channels(served):
    session, _, project = served
    text = TRAIN + "layer = nn.Conv2d(\n"
    session.change(project / "train.py", text)
    line, column = line_of(text, "Conv2d(")
    help = ask(session.signature_help, project / "train.py", line, column + len("Conv2d("))
    signature = help.active
    assert signature.label.startswith("Conv2d(") and help.active_parameter == 0
    start, end = signature.parameter_span(0)
    assert signature.label[start:end] == "in_channels"
    session.change(project / "train.py", TRAIN)


def test_an_undefined_name_gets_an_error_for_the_text_that_has_it(served):
    session, events, project = served
    path = project / "train.py"
    text = TRAIN + "print(nett)\n"
    version = session.change(path, text)
    found = wait_for(lambda: [d for d in diagnostics_of(events, path) if d.version == version],
                     what="diagnostics of the new text")
    [problem] = [p for p in found[-1].problems if "nett" in p.message]
    assert problem.severity == "error" and problem.source == "pyflakes"
    assert (problem.span.line, problem.span.column) == line_of(text, "nett")
    version = session.change(path, TRAIN)
    wait_for(lambda: [d for d in diagnostics_of(events, path) if d.version == version], what="diagnostics again")
    assert not [p for p in diagnostics_of(events, path)[-1].problems if "nett" in p.message]


def test_definition_of_a_function_used_in_train_is_in_model(served):
    session, _, project = served
    line, column = line_of(TRAIN, "build(8)")
    [location] = ask(session.definition, project / "train.py", line, column + 1)
    assert location.path == project / "model.py"
    assert (location.span.line, location.span.column) == line_of(MODEL, "build(width)")
    assert location.text == "def build(width):"


def test_references_cover_both_files(served):
    session, _, project = served
    line, column = line_of(MODEL, "build(width)")
    found = ask(session.references, project / "model.py", line, column)
    places = sorted((location.path.name, location.span.line) for location in found)
    assert places == [("model.py", line_of(MODEL, "def build")[0]),
                      ("train.py", line_of(TRAIN, "import build")[0]), ("train.py", line_of(TRAIN, "build(8)")[0])]


def test_rename_edits_both_files(served):
    session, _, project = served
    line, column = line_of(TRAIN, "build(8)")
    edits = ask(session.rename, project / "train.py", line, column, "make_net")
    by_file = {edit.path.name: apply_edits(text, edit.edits)
               for edit, text in ((edit, (project / edit.path.name).read_text()) for edit in edits)}
    assert set(by_file) == {"model.py", "train.py"}
    assert "def make_net(width):" in by_file["model.py"] and "build" not in by_file["model.py"]
    assert "from model import make_net" in by_file["train.py"] and "net = make_net(8)" in by_file["train.py"]


def test_document_symbols_nest_methods_in_their_class(served):
    session, _, project = served
    symbols = ask(session.symbols, project / "model.py")
    outline = {symbol.name: symbol for symbol in symbols}
    assert {"Net", "build"} <= set(outline)
    assert outline["Net"].kind == "class" and outline["build"].kind == "function"
    assert {child.name for child in outline["Net"].children} >= {"__init__", "forward"}
    assert outline["build"].children == ()  # its local names are not in the outline


def test_format_document_and_a_range(served):
    session, _, project = served
    path = project / "ugly.py"
    session.open(path, UGLY)
    try:
        formatted = apply_edits(UGLY, ask(session.format, path))
        assert "def squash(a, b):" in formatted and "x = [1, 2, 3]" in formatted
        from workbench.lsp import Span

        only_last = apply_edits(UGLY, ask(session.format, path, span=Span(4, 0, 5, 0)))
        assert "x = [1, 2, 3]" in only_last and "def  squash( a,b ):" in only_last
    finally:
        session.close(path)


def test_an_answer_for_text_that_changed_meanwhile_is_dropped(served):
    session, _, project = served
    path = project / "train.py"
    line, column = line_of(TRAIN, "build(8)")
    answers: queue.Queue = queue.Queue()
    session.completion(path, line, column + 3, answers.put)
    session.definition(path, line, column + 1, answers.put)
    session.change(path, TRAIN + "\n")  # typed while both were on their way
    [failure] = [answers.get(timeout=ANSWER_TIMEOUT_S)]
    assert isinstance(failure, RequestFailed) and failure.stale  # the command is told
    with pytest.raises(queue.Empty):
        answers.get(timeout=1.0)  # the completion is not: typing asks again by itself
    fresh = ask(session.completion, path, line, column + 3)
    assert "build" in [candidate.label for candidate in fresh]
    session.change(path, TRAIN)


def test_a_killed_server_is_started_again_and_told_the_open_files(served):
    session, events, project = served
    path = project / "train.py"
    pid = session.server_pid
    running_before = events.states().count("running")
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: events.states().count("running") > running_before, what="the server to come back")
    assert "restarting" in events.states()
    assert session.server_pid not in (None, pid)
    version = session.change(path, TRAIN + "print(undefined_after_restart)\n")
    found = wait_for(lambda: [d for d in diagnostics_of(events, path) if d.version == version],
                     what="diagnostics from the new server")
    assert any("undefined_after_restart" in problem.message for problem in found[-1].problems)
    [location] = ask(session.definition, path, *_after(line_of(TRAIN, "build(8)")))
    assert location.path == project / "model.py"
    session.change(path, TRAIN)


def _after(place: tuple[int, int]) -> tuple[int, int]:
    return place[0], place[1] + 1


def test_a_missing_server_fails_once_with_what_to_do(tmp_path):
    root = make_project(tmp_path / "p")
    events = Events()
    config = server_config(root, {"lsp": {"command": [str(tmp_path / "no-such-python"), "-m", "pylsp"]}})
    session = LanguageSession(config, events)
    session.start()
    session.open(root / "train.py", TRAIN)
    failure = ask(session.hover, root / "train.py", 1, 1, timeout=30)
    assert isinstance(failure, RequestFailed) and "was not found" in failure.message
    assert events.states() == ["failed"]
    assert "pip install python-lsp-server" in session.status.message
    session.stop(wait=5)


def test_a_python_without_pylsp_is_said_so_and_not_retried(tmp_path):
    root = make_project(tmp_path / "p")
    events = Events()
    config = server_config(root, {"lsp": {"command": [sys.executable, "-I", "-m", "pylsp_is_not_here.pylsp"]}})
    session = LanguageSession(config, events)
    session.start()
    wait_for(lambda: session.status.state == "failed", timeout=30, what="the failure")
    assert "No module named" in session.status.message and "pylsp" in session.status.message
    assert events.states() == ["starting", "failed"]
    session.stop(wait=5)


def test_a_server_that_keeps_crashing_is_given_up_after_a_few_restarts(tmp_path):
    root = make_project(tmp_path / "p")
    events = Events()
    config = server_config(root, {"lsp": {"command": [sys.executable, "-c",
                                                      "import sys; print('boom', file=sys.stderr); sys.exit(3)"]}})
    session = LanguageSession(config, events, max_restarts=2)
    session.start()
    wait_for(lambda: session.status.state == "failed", timeout=60, what="giving up")
    assert events.states().count("starting") == 3 and events.states().count("restarting") == 2
    assert "stopped 3 times" in session.status.message and "boom" in session.status.message
    session.stop(wait=5)


def test_completions_know_the_packages_of_the_projects_interpreter(tmp_path):
    import subprocess
    import sysconfig

    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    purelib = sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)})
    Path(purelib, "only_in_the_project_env.py").write_text("def calibrate(scale):\n    return scale\n")
    root = make_project(tmp_path / "p")
    path = root / "use_env.py"
    text = "import only_in_the_project_env\nonly_in_the_project_env.\n"
    path.write_text(text)
    config = server_config(root, {"python": {"interpreter": str(env / "bin" / "python")}})
    assert config.python == str(env / "bin" / "python")
    session = LanguageSession(config, Events(), role="assist")
    session.start()
    try:
        session.open(path, text)
        found = ask(session.completion, path, 2, len("only_in_the_project_env."))
        assert "calibrate" in [candidate.label for candidate in found]
    finally:
        session.stop(wait=10)
