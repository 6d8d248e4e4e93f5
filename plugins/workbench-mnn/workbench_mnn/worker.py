"""The MNN worker: a Python process of its own that runs MNN's converter and MNN's runtime, so
that MNN aborting or crashing (it throws C++ exceptions nobody catches, and segfaults on some
models) ends this process, not the tool job: ``python -P -m workbench_mnn.worker LOG_FILE``.

The parent side is ``worker_client.MnnWorker``. The protocol, JSON lines both ways:

- stdin, one request a line: ``{"call": NAME, ...arguments}``, NAME one of CALLS, each handled
  by the ``on_<NAME>`` method of ``Worker``:

  ``convert``  ``argv``: MNNConvert's command line (see ``convert.converter_arguments``)
  ``open``     ``path``, ``threads``: load an ``.mnn`` file; replies with its inputs and outputs
  ``run``      ``inputs`` (an ``.npy`` file), ``step``, ``outputs`` (an ``.npz`` file to write):
               run the opened model over the inputs, ``step`` samples at a time
  ``latency``  ``inputs``, ``budget_s``: time the opened model on one batch, like
               ``workbench.modeltools.latency``

  End of input (or ``{"call": "quit"}``) ends the worker.
- stdout, the replies (REPLIES): ``{"reply": "progress", "fraction"}`` while a call works,
  then ``{"reply": "done", ...results}`` or ``{"reply": "error", "message"}``.
- stderr and everything MNN prints: LOG_FILE, which the parent names in its error when this
  process dies.

The worker loads MNN's converter and runtime the way ``native`` does: never through
``MNN.tools``, whose command-line wrappers install packages and send telemetry.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

CALLS = ("convert", "open", "run", "latency", "quit")
REPLIES = ("progress", "done", "error")


class Worker:
    """The handlers, one per call; each returns the ``done`` reply's results."""

    def __init__(self, reply):
        self.reply = reply
        self.session = None

    def on_convert(self, argv: list[str]) -> dict:
        from workbench_mnn.native import load_converter

        converter = load_converter()
        # No console_caught here: MNN's messages go straight to the log file, so they are there
        # even when the converter aborts half-way.
        converter.mnnconvert(list(argv))
        return {}

    def on_open(self, path: str, threads: int) -> dict:
        from workbench_mnn.runtime import load_mnn_model

        self.session = load_mnn_model(Path(path), int(threads))
        return {"input_names": self.session.input_names,
                "input_shape": self.session.input_shape,
                "output_names": self.session.output_names,
                "fixed_batch": self.session.fixed_batch}

    def on_run(self, inputs: str, step: int, outputs: str) -> dict:
        import numpy as np

        x = np.load(inputs)
        parts = []
        for start in range(0, len(x), step):
            parts.append(self._opened().run(x[start:start + step]))
            self.progress((start + step) / len(x))
        joined = [np.concatenate(values) for values in zip(*parts)]
        np.savez(outputs, *joined)
        return {"count": len(joined)}

    def on_latency(self, inputs: str, budget_s: float) -> dict:
        import numpy as np

        from workbench.modeltools import latency

        session = self._opened()
        one = np.load(inputs)
        start = time.perf_counter()
        session.run(one)
        once = max(time.perf_counter() - start, 1e-5)
        repeats = int(max(5, min(100, budget_s / once)))
        done = iter(range(0, repeats, 10))

        def between_runs():
            # latency calls this before every tenth run, outside the timed part
            self.progress(next(done, repeats) / repeats)

        return latency(lambda: session.run(one), repeats=repeats, warmup=2,
                       check_cancelled=between_runs)

    def progress(self, fraction: float) -> None:
        self.reply({"reply": "progress", "fraction": max(0.0, min(1.0, float(fraction)))})

    def _opened(self):
        from workbench.modeltools import ModelToolError

        if self.session is None:
            raise ModelToolError("the MNN worker was asked to run a model before opening one")
        return self.session


def serve(requests, reply) -> None:
    """Answer ``requests`` (lines of JSON) until the last one or a ``quit``."""
    from workbench.modeltools import ModelToolError

    worker = Worker(reply)
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        call = request.pop("call", "")
        if call == "quit":
            return
        handler = getattr(worker, f"on_{call}", None) if call in CALLS else None
        if handler is None:
            reply({"reply": "error", "message": f"the MNN worker has no call {call!r}"})
            continue
        try:
            result = handler(**request)
        except ModelToolError as exc:
            reply({"reply": "error", "message": str(exc)})
        except Exception as exc:  # a bug: the traceback goes to the log file
            traceback.print_exc()
            reply({"reply": "error", "bug": True,
                   "message": f"{type(exc).__name__}: {str(exc)[:300]}"})
        else:
            reply({"reply": "done", **result})


def main(argv: list[str]) -> int:
    from workbench_mnn import native

    # The replies get a private copy of stdout; descriptor 1 then joins 2 in the log file, so
    # that what MNN prints lands there and never among the replies.
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    native.console_log = Path(argv[0]) if argv else None

    def reply(message: dict) -> None:
        replies.write(json.dumps(message) + "\n")

    serve(sys.stdin, reply)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
