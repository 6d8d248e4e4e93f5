"""A small tool for the job and CLI tests, and the environment that lets child processes see it.

``count`` counts steps into a text file written through atomic_output, and can be told to go
wrong in every way a real tool can: an error the user can act on, a bug, noise printed on fd 1,
ignoring cancel in a long loop, or sitting in a call that never checks (like a long C call).
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from pathlib import Path

from workbench.modeltools import ModelToolError, Param, ToolReport, ToolSpec
from workbench.modeltools.outputs import atomic_output, check_output

REPO = Path(__file__).resolve().parents[2]

BEHAVIOURS = ("none", "fail", "bug", "print", "ignore_cancel", "stuck", "linger")

COUNT = ToolSpec(
    name="count",
    title="Count",
    summary="Count steps into a text file.",
    params=(
        Param("model", "path", "The input file.", positional=True, required=True, suffixes=(".txt",)),
        Param("output", "path", "The text file to write (default: <input>.count.txt beside the input).",
              short="o", is_output=True),
        Param("steps", "int", "How many steps to count.", default=3, minimum=1, maximum=1_000_000),
        Param("delay", "float", "Seconds each step takes.", default=0.0, minimum=0.0),
        Param("behaviour", "choice", "How the run goes wrong.", default="none", choices=BEHAVIOURS),
        Param("verbose", "bool", "Log every step.", default=True),
        Param("tags", "strings", "Words to write first.", default=()),
    ),
    run="tests.modeltools.job_helpers:run_count",
    stages=("Reading", "Counting", "Checking"),
    applies_to=(".txt",),
)

MERGE = ToolSpec(
    name="merge",
    title="Merge",
    summary="Concatenate several text files.",
    params=(
        Param("paths", "paths", "The files to merge.", positional=True, required=True),
        Param("output", "path", "The merged file.", short="o", is_output=True, required=True),
    ),
    run="tests.modeltools.job_helpers:run_merge",
)

TOOLS = ("tests.modeltools.job_helpers:COUNT", "tests.modeltools.job_helpers:MERGE")


def run_count(values: dict, context) -> ToolReport:
    source = Path(values["model"])
    behaviour = values["behaviour"]
    context.stage("Reading")
    if behaviour == "fail" or not source.is_file():
        raise ModelToolError(f"{source} is not a text file to count; give a .txt file")
    if behaviour == "bug":
        return {}["no such key"]
    if behaviour == "print":
        os.write(1, b"noise written to fd 1 by a C library\n")
        print("noise printed by Python")
    target = check_output(values["output"] or source.with_name(f"{source.stem}.count.txt"), [source])
    context.stage("Counting")
    with atomic_output(target) as temporary, open(temporary, "w") as written:
        written.writelines(f"{tag}\n" for tag in values["tags"])
        if behaviour == "stuck":
            written.write("started\n")
            written.flush()
            context.log("stuck in a call that never checks for cancel")
            time.sleep(600)
        for step in range(values["steps"]):
            if behaviour != "ignore_cancel":
                context.progress((step + 1) / values["steps"])
            elif step == 0:
                context.log("counting without checking for cancel")
            written.write(f"{step + 1}\n")
            written.flush()
            if values["verbose"]:
                context.log(f"step {step + 1} of {values['steps']}")
            time.sleep(values["delay"])
    context.stage("Checking")
    if behaviour == "linger":  # a thread that keeps the process from ending after the report
        threading.Thread(target=time.sleep, args=(600,), daemon=False).start()
    advice = (["count fewer with --steps, or faster with --no-verbose and -o on a fast disk"]
              if "advice" in values["tags"] else [])
    return ToolReport(tool="count", title=f"Counted {values['steps']} steps",
                      figures={"steps": values["steps"], "niceness": os.nice(0)}, outputs=[str(target)],
                      warnings=advice)


def run_merge(values: dict, context) -> ToolReport:
    target = check_output(values["output"], values["paths"])
    with atomic_output(target) as temporary:
        temporary.write_text("".join(Path(p).read_text() for p in values["paths"]))
    return ToolReport(tool="merge", title=f"Merged {len(values['paths'])} files", outputs=[str(target)])


def existing_built_ins() -> tuple[str, ...]:
    """The built-in tools whose modules exist in this checkout."""
    from workbench.modeltools.registry import BUILT_IN

    return tuple(entry for entry in BUILT_IN if importlib.util.find_spec(entry.partition(":")[0]) is not None)


def child_tools_path(folder: Path, built_in: tuple[str, ...]) -> str:
    """A PYTHONPATH under which every Python process started by a test (the job, ``python -m
    workbench``) has ``built_in`` as its built-in tools: a sitecustomize module in ``folder``
    sets them at start-up, before any tool is looked up."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "from workbench.modeltools import registry\n"
        f"registry.BUILT_IN = {tuple(built_in)!r}\n")
    return os.pathsep.join([str(folder), str(REPO)])
