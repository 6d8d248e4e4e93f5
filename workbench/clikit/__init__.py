"""The command-line kit every ``workbench`` subcommand uses, so they all behave alike: the same
progress line on stderr (ProgressLine), the same first and second Ctrl+C (CtrlC), the same
one-line errors and exit statuses (CommandFailed, CommandCancelled) and the same ``--json``
contract (emit, print_json), both kept by reported_errors around a command's work (or
reports_errors on the command); and a group typed bare shows its help (HelpWhenBareGroup).

It reports with ``workbench.tasks.Progress`` and cancels with ``workbench.tasks.CancelToken``,
and imports no capability: the capabilities' CLIs build on it, not on ``workbench.cli``.
"""

from workbench.clikit.errors import (
    CANCELLED_STATUS, FAILED_STATUS, CommandCancelled, CommandFailed, user_message,
)
from workbench.clikit.groups import HelpWhenBareGroup
from workbench.clikit.interrupt import CtrlC
from workbench.clikit.output import CANCELLED_MESSAGE, emit, print_json, reported_errors, reports_errors
from workbench.clikit.progress import PROGRESS_EVERY_S, ProgressLine
from workbench.clikit.terminal import is_terminal, line_width

__all__ = [
    "CANCELLED_MESSAGE", "CANCELLED_STATUS", "FAILED_STATUS", "PROGRESS_EVERY_S",
    "CommandCancelled", "CommandFailed", "CtrlC", "HelpWhenBareGroup", "ProgressLine",
    "emit", "is_terminal", "line_width", "print_json", "reported_errors", "reports_errors", "user_message",
]
