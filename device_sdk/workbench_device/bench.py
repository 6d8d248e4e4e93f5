"""Benchmarking a loaded model: warm-up runs, timed runs, latency percentiles, memory.

Peak memory is the agent process's peak resident set (it serves every session, so it is an
upper bound for one model): ``VmHWM`` from ``/proc/self/status`` where there is one (Linux,
Android), else ``ru_maxrss``.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Dict, Optional

from workbench_device.protocol import Err, ProtocolError
from workbench_device.runtimes import LoadedModel

MAX_RUNS = 100000
MAX_WARMUP = 10000


def peak_rss_bytes() -> int:
    """The process's peak resident memory in bytes (0 when the system does not say)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    except (ImportError, OSError):
        return 0
    # Kilobytes on Linux, bytes on macOS.
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def random_inputs(model: LoadedModel, batch: int = 1, seed: int = 0) -> Dict[str, Any]:
    """Inputs of the model's shapes (axes it leaves open: ``batch`` for the first, 1 for the
    others) and dtypes, filled with random values."""
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in model.inputs:
        shape = spec["shape"] or []
        dims = [d if isinstance(d, int) else (batch if i == 0 else 1) for i, d in enumerate(shape)]
        dtype = np.dtype(spec["dtype"])
        if dtype.kind == "f":
            feeds[spec["name"]] = rng.standard_normal(dims).astype(dtype)
        elif dtype.kind == "b":
            feeds[spec["name"]] = rng.integers(0, 2, dims).astype(bool)
        else:
            feeds[spec["name"]] = rng.integers(0, 10, dims).astype(dtype)
    return feeds


def _count(value: Any, name: str, default: int, limit: int, minimum: int) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= limit:
        raise ProtocolError(Err.BAD_REQUEST, f"'{name}' must be a whole number from {minimum} to "
                                             f"{limit}")
    return value


def benchmark(model: LoadedModel, warmup: Any = None, runs: Any = None, batch: Any = None,
              feeds: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Run ``model`` ``warmup`` times untimed, then ``runs`` times timed, on ``feeds`` (random
    inputs of batch ``batch`` when None); the latency figures in milliseconds."""
    import numpy as np

    warmup = _count(warmup, "warmup", 5, MAX_WARMUP, 0)
    runs = _count(runs, "runs", 50, MAX_RUNS, 1)
    batch = _count(batch, "batch", 1, 1 << 20, 1)
    if feeds is None:
        feeds = random_inputs(model, batch)
    model.check_feeds(feeds)
    run = model._run  # checked once above; each timed run is the runtime's own time
    for _ in range(warmup):
        run(feeds)
    times = np.empty(runs, dtype=np.float64)
    clock = time.perf_counter
    for i in range(runs):
        start = clock()
        run(feeds)
        times[i] = clock() - start
    times *= 1000.0
    p50, p90, p99 = np.percentile(times, [50, 90, 99])
    return {
        "init_ms": round(model.init_ms, 4),
        "p50_ms": round(float(p50), 4), "p90_ms": round(float(p90), 4),
        "p99_ms": round(float(p99), 4), "mean_ms": round(float(times.mean()), 4),
        "min_ms": round(float(times.min()), 4), "max_ms": round(float(times.max()), 4),
        "runs": runs, "warmup": warmup, "batch": batch,
        "peak_rss_bytes": peak_rss_bytes(),
    }
