"""Where the time goes: a cProfile run summarised as a Markdown table.

Locations are shown relative to the project (or to `site-packages`, or by
module name for the standard library), never as paths of the machine that
ran the profile.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

_ROOT = str(Path(__file__).resolve().parents[1])
_STDLIB = sysconfig.get_paths()["stdlib"]


def _where(filename: str, line: int, func: str) -> str:
    if filename == "~" or filename.startswith("<"):
        return func  # a builtin or C method: its name says what it is
    path = filename
    if path.startswith(_ROOT):
        path = path[len(_ROOT):].lstrip("/\\")
    elif "site-packages" in path:
        path = path.split("site-packages", 1)[1].lstrip("/\\")
    elif path.startswith((_STDLIB, sys.base_prefix)):
        path = "stdlib/" + Path(path).name
    else:
        path = Path(path).name
    return f"{path}:{line} {func}"


def profile(fn: Callable[[], Any], *, top: int = 12) -> str:
    """Run `fn` under cProfile; the `top` functions by own time and by cumulative time, as Markdown."""
    prof = cProfile.Profile()
    prof.enable()
    try:
        fn()
    finally:
        prof.disable()
    stats = pstats.Stats(prof)
    rows = [
        (_where(f, ln, name), nc, tt, ct)
        for (f, ln, name), (_, nc, tt, ct, _) in stats.stats.items()  # type: ignore[attr-defined]
    ]
    total = max((ct for *_, ct in rows), default=0.0)
    by_own = sorted(rows, key=lambda r: r[2], reverse=True)[:top]
    by_cum = sorted((r for r in rows if not r[0].startswith(("stdlib/", "<", "{"))), key=lambda r: r[3],
                    reverse=True)[:top]
    return "\n".join([
        f"Profiled run: {total:.2f} s in total (cProfile slows pure-Python code, so shares matter, not seconds).",
        "",
        "Top functions by own time:",
        "",
        _table(by_own),
        "",
        "Top functions by cumulative time:",
        "",
        _table(by_cum),
    ])


def _table(rows: list[tuple[str, int, float, float]]) -> str:
    lines = ["| function | calls | own s | cumulative s |", "|---|---:|---:|---:|"]
    lines += [f"| `{where}` | {calls:,} | {own:.3f} | {cum:.3f} |" for where, calls, own, cum in rows]
    return "\n".join(lines)
