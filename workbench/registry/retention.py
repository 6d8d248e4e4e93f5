"""Which model versions and files retention removes: the newest ``keep`` versions stay, and so
do pinned versions, versions an alias points to, and any file a staying version refers to (a
version whose file is identical to an earlier one's refers to that file instead of storing it
again). Pure: the registry applies the plan under its lock, a dry run only prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RetentionPlan:
    keep: list[int] = field(default_factory=list)
    remove: list[int] = field(default_factory=list)
    files_removed: list[str] = field(default_factory=list)    # names in models/, deleted
    files_kept_shared: list[str] = field(default_factory=list)  # a removed version's, still referred to
    why_kept: dict[int, str] = field(default_factory=dict)     # beyond the newest: pinned, alias


def plan_retention(versions: dict[int, set[str]], keep: int, pinned: set[int],
                   aliased: dict[int, list[str]]) -> RetentionPlan:
    """``versions``: each version's number and the file names it refers to."""
    numbers = sorted(versions)
    newest = set(numbers[-keep:]) if keep > 0 else set()
    plan = RetentionPlan()
    for number in numbers:
        if number in newest:
            plan.keep.append(number)
        elif number in pinned or aliased.get(number):
            plan.keep.append(number)
            reasons = (["pinned"] if number in pinned else []) + \
                [f"alias {name}" for name in aliased.get(number, [])]
            plan.why_kept[number] = ", ".join(reasons)
        else:
            plan.remove.append(number)
    referred = set().union(*(versions[number] for number in plan.keep)) if plan.keep else set()
    for number in plan.remove:
        for name in sorted(versions[number]):
            if name in referred:
                plan.files_kept_shared.append(name)
            elif name not in plan.files_removed:
                plan.files_removed.append(name)
    return plan
