"""The figures every tool reports the same way: latency percentiles, accuracy, agreement and
the largest difference between two models' outputs."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np


def latency(run: Callable[[], object], repeats: int = 50, warmup: int = 5,
            check_cancelled: Callable[[], None] = lambda: None) -> dict[str, float]:
    """Milliseconds per call of ``run``: p50, p90, p99 and mean over ``repeats`` timed calls."""
    for _ in range(warmup):
        run()
    times = []
    for i in range(repeats):
        if i % 10 == 0:
            check_cancelled()
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000.0)
    values = np.asarray(times)
    return {"p50": float(np.percentile(values, 50)), "p90": float(np.percentile(values, 90)),
            "p99": float(np.percentile(values, 99)), "mean": float(values.mean())}


def accuracy(logits: np.ndarray, labels: np.ndarray | None) -> float | None:
    """Top-1 accuracy in percent (None without labels)."""
    if labels is None:
        return None
    return float((top1(logits) == labels).mean() * 100.0)


def top1(logits: np.ndarray) -> np.ndarray:
    flat = logits.reshape(len(logits), -1)
    return flat.argmax(axis=1)


def agreement(logits: np.ndarray, reference: np.ndarray) -> float:
    """Percent of samples whose top-1 class is the reference's."""
    return float((top1(logits) == top1(reference)).mean() * 100.0)


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0


def cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    """1 - cosine similarity of the flattened tensors (0: same direction)."""
    a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    norm = np.linalg.norm(a64) * np.linalg.norm(b64)
    if norm == 0:
        return 0.0 if np.array_equal(a64, b64) else 1.0
    return float(1.0 - np.dot(a64, b64) / norm)
