"""``workbench model …``: the model tools from a terminal, one subcommand per tool.

The subcommands are generated from the tools' declarations (``ToolSpec``, plugins' tools
included), and the values go through ``ToolSpec.resolve``, so the CLI and the tool window take
the same parameters and check them the same way. Progress, Ctrl+C, errors and ``--json`` are the
CLI kit's (workbench.clikit): an error (ModelToolError) is one line and exit status 1 (with
``--json``, stdout gets ``{"error": …, "tool": …}`` too); a cancel (Ctrl+C) exits 130.

Start-up: listing the tools imports their declarations only, never torch or onnxruntime (a tool
imports those inside its run function, in the job process).
"""

from __future__ import annotations

import functools
import shutil
import sys
import textwrap
from pathlib import Path

import click

from workbench.clikit import CtrlC, HelpWhenBareGroup, ProgressLine, emit, print_json, reported_errors

_CONTEXT = {"help_option_names": ["-h", "--help"]}
_METAVARS = {"str": "TEXT", "int": "N", "float": "NUMBER", "path": "PATH", "paths": "PATH",
             "strings": "A,B,..."}
# How often the progress line looks for news and for Ctrl+C, in seconds.
POLL_S = 0.05
# `workbench model list`: a parameter's usage longer than this puts its help on the next line.
LIST_USAGE_WIDTH = 26
# Columns of the argument descriptions in a tool's --help (click's own text is at most 80 wide).
HELP_WIDTH = 76


def _tools() -> dict:
    from workbench.modeltools.registry import all_tools

    return all_tools()


class ModelGroup(HelpWhenBareGroup):
    """``list`` and one subcommand per tool, built from its declaration when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*_tools(), *super().list_commands(ctx)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None:
            return command
        spec = _tools().get(name)
        return tool_command(spec) if spec is not None else None

    def resolve_command(self, ctx: click.Context, args: list[str]):
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            from workbench.modeltools.registry import get_tool

            get_tool(args[0])  # its error names the tools and the one that was probably meant
        return super().resolve_command(ctx, args)


@click.group("model", cls=ModelGroup, context_settings=_CONTEXT)
def model_group() -> None:
    """Convert, quantize, sparsify, inspect and compare models.

    Each tool takes the model as its argument and writes what it makes beside it unless -o says
    where. `workbench model TOOL --help` explains a tool's parameters; `workbench model list`
    lists every tool's. A tool shows its progress on stderr and prints its report at the end
    (--json: the report as JSON, and nothing else on stdout; an error as {"error": ...}). Ctrl+C
    cancels it, nothing is written and the exit status is 130; a second Ctrl+C stops it at once.
    """


@model_group.command("list", context_settings=_CONTEXT)
@click.option("--json", "as_json", is_flag=True, help="Print the tools and their parameters as JSON.")
def list_command(as_json: bool) -> None:
    """List the model tools (plugins' too) with their parameters."""
    tools = list(_tools().values())
    if as_json:
        print_json([spec.to_json() for spec in tools])
        return
    columns = max(40, shutil.get_terminal_size().columns - 1)
    blocks = []
    for spec in tools:
        origin = f" (plugin {spec.plugin})" if spec.plugin else ""
        lines = textwrap.wrap(f"{spec.name}: {spec.summary}{origin}", columns, subsequent_indent="  ")
        usages = [(_usage(p), p) for p in spec.params]
        width = min(LIST_USAGE_WIDTH, max((len(u) for u, _ in usages), default=0))
        for usage, param in usages:
            default = _default_text(param)
            extra = " [required]" if param.required else (f" [default: {default}]" if default else "")
            indent = " " * (width + 6)
            if len(usage) > width:  # the help goes under a long usage
                lines.append(f"    {usage}")
                usage = ""
            lines += textwrap.wrap(param.help + extra, columns, initial_indent=f"    {usage.ljust(width)}  ",
                                   subsequent_indent=indent)
        blocks.append("\n".join(lines))
    click.echo("\n\n".join(blocks))


def _usage(param) -> str:
    if param.positional:
        return param.name.upper() + ("..." if param.type in ("paths", "strings") else "")
    if param.type == "bool":
        return f"{param.flag}/--no-{param.flag[2:]}"
    names = ", ".join([f"-{param.short}"] * bool(param.short) + [param.flag])
    kind = "[" + "|".join(param.choices) + "]" if param.type == "choice" else _METAVARS[param.type]
    return f"{names} {kind}"


def _default_text(param) -> str:
    default = param.default
    if default is None or default == "" or (isinstance(default, (list, tuple)) and not default):
        return ""
    if param.type == "bool":
        return "yes" if default else "no"
    if isinstance(default, (list, tuple)):
        return ",".join(str(item) for item in default)
    return str(default)


class _Choices(click.Choice):
    """Shows and completes the choices; the check is ToolSpec.resolve's, the same as the form's
    (with its "did you mean")."""

    def convert(self, value, param, ctx):
        return value


def _click_param(param) -> click.Parameter:
    if param.positional:
        many = param.type in ("paths", "strings")
        return click.Argument([param.name], nargs=-1 if many else 1, required=param.required,
                              metavar=param.name.upper() + ("..." if many else ""))
    default = _default_text(param)
    if param.type == "bool":
        return click.Option([param.name, f"{param.flag}/--no-{param.flag[2:]}"], help=param.help,
                            default=None if param.default is None else bool(param.default),
                            show_default=param.default is not None)
    declarations = [param.name] + ([f"-{param.short}"] if param.short else []) + [param.flag]
    kind = _Choices(param.choices) if param.type == "choice" else click.STRING
    # Values reach ToolSpec.resolve as text, defaults included, and are typed there. (No default
    # at all, not None, when there is none: click would take None for a value given.)
    shown = {"default": default, "show_default": True} if default else {}
    return click.Option(declarations, type=kind, help=param.help, required=param.required,
                        metavar=None if param.type == "choice" else _METAVARS[param.type], **shown)


def tool_command(spec) -> click.Command:
    """The ``workbench model <tool>`` command of a tool's declaration."""
    params = [_click_param(p) for p in spec.params]
    params += [
        click.Option(["as_json", "--json"], is_flag=True,
                     help="Print the report as one JSON object on stdout (progress stays on stderr)."),
        click.Option(["project", "--project"], type=click.Path(path_type=Path), default=None,
                     help="The project the model belongs to (default: the project holding the model, if any)."),
    ]
    arguments = [p for p in spec.params if p.positional]
    text = [spec.summary]
    if arguments:
        # \b keeps click from joining these lines, so they are wrapped here.
        width = max(len(p.name) for p in arguments) + 1
        lines = ["\b", "Arguments:"]
        for param in arguments:
            lines += textwrap.wrap(param.help, HELP_WIDTH, initial_indent=f"  {param.name.upper().ljust(width)} ",
                                   subsequent_indent=" " * (width + 3))
        text.append("\n".join(lines))
    if spec.plugin:
        text.append(f"From the plugin {spec.plugin}.")
    return click.Command(spec.name, params=params, callback=functools.partial(_run_command, spec),
                         help="\n\n".join(text), short_help=spec.summary + (f" (plugin {spec.plugin})" if spec.plugin else ""),
                         context_settings=_CONTEXT)


def _run_command(spec, as_json: bool, project: Path | None, **given) -> None:
    with reported_errors(as_json, {"tool": spec.name}):
        report = _run(spec, project, given)
    emit(report.to_json(), as_json, report.to_text())


def _run(spec, project: Path | None, given: dict):
    from workbench.modeltools.errors import ModelToolError
    from workbench.modeltools.params import ToolInvocation

    given = {name: list(value) if isinstance(value, tuple) else value
             for name, value in given.items() if value is not None and value != ()}
    values = spec.resolve(given)
    if project is not None:
        project = project.expanduser().absolute()
        if not (project / "workbench.toml").is_file():
            raise ModelToolError(f"{project} is not a Workbench project (it has no workbench.toml); "
                                 "give the project's folder with --project")
    invocation = ToolInvocation(spec.name, values, str(project) if project else None)
    return run_in_job(invocation, ProgressLine(sys.stderr))


def run_in_job(invocation, progress: ProgressLine):
    """Run the invocation in a job process, showing its progress; its ToolReport.

    Why a job process and not run_tool here: the job may sit in one long C call (MNN's converter,
    writing a protobuf) that holds the interpreter, and then no signal handler of this process
    would run. Here this process only waits, so a second Ctrl+C always ends the tool at once and
    its partial files are removed. C libraries printing to stdout cannot spoil --json. And the
    CLI runs a tool exactly as a tool window does. It costs one more Python start that reads the
    tools' declarations, about 0.3 s of CPU, next to tools that take seconds.
    """
    import queue

    from workbench.modeltools.job_client import ToolJob

    news: queue.SimpleQueue = queue.SimpleQueue()
    job = ToolJob(on_event=lambda event: news.put(event),
                  on_stderr=lambda line: news.put({"event": "stderr", "text": line}))
    # This process only waits on the job, so the presses are counted and acted on here.
    presses = CtrlC(interrupt_at=None)
    shown = JobNews(progress)
    with presses:
        try:
            job.start(invocation)
            handled = 0
            while not job.finished():
                _show(news, shown, POLL_S)
                if presses.count > handled:
                    handled = presses.count
                    if handled == 1:
                        progress.log("Cancelling… (Ctrl+C again stops it at once)")
                        job.cancel()
                    else:
                        job.kill()
            try:
                return job.wait()
            finally:
                _show(news, shown, 0)
                progress.close()
        finally:
            if job.poll() is None:
                job.kill()


class JobNews:
    """A job process's events on a progress line: its stages and progress as the ``Progress``
    they mean, its log and stderr lines above the line."""

    def __init__(self, line: ProgressLine):
        from workbench.modeltools.context import ProgressOfEvents

        self.line = line
        self._progress = ProgressOfEvents()

    def show(self, event: dict) -> None:
        """One event; events of other kinds (a partial file announced) show nothing."""
        if event.get("event") in ("log", "stderr"):
            self.line.log(str(event.get("text", "")))
        elif (progress := self._progress.add(event)) is not None:
            self.line(progress)


def _show(news, shown: JobNews, timeout: float) -> None:
    """Everything the job said, waiting up to ``timeout`` for the first of it."""
    import queue

    try:
        event = news.get(timeout=timeout) if timeout else news.get_nowait()
        while True:
            shown.show(event)
            event = news.get_nowait()
    except queue.Empty:
        pass
