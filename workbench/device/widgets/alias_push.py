"""Pushing an alias's version to the device slots that served the version it left (what
``workbench device redeploy`` does), as the window runs it: the handle a command returns, and the
lines that say what each device did.

The Registry panel runs this through the ``device.redeployAlias`` command after it rolled an
alias back (the registry knows no devices), and reads only the handle's ``finished``, ``ok``
and ``summary``, so nothing here is another capability's type to import.
"""

from __future__ import annotations

from workbench.qt.tasks import Operation

REDEPLOY_COMMAND = "device.redeployAlias"
DEFAULT_ALIAS = "production"  # the alias devices serve when the palette names none


class AliasPushOperation(Operation):
    """The handle of one push of an alias to its devices: ``finished`` once it is over, then
    ``result`` (an ``AliasPush``) or ``error``; ``summary`` is one line for a status line,
    ``ok`` whether every slot switched."""

    def __init__(self, alias: str, left: str | int | None):
        super().__init__(f"push {alias}", "Device")
        self.alias = alias
        self.left = None if left is None else f"{int(left):04d}"
        self.summary = ""

    @property
    def ok(self) -> bool:
        return self.succeeded and bool(self.result is not None and self.result.ok)

    def finish(self, result=None, error: str = "", name_of=None) -> None:
        """Take the push's outcome (on the GUI thread): ``result`` or the one-line ``error``;
        ``name_of(address)`` names a device that did not answer (the push knows only its
        address)."""
        self.result, self.finished = result, True
        if error:
            self.error = RuntimeError(error)
            self.summary = f"Pushing {self.alias} to the devices failed: {error}"
            return
        if name_of is not None:
            for report in result.reports:
                for outcome in report.outcomes:
                    if outcome.device in ("", outcome.address):
                        outcome.device = name_of(outcome.address)
        self.summary = push_summary(result)


def outcome_text(outcome, version: str, slot: str) -> str:
    """What one device did: "Phone switched to 0000 (classifier)", "Phone failed: reason",
    "Phone unreachable: reason"."""
    if outcome.state == "switched":
        return f"{outcome.device} switched to {version} ({slot})"
    return f"{outcome.device} {outcome.state}" + (f": {outcome.reason.rstrip('. ')}" if outcome.reason else "")


def outcome_lines(push) -> list[str]:
    """One line per device of ``push`` (an ``AliasPush``), those that did not switch first."""
    lines = [(outcome.state == "switched", outcome_text(outcome, push.version, report.slot))
             for report in push.reports for outcome in report.outcomes]
    return [text for _switched, text in sorted(lines, key=lambda line: line[0])]


def push_summary(push) -> str:
    """One line: which version went where, and each device that did not switch with its reason."""
    if not push.reports:
        return f"No device slot serves {push.left} (as the deploy log says): nothing pushed."
    outcomes = [outcome for report in push.reports for outcome in report.outcomes]
    switched = [outcome.device for outcome in outcomes if outcome.state == "switched"]
    parts = [f"{', '.join(switched)} switched"] if switched else []
    parts += [outcome_text(outcome, push.version, "") for outcome in outcomes if outcome.state != "switched"]
    text = f"{push.alias} {push.version} pushed to the devices that served {push.left}: {'; '.join(parts)}."
    from workbench.device.deploy import CANCELLED_BEFORE_SWITCH  # the summary's only need of it

    missed = [outcome for outcome in outcomes if outcome.state != "switched"]
    if missed and all(outcome.reason == CANCELLED_BEFORE_SWITCH for outcome in missed):
        text += " Push Alias to Devices… to push it to them after all."
    elif missed:
        text += " Push Alias to Devices… again once they are back."
    return text
