"""How a command ends when it fails: one line ``workbench: message`` on stderr, exit status 1;
when cancelled, exit status 130. A bug is not a failure the user can act on: it keeps its
traceback."""

from __future__ import annotations

import signal
import sys

import click

FAILED_STATUS = 1
# 128 + SIGINT: what shells report for a command that Ctrl+C ended.
CANCELLED_STATUS = 128 + signal.SIGINT

# Each capability's error type, whose message is meant for the user: (module, class).
USER_ERRORS = (
    ("workbench.ipc.errors", "IpcError"),
    ("workbench.ipc.errors", "RpcError"),
    ("workbench.project.errors", "ProjectError"),
    ("workbench.git.errors", "GitError"),
    ("workbench.training.errors", "TrainingError"),
    ("workbench.cluster.errors", "ClusterError"),
    ("workbench.modeltools.errors", "ModelToolError"),
    ("workbench.device.errors", "DeviceError"),
    ("workbench.adopt.errors", "AdoptError"),
    ("workbench.registry.errors", "RegistryError"),
    ("workbench.pipeline.errors", "PipelineError"),
)


class CommandFailed(click.ClickException):
    """Printed as one line ``workbench: message`` on stderr, with exit status 1."""

    exit_code = FAILED_STATUS

    def show(self, file=None) -> None:
        click.echo(f"workbench: {self.format_message()}", err=True)


class CommandCancelled(CommandFailed):
    """The user cancelled: one line ``workbench: message``, exit status 130."""

    exit_code = CANCELLED_STATUS


def user_message(exc: BaseException) -> str | None:
    """The one-line message of an error the user can act on (a capability's error type); None
    for a bug, which keeps its traceback."""
    for module_name, class_name in USER_ERRORS:
        # Only a loaded module can have raised its error: importing it here would slow every
        # failing command, and the kit sits below the capabilities.
        module = sys.modules.get(module_name)
        error_type = getattr(module, class_name, None) if module is not None else None
        if error_type is not None and isinstance(exc, error_type):
            # A JSON-RPC error's str() carries its code; its message is the user's text.
            return exc.message if class_name == "RpcError" else str(exc)
    return None
