"""Samples, their summary, the machine they were taken on, and what a case reports.

Every timed case takes at least five samples of the library's operation and
as many of a baseline doing the nearest bare equivalent in the same process,
interleaved where the operation allows it, so that the ratio between the two
is what carries across machines rather than the absolute figures.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

MIN_RUNS = 5


@dataclass(slots=True)
class Case:
    """One row of the results table, with every sample behind it.

    `samples_s` and `baseline_s` are wall-clock seconds per run; `work` is
    how many units (events, turns, queries) one run processes, so a run's
    throughput is `work / seconds`. `display` says how the row is shown:
    `ms` (median milliseconds per run) or `per_s` (units per second), or
    `mib` for the memory rows, whose value is in `value`.
    """

    case: str
    family: str
    title: str
    size: str
    kind: str  # "timed" | "memory"
    display: str  # "ms" | "per_s" | "mib"
    unit: str
    work: int = 1
    samples_s: list[float] = field(default_factory=list)
    baseline: str = ""
    baseline_s: list[float] = field(default_factory=list)
    target: str = "—"
    met: bool | None = None
    value: float | None = None  # memory rows: peak MiB
    notes: list[str] = field(default_factory=list)
    profile: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    # -- summary -------------------------------------------------------------------------

    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    def baseline_median_s(self) -> float | None:
        return statistics.median(self.baseline_s) if self.baseline_s else None

    def ratio(self) -> float | None:
        """Case time over baseline time (medians): how many times the bare equivalent it costs."""
        base = self.baseline_median_s()
        return self.median_s() / base if base else None

    def shown(self, seconds: float) -> float:
        if self.display == "ms":
            return seconds * 1000.0
        return self.work / seconds if seconds > 0 else float("inf")

    def summary(self) -> dict[str, Any]:
        if self.kind != "timed":
            return {"value": self.value}
        lo, hi = sorted((self.shown(min(self.samples_s)), self.shown(max(self.samples_s))))
        base = self.baseline_median_s()
        return {
            "median": self.shown(self.median_s()),
            "min": lo,
            "max": hi,
            "p95": self.shown(_quantile(self.samples_s, 0.95)),
            "runs": len(self.samples_s),
            "baseline_median": self.shown(base) if base else None,
            "ratio": self.ratio(),
        }

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["summary"] = self.summary()
        return out


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[], Any]) -> float:
    """Seconds one call of `fn` takes, after a collection so earlier garbage is not billed to it."""
    gc.collect()
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def machine() -> dict[str, Any]:
    """What the figures were measured on, without naming the machine."""
    pages = os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 0
    gib = round(pages * page / 2**30) if pages and page else None
    return {
        "cores": os.cpu_count(),
        "memory_gib": gib,
        "system": platform.system(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
    }


def versions() -> dict[str, str]:
    out = {}
    for name in ("ledgermem", "duckdb", "pyarrow", "numpy", "polars"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def describe_machine(info: dict[str, Any], libs: dict[str, str]) -> str:
    """`2 cores, 24 GiB, Linux x86_64, Python 3.11, DuckDB 2.0.1`."""
    py = ".".join(info["python"].split(".")[:2])
    return (f"{info['cores']} cores, {info['memory_gib']} GiB, {info['system']} {info['machine']}, "
            f"Python {py}, DuckDB {libs['duckdb']}")


class Progress:
    """Progress lines on stderr, with the time since the start."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    def __call__(self, message: str) -> None:
        print(f"[{time.perf_counter() - self.started:7.1f}s] {message}", file=sys.stderr, flush=True)
