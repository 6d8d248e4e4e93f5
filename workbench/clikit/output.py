"""What a command prints on stdout, and the ``--json`` contract: with ``--json``, stdout is
exactly one JSON object (or list), the result; on an error or a cancel it is
``{"error": message, …}``, with the keys the command adds (the tool, the error's code) and
``"cancelled": true`` for a cancel. The one-line message on stderr and the exit status are the
same with and without ``--json``."""

from __future__ import annotations

import functools
import json
from contextlib import contextmanager
from typing import Callable, Iterator

import click

from workbench.clikit.errors import CommandCancelled, CommandFailed, user_message
from workbench.tasks import Cancelled

# The message of a cancel that says nothing of its own (Ctrl+C, a bare Cancelled).
CANCELLED_MESSAGE = "cancelled"


def print_json(data: object) -> None:
    """``data`` as JSON on stdout, indented as every command prints it."""
    click.echo(json.dumps(data, indent=2))


def emit(data: object, as_json: bool, text: str) -> None:
    """The result: ``data`` as JSON with ``--json``, else ``text`` (nothing when it is empty)."""
    if as_json:
        print_json(data)
    elif text:
        click.echo(text)


@contextmanager
def reported_errors(as_json: bool = False, fields: dict | None = None,
                    error_fields: Callable[[BaseException], dict] | None = None) -> Iterator[None]:
    """Turn what ends the work inside into the command's end: a capability's error into one
    line on stderr and exit status 1, a cancel (Cancelled, Ctrl+C's KeyboardInterrupt) into
    one line and 130; with ``as_json``, stdout first gets ``{"error": …, **fields}`` (and
    ``error_fields(error)`` for an error). A bug goes on as it is, with its traceback."""
    try:
        yield
    except (Cancelled, KeyboardInterrupt) as exc:
        message = str(exc) or CANCELLED_MESSAGE
        if as_json:
            print_json({"error": message, **(fields or {}), "cancelled": True})
        raise CommandCancelled(message) from None
    except CommandFailed as exc:
        if as_json:
            cancelled = {"cancelled": True} if isinstance(exc, CommandCancelled) else {}
            print_json({"error": exc.format_message(), **(fields or {}), **cancelled})
        raise
    except Exception as exc:
        message = user_message(exc)
        if message is None:
            raise
        if as_json:
            print_json({"error": message, **(fields or {}), **(error_fields(exc) if error_fields else {})})
        raise CommandFailed(message) from None


def reports_errors(function=None, *, error_fields: Callable[[BaseException], dict] | None = None):
    """A command function whose errors and cancels end it as ``reported_errors`` says, with
    ``--json`` when its ``as_json`` argument is true. Usable bare (``@reports_errors``) or with
    ``error_fields``."""
    def decorate(command):
        @functools.wraps(command)
        def run(*args, **kwargs):
            with reported_errors(kwargs.get("as_json", False), error_fields=error_fields):
                return command(*args, **kwargs)

        return run

    return decorate(function) if function is not None else decorate
