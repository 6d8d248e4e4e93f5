"""Stage, unstage and discard: whole files, one hunk, or selected lines.

Hunks and lines go through a patch that holds only the chosen changes (git-cola's diffparse
approach), built by ``build_patch`` — a pure function of a ``FileDiff`` and a selection — and
applied with ``git apply``:

- stage   (a worktree-vs-index diff):  ``git apply --cached``
- unstage (an index-vs-HEAD diff):     ``git apply --cached --reverse``
- discard (a worktree-vs-index diff):  ``git apply --reverse``

Discarding an untracked file never deletes it: it is moved under the project's
``.workbench/trash/`` (a folder git ignores), so a mis-click loses nothing.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Iterable

from workbench.git.diff import INDEX_VS_HEAD, WORKTREE_VS_INDEX, FileDiff
from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.git.status import repo_relative

_NO_NEWLINE = "\\ No newline at end of file"
_LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}

LineSelection = Iterable[tuple[int, int]]
"""``(hunk index, line index)`` pairs into ``FileDiff.hunks[h].lines[i]``; context lines are ignored."""


# Whole files -----------------------------------------------------------------------------------

def stage_paths(repo: Repository, paths: Iterable[str | Path]) -> None:
    """Stage files or folders as they are in the worktree, deletions included (``git add -A``)."""
    specs = _pathspecs(repo, paths)
    if specs:
        repo.run(["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"], input=specs, env=_LITERAL)


def unstage_paths(repo: Repository, paths: Iterable[str | Path]) -> None:
    """Take files or folders out of the index back to HEAD (``git restore --staged``); before the
    first commit, remove them from the index (they stay on disk)."""
    specs = _pathspecs(repo, paths)
    if not specs:
        return
    if _has_head(repo):
        repo.run(["restore", "--staged", "--pathspec-from-file=-", "--pathspec-file-nul"], input=specs, env=_LITERAL)
    else:
        repo.run(["rm", "--cached", "-r", "-q", "--pathspec-from-file=-", "--pathspec-file-nul"],
                 input=specs, env=_LITERAL)


def discard_paths(repo: Repository, paths: Iterable[str | Path], *, trash_dir: Path | None = None) -> list[Path]:
    """Throw away the unstaged changes of files or folders: tracked files return to their staged
    (index) content; untracked files are moved to ``trash_dir`` (default ``.workbench/trash`` in
    the repository). Returns where the untracked files went."""
    rels = [repo_relative(repo, path) for path in paths]
    if not rels:
        return []
    trash_dir = trash_dir or repo.root / ".workbench" / "trash"
    _prepare_trash(trash_dir)
    tracked = _split_z(repo.run(["ls-files", "-z", "--", *rels], env=_LITERAL).stdout)
    untracked = _split_z(repo.run(["ls-files", "-z", "--others", "--exclude-standard", "--", *rels],
                                  env=_LITERAL).stdout)
    if tracked:
        repo.run(["restore", "--worktree", "--pathspec-from-file=-", "--pathspec-file-nul"],
                 input=_encode_specs(tracked), env=_LITERAL)
    moved = []
    if untracked:
        batch = trash_dir / time.strftime("%Y%m%d-%H%M%S") / f"{time.time_ns() % 1_000_000_000:09d}"
        for rel in untracked:
            target = batch / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(repo.root / rel, target)
            moved.append(target)
    return moved


# Hunks and lines -------------------------------------------------------------------------------

def stage_hunk(repo: Repository, diff: FileDiff, hunk_index: int) -> None:
    """Stage one hunk of a worktree-vs-index diff."""
    stage_lines(repo, diff, hunk_selection(diff, hunk_index))


def stage_lines(repo: Repository, diff: FileDiff, lines: LineSelection) -> None:
    """Stage the selected lines of a worktree-vs-index diff."""
    _expect(diff, WORKTREE_VS_INDEX, "stage")
    _apply(repo, build_patch(diff, lines), cached=True, reverse=False)


def unstage_hunk(repo: Repository, diff: FileDiff, hunk_index: int) -> None:
    """Unstage one hunk of an index-vs-HEAD diff."""
    unstage_lines(repo, diff, hunk_selection(diff, hunk_index))


def unstage_lines(repo: Repository, diff: FileDiff, lines: LineSelection) -> None:
    """Unstage the selected lines of an index-vs-HEAD diff."""
    _expect(diff, INDEX_VS_HEAD, "unstage")
    _apply(repo, build_patch(diff, lines, reverse=True), cached=True, reverse=True)


def discard_hunk(repo: Repository, diff: FileDiff, hunk_index: int, *, trash_dir: Path | None = None) -> None:
    """Throw away one hunk of a worktree-vs-index diff from the worktree."""
    discard_lines(repo, diff, hunk_selection(diff, hunk_index), trash_dir=trash_dir)


def discard_lines(repo: Repository, diff: FileDiff, lines: LineSelection, *, trash_dir: Path | None = None) -> None:
    """Throw away the selected lines of a worktree-vs-index diff from the worktree. Discarding
    every line of an untracked file moves the file to the trash instead of deleting it."""
    _expect(diff, WORKTREE_VS_INDEX, "discard")
    lines = list(lines)
    patch = build_patch(diff, lines, reverse=True)
    if diff.is_new and patch is not None and "\n--- /dev/null\n" in patch:
        discard_paths(repo, [diff.path], trash_dir=trash_dir)
        return
    _apply(repo, patch, cached=False, reverse=True)


def hunk_selection(diff: FileDiff, hunk_index: int) -> list[tuple[int, int]]:
    """Every line of one hunk, as a selection."""
    if not 0 <= hunk_index < len(diff.hunks):
        raise GitError(f"{diff.path} has no hunk {hunk_index + 1}; refresh the diff and try again.")
    return [(hunk_index, i) for i in range(len(diff.hunks[hunk_index].lines))]


def build_patch(diff: FileDiff, lines: LineSelection, *, reverse: bool = False) -> str | None:
    """A patch holding only the selected ``+``/``-`` lines of ``diff``; None when none is selected.

    Forward (to stage): unselected ``-`` lines stay as context and unselected ``+`` lines are
    dropped, so the patch applies to the diff's old side. ``reverse`` (to unstage or discard,
    applied with ``--reverse``): unselected ``+`` lines stay as context and unselected ``-`` lines
    are dropped, so it applies backwards to the diff's new side. Hunk headers are recomputed.
    """
    if diff.is_binary or diff.is_too_large:
        raise GitError(f"{diff.path} is {'binary' if diff.is_binary else 'too large to show'}: "
                       "stage, unstage or discard the whole file instead.")
    chosen: dict[int, set[int]] = {}
    for hunk_index, line_index in lines:
        chosen.setdefault(hunk_index, set()).add(line_index)
    kept_side = "+" if reverse else "-"
    body: list[str] = []
    delta = 0
    total_old = total_new = 0
    for hunk_index, hunk in enumerate(diff.hunks):
        selected = chosen.get(hunk_index, ())
        if not any(hunk.lines[i].kind != " " for i in selected if 0 <= i < len(hunk.lines)):
            continue
        out: list[tuple[str, str, bool]] = []
        for i, line in enumerate(hunk.lines):
            if line.kind == " " or i in selected:
                out.append((line.kind, line.text, line.no_newline))
            elif line.kind == kept_side:
                out.append((" ", line.text, line.no_newline))
        out = _fix_missing_newline(out)
        old_count = sum(1 for kind, _, _ in out if kind != "+")
        new_count = sum(1 for kind, _, _ in out if kind != "-")
        if reverse:
            # The new side is untouched: place the old side from it.
            new_start = hunk.new_start
            new_pos = new_start if hunk.new_count else new_start + 1
            old_pos = new_pos - delta
            old_start = old_pos if old_count else old_pos - 1
        else:
            old_start = hunk.old_start
            old_pos = old_start if hunk.old_count else old_start + 1
            new_pos = old_pos + delta
            new_start = new_pos if new_count else new_pos - 1
        delta += new_count - old_count
        total_old += old_count
        total_new += new_count
        body.append(f"@@ -{old_start},{old_count} +{new_start},{new_count} @@{hunk.section}\n")
        for kind, text, no_newline in out:
            body.append(f"{kind}{text}\n")
            if no_newline:
                body.append(_NO_NEWLINE + "\n")
    if not body:
        return None
    old_name = diff.old_path or diff.path
    header = [f"diff --git {_quote('a/' + old_name)} {_quote('b/' + diff.path)}\n"]
    if diff.is_new and total_old == 0:
        header += [f"new file mode {diff.new_mode or '100644'}\n", "--- /dev/null\n",
                   f"+++ {_name('b/' + diff.path)}\n"]
    elif diff.is_deleted and total_new == 0:
        header += [f"deleted file mode {diff.old_mode or '100644'}\n", f"--- {_name('a/' + old_name)}\n",
                   "+++ /dev/null\n"]
    elif diff.is_deleted and reverse:
        raise GitError(f"{diff.path} is deleted in the index: unstage the whole file instead of some lines.")
    else:
        header += [f"--- {_name('a/' + old_name)}\n", f"+++ {_name('b/' + diff.path)}\n"]
    return "".join(header + body)


def _fix_missing_newline(out: list[tuple[str, str, bool]]) -> list[tuple[str, str, bool]]:
    """A context line without a newline must end the hunk. When an unselected removal of the old
    last line became context and added lines follow it, the line keeps its text but gains a
    newline: remove it as it was and add it back with a newline before the added lines."""
    for i, (kind, text, no_newline) in enumerate(out):
        if kind == " " and no_newline and i < len(out) - 1:
            return out[:i] + [("-", text, True), ("+", text, False)] + out[i + 1:]
    return out


def _apply(repo: Repository, patch: str | None, *, cached: bool, reverse: bool) -> None:
    if patch is None:
        raise GitError("No changed lines are selected. Select added or removed lines, then try again.")
    args = ["apply", "--whitespace=nowarn"]
    if cached:
        args.append("--cached")
    if reverse:
        args.append("--reverse")
    result = repo.run([*args, "-"], input=patch.encode("utf-8", errors="surrogateescape"), check=False)
    if result.returncode != 0:
        if "patch does not apply" in result.stderr or "does not match index" in result.stderr \
                or "does not exist in index" in result.stderr or "already exists" in result.stderr:
            raise GitError("The file changed since its diff was shown. Refresh the diff and try again.",
                           details=result.stderr + "\n" + patch)
        from workbench.git.runner import describe_failure

        raise GitError(describe_failure(args, result.stderr), details=result.stderr + "\n" + patch)


def _expect(diff: FileDiff, source: str, action: str) -> None:
    if diff.source is not None and diff.source != source:
        wanted = "unstaged (worktree)" if source == WORKTREE_VS_INDEX else "staged (index)"
        raise GitError(f"To {action} lines, select them in the {wanted} diff of {diff.path}.")


def _has_head(repo: Repository) -> bool:
    return repo.run(["rev-parse", "--verify", "-q", "HEAD"], check=False).returncode == 0


def _pathspecs(repo: Repository, paths: Iterable[str | Path]) -> bytes:
    return _encode_specs([repo_relative(repo, path) for path in paths])


def _encode_specs(rels: list[str]) -> bytes:
    return "".join(rel + "\0" for rel in rels).encode("utf-8", errors="surrogateescape")


def _split_z(data: bytes) -> list[str]:
    return [item for item in data.decode("utf-8", errors="surrogateescape").split("\0") if item]


def _prepare_trash(trash_dir: Path) -> None:
    # A .gitignore of "*" keeps the trash (and itself) out of every status.
    trash_dir.mkdir(parents=True, exist_ok=True)
    ignore = trash_dir / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")


def _quote(name: str) -> str:
    """A name quoted as git quotes it, when it must be."""
    if not any(c in name for c in '"\\\t\n\r') and not any(ord(c) < 32 for c in name):
        return name
    escaped = (name.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
               .replace("\n", "\\n").replace("\r", "\\r"))
    return f'"{escaped}"'


def _name(name: str) -> str:
    # git ends ---/+++ names that hold a space with a tab, so the name's end is unambiguous.
    quoted = _quote(name)
    return quoted + "\t" if " " in name and quoted == name else quoted
