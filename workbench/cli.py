"""The ``workbench`` command.

Subcommands of later capabilities (``git``, ``train``, ``model``, ``device`` …) are listed in
CAPABILITY_GROUPS and imported only when called, so ``workbench open`` stays a few-millisecond
forwarder that loads neither Qt nor any capability.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from pathlib import Path

import click

from workbench import __version__
from workbench.ipc import messages
from workbench.ipc.client import HubClient
from workbench.app.open_project import OpenError, check_project, project_root_for, start_project_window
from workbench.clikit import CANCELLED_MESSAGE, CommandCancelled, CommandFailed, emit, user_message
from workbench.ipc.errors import IpcError

# Capabilities, even workbench.project, are imported inside the commands that use them: every
# millisecond spent here delays the window of `workbench open` when no hub runs yet.

# name -> "module:attribute" of a click group; a capability adds its line here.
CAPABILITY_GROUPS: dict[str, str] = {
    "git": "workbench.git.cli:git_group",
    "train": "workbench.training.cli:train_command",
    "runs": "workbench.training.cli:runs_group",
    "cluster": "workbench.cluster.cli:cluster_group",
    "model": "workbench.modeltools.cli:model_group",
    "device": "workbench.device.deploy_cli:device_group",  # with the deploy commands
    "init": "workbench.adopt.cli:init_command",
    "dataset": "workbench.registry.cli:dataset_group",
    "registry": "workbench.device.deploy_cli:registry_group",  # its rollback pushes to the devices
    "pipeline": "workbench.pipeline.cli:pipeline_group",
}

HUB_START_TIMEOUT_S = 15.0


class LazyGroup(click.Group):
    """A group whose capability subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *CAPABILITY_GROUPS])

    def resolve_command(self, ctx: click.Context, args: list[str]):
        # `workbench PATH…`, which a file manager runs through the desktop entry's
        # `Exec=workbench %F`, opens what it names (a command's name always wins).
        if args and not args[0].startswith("-") and args[0] not in self.list_commands(ctx) \
                and Path(args[0]).expanduser().exists():
            return "open", self.get_command(ctx, "open"), args
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in CAPABILITY_GROUPS:
            module_name, _, attribute = CAPABILITY_GROUPS[name].partition(":")
            return getattr(importlib.import_module(module_name), attribute)
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.ClickException:
            raise
        except Exception as exc:
            message = user_message(exc)
            if message is None:
                raise
            raise CommandFailed(message) from None


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM"))


def _require_display() -> None:
    if not _has_display():
        raise CommandFailed(
            "there is no display here (DISPLAY is not set). Run the app under a virtual one with "
            "`xvfb-run -a workbench`, or render a window to a file with `workbench screenshot -o welcome.png`."
        )


def _connect_hub(replace_foreign: bool = False) -> HubClient | None:
    """The running hub, or None. With ``replace_foreign``, a socket that some other program
    answers on counts as no hub when no hub process holds the hub lock: the runtime folder is
    private to this user and Workbench's, so the next hub takes the socket back."""
    try:
        return HubClient.connect(timeout=3.0)
    except IpcError as exc:
        if getattr(exc, "no_hub", False):
            return None
        if replace_foreign and not _hub_process_alive():
            click.echo(f"workbench: replacing a socket that no Workbench hub owns ({exc})", err=True)
            return None
        raise


def _hub_process_alive() -> bool:
    from workbench.platform.processes import is_alive
    from workbench.ipc.endpoint import hub_lock

    pid = hub_lock().holder_pid()
    return pid is not None and is_alive(pid)


def _wait_for_hub(process) -> HubClient:
    from workbench.ipc.endpoint import hub_log_path

    deadline = time.monotonic() + HUB_START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            return HubClient.connect(timeout=1.0)
        except IpcError:
            pass  # not listening yet, or the old socket is still there until the hub takes it
        if process.poll() not in (None, 0):
            break
        time.sleep(0.03)
    raise CommandFailed(f"the hub did not start; see {hub_log_path()}")


@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="workbench", message="%(prog)s %(version)s")
@click.option("--foreground", is_flag=True, help="Run the hub in this process instead of detaching it.")
@click.pass_context
def cli(ctx: click.Context, foreground: bool) -> None:
    """Workbench: write, train, convert and verify neural networks for devices.

    With no command, starts the hub and shows the welcome window (or brings it forward).
    """
    if ctx.invoked_subcommand is not None:
        return
    _require_display()
    hub = _connect_hub(replace_foreign=True)
    if hub is not None:
        with hub:
            hub.call(messages.HUB_SHOW_WELCOME)
        return
    from workbench.app import launcher

    if foreground:
        from workbench.app.hub_process import main as hub_main

        sys.exit(hub_main([]))
    # If another call starts a hub at the same moment, the hub lock lets one of them win and
    # the other process exits; both callers then reach the winner here.
    _wait_for_hub(launcher.spawn_hub(show_welcome=True)).close()


@cli.command("open")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--line", type=click.IntRange(min=1), help="Line to show when PATH is a file (1 is the first).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def open_command(paths: tuple[Path, ...], line: int | None, as_json: bool) -> None:
    """Open the project at PATH (a folder, or a file inside a project) in its own window; a
    model file (.onnx, .pt, ...) outside any project opens in a window of the Inspect tool.

    Forwards to the running hub and returns at once; starts a hub if none runs. `workbench
    PATH...` does the same (what a file manager runs for the files it opens in Workbench).
    """
    results = [_open_one(path.expanduser().resolve(), line) for path in paths]
    said = [result.pop("said") for result in results]
    emit(results[0] if len(results) == 1 else results, as_json, "\n".join(said))


def _open_one(path: Path, line: int | None) -> dict:
    if path.is_file():
        from workbench.modeltools.inspect import SPEC as INSPECT
        from workbench.project.project_file import enclosing_project

        # A model file outside any project: the files the Inspect tool reads.
        if path.suffix.lower() in INSPECT.applies_to and enclosing_project(path.parent) is None:
            return _open_in_inspect(path)
    root, file = _project_root_for(path)
    hub = _connect_hub(replace_foreign=True)
    if hub is None:
        _require_display()
        result = start_project_window(root, file, line)
    else:
        check_project(root)
        with hub:
            result = hub.call(messages.HUB_OPEN_PROJECT,
                              {"path": str(root), "file": str(file) if file else None, "line": line})
    verb = "Focused" if result.get("already_open") else "Opened"
    return {**result, "said": f"{verb} {root} (pid {result['pid']})"}


def _open_in_inspect(model: Path) -> dict:
    hub = _connect_hub(replace_foreign=True)
    if hub is None:
        _require_display()
        from workbench.app import launcher

        hub = _wait_for_hub(launcher.spawn_hub(show_welcome=False))
    with hub:
        result = hub.call(messages.HUB_OPEN_TOOL, {"tool": "inspect", "values": {"model": str(model)}, "run": True})
    return {**result, "said": f"Opened {model} in Inspect (pid {result['pid']})"}


def _project_root_for(path: Path) -> tuple[Path, Path | None]:
    """project_root_for, with its error as the CLI's one-line error."""
    try:
        return project_root_for(path)
    except OpenError as exc:
        raise CommandFailed(str(exc)) from None


@cli.command("new")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--template", "-t", default="digits", show_default=True, help="Template to start from.")
@click.option("--name", help="Project name (default: the folder name).")
@click.option("--open", "open_after", is_flag=True, help="Open the new project in a window.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def new_command(ctx: click.Context, path: Path, template: str, name: str | None, open_after: bool,
                as_json: bool) -> None:
    """Create a project at PATH from a template (see `workbench templates`)."""
    from workbench.project import create_from_template

    project = create_from_template(template, path.expanduser().absolute(), name)
    repository = (project.root / ".git").is_dir()  # made one: it was in no repository
    emit({"path": str(project.root), "name": project.name, "template": template, "new_repository": repository},
          as_json, f"Created {project.name} from the {template} template in {project.root}"
          + (", with its files as the first commit of a new Git repository" if repository else ""))
    if open_after:
        ctx.invoke(open_command, path=project.root, line=None, as_json=as_json)


@cli.command("templates")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def templates_command(as_json: bool) -> None:
    """List the project templates."""
    from workbench.project import list_templates

    templates = list_templates()
    data = [{"name": t.name, "title": t.title, "description": t.description} for t in templates]
    emit(data, as_json, "\n".join(f"{t.name:12} {t.title}: {t.description}" for t in templates))


@cli.command("windows")
@click.option("--json", "as_json", is_flag=True, help="Print the registry as JSON.")
@click.option("--all", "include_spares", is_flag=True, help="Include spare window processes.")
def windows_command(as_json: bool, include_spares: bool) -> None:
    """List the windows the running hub knows: pid, kind, project and state."""
    hub = _connect_hub()
    if hub is None:
        raise CommandFailed("no Workbench hub is running. Start one with `workbench`.")
    with hub:
        windows = hub.call(messages.HUB_LIST_WINDOWS, {"all": include_spares})["windows"]
    lines = [f"{w['pid']:>8}  {w['kind']:8} {w['state']:12} {w['project'] or ''}" for w in windows]
    emit(windows, as_json, "\n".join(lines) if lines else "No windows are open.")


@cli.command("screenshot")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path), help="PNG file to write.")
@click.option("--size", default="1200x780", show_default=True, help="Window size, WIDTHxHEIGHT.")
def screenshot_command(path: Path | None, output: Path, size: str) -> None:
    """Render the welcome window, or the project window of PATH, offscreen into a PNG."""
    from workbench.app.screenshot import render_window

    try:
        width, height = (int(v) for v in size.lower().split("x"))
    except ValueError:
        raise CommandFailed(f"--size must look like 1200x780, not {size!r}.") from None
    if path is not None:
        root, file = _project_root_for(path.expanduser().resolve())
        check_project(root)
    else:
        root, file = None, None
    render_window(output, root, file, (width, height))
    click.echo(f"Wrote {output}")


def main() -> None:
    try:
        cli.main(prog_name="workbench", standalone_mode=False)
    except click.UsageError as exc:
        # One line, like every other failure; --help has the full usage.
        command = exc.ctx.command_path if exc.ctx else "workbench"
        click.echo(f"workbench: {exc.format_message()} (see `{command} --help`)", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):  # Ctrl+C, as every command has it
            CommandCancelled(CANCELLED_MESSAGE).show()
            sys.exit(CommandCancelled.exit_code)
        click.echo("workbench: aborted", err=True)  # a question answered no
        sys.exit(1)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
