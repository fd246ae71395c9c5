"""Datasets shipped with the package, reachable by a short name (`ledgermem run --dataset sample`).

    sample   datasets/data/sample_seed.json: 4 hand-written episodes in the seed JSON format, two in English
             and two in Chinese; each has two slots that change once (a current_fact and a history_fact probe
             each), and one episode per language a slot that never changes (a current_fact probe)

A file of that name in the working directory wins over the bundled one, so a
name never hides a user's file.
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
BUNDLED = {"sample": DATA / "sample_seed.json"}


def resolve_dataset(given: str | None) -> str | None:
    """`given`, or the bundled file it names when no file of that name exists."""
    if given is None or given not in BUNDLED or Path(given).exists():
        return given
    return str(BUNDLED[given])
