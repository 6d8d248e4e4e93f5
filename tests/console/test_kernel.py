"""The console's kernel as a service: a real ipykernel started in the project folder with the
project's interpreter and inline plots, interrupted and ended; and interpreters that cannot run
one, each refused with one message that says what to do."""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from workbench.console import ConsoleError, Interpreter, SUMMARY_EXPRESSION, parse_summary_reply, probe_setup_code, start_kernel
from workbench.console.kernel import INLINE_BACKEND
from workbench.tasks import Cancelled, CancelToken

HERE = Interpreter(Path(sys.executable), configured=False)


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    project = tmp_path_factory.mktemp("project")
    launched = []
    running = start_kernel(HERE, project, on_launched=launched.append)
    assert launched == [running]
    yield running
    running.shutdown()


@pytest.fixture
def client(kernel):
    from jupyter_client import BlockingKernelClient

    client = BlockingKernelClient()
    client.load_connection_info(kernel.connection_info)
    client.start_channels()
    yield client
    client.stop_channels()


def test_the_kernel_runs_in_the_project_folder_with_inline_plots(kernel, client):
    reply = client.execute_interactive(
        "import os, sys, matplotlib\nplace = os.getcwd()", timeout=60,
        user_expressions={"place": "os.getcwd()", "python": "sys.executable", "backend": "matplotlib.get_backend()"})
    values = {name: result["data"]["text/plain"] for name, result in reply["content"]["user_expressions"].items()}
    assert values["place"] == repr(str(kernel.cwd))
    assert values["python"] == repr(sys.executable)
    assert "inline" in values["backend"]
    assert os.environ.get("MPLBACKEND") != INLINE_BACKEND  # Workbench's own stays as it was


def test_the_probe_summarises_the_kernels_namespace(client):
    client.execute_interactive(probe_setup_code(), silent=True, timeout=60)
    reply = client.execute_interactive("import numpy as np\ngrid = np.ones((4, 2), dtype=np.int16)", timeout=60,
                                       user_expressions={"ns": SUMMARY_EXPRESSION})
    variables, _ = parse_summary_reply(reply["content"]["user_expressions"]["ns"])
    grid = next(v for v in variables if v.name == "grid")
    assert (grid.size, grid.dtype, grid.min, grid.max) == ("(4, 2)", "int16", 1, 1)
    reply = client.execute_interactive("dir()", timeout=60, user_expressions={"ns": "[n for n in dir() if 'workbench' in n]"})
    assert reply["content"]["user_expressions"]["ns"]["data"]["text/plain"] == "[]"  # no name left behind


def test_interrupt_stops_an_endless_loop_and_the_kernel_goes_on(kernel, client):
    outputs = []
    done = threading.Event()

    def run_forever():
        reply = client.execute_interactive("while True:\n    pass", timeout=120, output_hook=outputs.append)
        outputs.append(reply)
        done.set()

    worker = threading.Thread(target=run_forever)
    worker.start()
    busy = lambda: any(m.get("msg_type") == "status" and m["content"]["execution_state"] == "busy" for m in outputs)  # noqa: E731
    deadline = time.monotonic() + 60
    while not busy() and time.monotonic() < deadline:
        time.sleep(0.05)
    kernel.interrupt()
    assert done.wait(60), "the loop did not stop"
    worker.join()
    assert outputs[-1]["content"]["status"] == "error" and outputs[-1]["content"]["ename"] == "KeyboardInterrupt"
    assert kernel.is_alive()


def test_shutdown_ends_the_process_and_removes_its_connection_file(tmp_path):
    running = start_kernel(HERE, tmp_path)
    pid, connection_file = running.pid, running.connection_file
    assert Path(connection_file).is_file()
    running.shutdown()
    running.shutdown()  # twice is harmless
    assert not Path(connection_file).exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_an_interpreter_that_does_not_exist_is_refused_with_the_fix(tmp_path):
    missing = Interpreter(tmp_path / "nowhere" / "python", configured=True)
    with pytest.raises(ConsoleError) as error:
        start_kernel(missing, tmp_path)
    message = str(error.value)
    assert "does not exist" in message and "[python] interpreter" in message and "workbench.toml" in message


def test_an_interpreter_that_exits_at_once_says_what_it_printed(tmp_path):
    broken = Interpreter(_script(tmp_path, "python", "echo 'this is not Python' >&2; exit 3"), configured=True)
    with pytest.raises(ConsoleError) as error:
        start_kernel(broken, tmp_path)
    message = str(error.value)
    assert "exited at once (code 3)" in message and "this is not Python" in message
    assert "[python] interpreter" in message and "Restart" in message


def test_a_python_without_ipykernel_is_told_how_to_install_it(tmp_path):
    # -S: no site-packages, so no ipykernel, as in a fresh virtual environment.
    bare = Interpreter(_script(tmp_path, "python", f'exec "{sys.executable}" -S "$@"'), configured=True)
    with pytest.raises(ConsoleError) as error:
        start_kernel(bare, tmp_path)
    assert "ipykernel is not installed" in str(error.value)
    assert f"{bare.path} -m pip install ipykernel" in str(error.value)


def test_a_kernel_that_never_answers_is_given_up_and_ended(tmp_path):
    pid_file = tmp_path / "pid"
    silent = Interpreter(_script(tmp_path, "python", f'echo $$ > "{pid_file}"; exec sleep 600'), configured=True)
    with pytest.raises(ConsoleError, match="did not answer within 2 s"):
        start_kernel(silent, tmp_path, ready_timeout=2)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_cancelled_start_ends_the_process(tmp_path):
    launched = []
    cancel = CancelToken()

    def launched_then_cancelled(kernel):
        launched.append(kernel)
        cancel.cancel()

    with pytest.raises(Cancelled):
        start_kernel(HERE, tmp_path, on_launched=launched_then_cancelled, cancel=cancel)
    assert not launched[0].is_alive()
