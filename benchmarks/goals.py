"""A benchmark's figures judged against its goals, as the JSON object it prints."""

from __future__ import annotations

import json
import operator
from typing import Any, Dict, Tuple

RELATIONS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt}


def print_with_goals(figures: Dict[str, Any], goals: Dict[str, Tuple[str, float]]) -> None:
    """Print ``figures`` as one JSON line with ``goals`` ({name: (relation, goal)}, e.g.
    ``("<=", 3.0)``) written out and ``met`` saying which hold (a figure that is None meets
    none)."""
    figures["goals"] = {name: f"{relation} {goal:g}" for name, (relation, goal) in goals.items()}
    figures["met"] = {name: figures[name] is not None and RELATIONS[relation](figures[name], goal)
                      for name, (relation, goal) in goals.items()}
    print(json.dumps(figures))
