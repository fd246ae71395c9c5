"""Run ids are names, not paths.

A run id names one folder directly under the runs folder,
`<runs_dir>/<run_id>/`, and nothing else: 1 to 128 characters from
`A-Z a-z 0-9 . _ -`, the first a letter or a digit. So an id holds no path
separator (`/`, `\\`), is never `.` or `..`, never starts with a dot (a
hidden folder) or a dash (it would read as an option), and cannot be
absolute. Every place a run id enters (the `--run-id` options, a RUN
argument that is not an existing path, the library's `RunOptions`) goes
through `validate_run_id`.

`remove_run` is the only way a run folder is deleted (`--force`): it
deletes `<runs_dir>/<run_id>` only when that folder lies directly inside
the runs folder once symbolic links are resolved, is not itself a link, and
is a run folder (it holds a ledger or a cluster run's shards).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from ledgermem.memory.errors import InvalidRunId, NotARunFolder

__all__ = ["RUN_ID", "RUN_ID_RULE", "InvalidRunId", "NotARunFolder", "remove_run", "run_folder", "validate_run_id"]

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
RUN_ID_RULE = ("1-128 characters from A-Z a-z 0-9 . _ -, starting with a letter or digit "
               "(no '/', '\\', '.', '..', leading dot or absolute path)")
LEDGER_FILE = "ledger.duckdb"  # evaluation.runner.LEDGER_FILE
SHARDS_DIR = "shards"  # evaluation.merge.SHARDS_DIR


def validate_run_id(run_id: object, *, what: str = "run id") -> str:
    """`run_id` if it is a name (`RUN_ID`); else `InvalidRunId`, one line naming the value and the rule."""
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        raise InvalidRunId(f"{what} {run_id!r} is not a run name: use {RUN_ID_RULE}")
    return run_id


def run_folder(runs_dir: Path, run_id: str) -> Path:
    """`<runs_dir>/<run_id>` for a valid name (the folder need not exist)."""
    return Path(runs_dir) / validate_run_id(run_id)


def _is_run_folder(folder: Path) -> bool:
    return (folder / LEDGER_FILE).is_file() or (folder / SHARDS_DIR).is_dir()


def remove_run(runs_dir: Path, run_id: str) -> bool:
    """Delete the run folder `<runs_dir>/<run_id>`; False when there is none. Nothing else is ever deleted.

    Refused (`NotARunFolder`) when the folder is a symbolic link, resolves
    to anything but a child of the runs folder, or holds neither a ledger
    nor shards.
    """
    folder = run_folder(runs_dir, run_id)
    if not folder.exists() and not folder.is_symlink():
        return False
    if folder.is_symlink():
        raise NotARunFolder(f"run {run_id!r}: {folder} is a symbolic link; --force deletes run folders only, "
                            "remove it by hand")
    root = Path(runs_dir).resolve()
    resolved = folder.resolve()
    if resolved.parent != root or not resolved.is_dir():
        raise NotARunFolder(f"run {run_id!r}: {folder} is not a folder directly inside {runs_dir}; not removed")
    if not _is_run_folder(resolved):
        raise NotARunFolder(f"run {run_id!r}: {folder} holds no {LEDGER_FILE} (not a run folder); --force "
                            "deletes run folders only: move it away or choose another --run-id")
    shutil.rmtree(resolved)
    return True
