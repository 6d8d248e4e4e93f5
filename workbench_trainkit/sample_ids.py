"""The sample ids of a dataset a project builds in code, for cutting dataset versions.

Run in the project's Python::

    python -m workbench_trainkit.sample_ids data:sample_ids --project DIR [--hparams FILE]

It puts DIR first on ``sys.path``, loads the hyper-parameters (FILE, else the one the project's
``workbench.toml`` names), imports ``data``, calls ``sample_ids(hp)`` and prints one JSON object,
``{"train": [ids...], "val": [ids...]}``, on stdout. The function returns that dict (``val`` may
be left out); an id is text without TABs or newlines, unique across both lists. Whatever the
project's code prints goes to stderr, so stdout holds only the answer. A problem is one
``error: ...`` line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Sequence

from workbench_trainkit.errors import TrainkitError
from workbench_trainkit.hparams import HParamsError, load_hparams, project_hparams_file

ERROR_STATUS = 2
SPLITS = ("train", "val")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workbench_trainkit.sample_ids",
        description="Print the sample ids a project's dataset function gives, as JSON.")
    parser.add_argument("function", metavar="MODULE:FUNCTION",
                        help="the function that returns {'train': [ids], 'val': [ids]}")
    parser.add_argument("--project", type=Path, required=True, metavar="DIR",
                        help="the project folder (put first on sys.path)")
    parser.add_argument("--hparams", type=Path, default=None, metavar="FILE",
                        help="hyper-parameter file (default: the one workbench.toml names)")
    args = parser.parse_args(argv)
    try:
        ids = _sample_ids(args.function, args.project.resolve(), args.hparams)
    except (TrainkitError, HParamsError) as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr, flush=True)
        return ERROR_STATUS
    sys.stdout.write(json.dumps(ids) + "\n")
    sys.stdout.flush()
    return 0


def _sample_ids(target: str, project: Path, hparams_file: Path | None) -> dict[str, list[str]]:
    module_name, sep, function_name = target.partition(":")
    if not sep or not module_name.strip() or not function_name.strip():
        raise TrainkitError(f"{target!r} is not MODULE:FUNCTION; write e.g. data:sample_ids")
    if not project.is_dir():
        raise TrainkitError(f"the project folder {project} does not exist")
    hp = load_hparams(hparams_file or project_hparams_file(project), project_dir=project)
    sys.path.insert(0, str(project))
    with _StdoutToStderr():
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            traceback.print_exc()
            raise TrainkitError(f"cannot import {module_name} from {project}: {exc}; "
                                "check the [data] samples setting of workbench.toml") from None
        except Exception as exc:
            traceback.print_exc()
            raise TrainkitError(f"importing {module_name} raised {type(exc).__name__}: {exc} "
                                "(the traceback is above)") from None
        function = getattr(module, function_name, None)
        if not callable(function):
            raise TrainkitError(f"{module_name} has no function {function_name}; check the "
                                "[data] samples setting of workbench.toml")
        try:
            result = function(hp)
        except Exception as exc:
            traceback.print_exc()
            raise TrainkitError(f"{target} raised {type(exc).__name__}: {exc} (the traceback "
                                "is above)") from None
    return _checked(target, result)


def _checked(target: str, result) -> dict[str, list[str]]:
    """``result`` as {"train": [...], "val": [...]}; TrainkitError saying what is wrong."""
    shape = 'a dict {"train": [ids...], "val": [ids...]}'
    if not isinstance(result, dict) or "train" not in result:
        raise TrainkitError(f"{target} returned {type(result).__name__}, not {shape}")
    unknown = sorted(set(map(str, result)) - set(SPLITS))
    if unknown:
        raise TrainkitError(f"{target} returned the split {unknown[0]!r}; only train and val "
                            f"are known: return {shape}")
    checked: dict[str, list[str]] = {}
    first_split: dict[str, str] = {}
    for split in SPLITS:
        ids = result.get(split, [])
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
            raise TrainkitError(f"{target} returned {type(ids).__name__} as {split}; return a "
                                "list of ids")
        ids = list(ids)
        for sample_id in ids:
            if not isinstance(sample_id, str) or not sample_id or any(
                    char in sample_id for char in "\t\r\n"):
                raise TrainkitError(f"{target} returned the {split} id {sample_id!r}; an id is "
                                    "non-empty text without TABs or newlines")
            if sample_id in first_split:
                where = ("twice in " + split if first_split[sample_id] == split
                         else f"in both {first_split[sample_id]} and {split}")
                raise TrainkitError(f"{target} returned the id {sample_id!r} {where}; every "
                                    "sample needs an id of its own")
            first_split[sample_id] = split
        checked[split] = ids
    return checked


class _StdoutToStderr:
    """Send file descriptor 1 (Python's prints and native code's alike) to stderr meanwhile."""

    def __enter__(self):
        sys.stdout.flush()
        self._saved = os.dup(1)
        os.dup2(2, 1)
        return self

    def __exit__(self, *exc_info) -> None:
        sys.stdout.flush()
        os.dup2(self._saved, 1)
        os.close(self._saved)


if __name__ == "__main__":
    sys.exit(main())
