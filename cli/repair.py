"""`ledgermem repair`: finish what an interrupted import, fill or run left behind.

A run's projection file is derived from its ledger, so repairing it is
rebuilding it: folded from the ledger into a new file that is renamed in.
What an interrupted import leaves beside its target (its marker and the
partial ledger it was writing) is removed, once no import holds the marker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from ledgermem.cli.main import cli, fails_cleanly, out
from ledgermem.cli.options import runs_dir_option
from ledgermem.evaluation.errors import NothingToRepair
from ledgermem.memory.errors import InvalidRunId, RunNotFound
from ledgermem.memory.names import RUN_ID
from ledgermem.memory.runs import LEDGER_FILE, ledger_path, resolve_run
from ledgermem.ledger.store import Ledger
from ledgermem.projections.materialise import ProjectionStore, projection_path, rebuild_file


@dataclass(frozen=True, slots=True)
class Repaired:
    """What `repair` found and did."""

    ledger: Path
    removed: tuple[Path, ...]  # left by an interrupted import or rebuild
    problem: str | None  # why the projections were not served ("" when none), None when there is no ledger
    rebuilt: bool
    events: int = 0


def locate(run: str, runs_dir: Path) -> Path:
    """The ledger file `run` names; also one that is missing but has an interrupted import's leftovers."""
    try:
        return resolve_run(run, runs_dir)
    except (RunNotFound, InvalidRunId):
        from ledgermem.ledger.parquet import import_marker_path, partial_imports

        candidates = [Path(run), Path(run) / LEDGER_FILE]
        if RUN_ID.fullmatch(run):
            candidates.append(ledger_path(runs_dir, run))
        for candidate in candidates:
            if import_marker_path(candidate).exists() or partial_imports(candidate):
                return candidate
        raise


def repair(path: Path, *, force: bool = False) -> Repaired:
    """Remove an interrupted import's leftovers and rebuild the projections unless they are a whole fold."""
    # pyarrow.parquet is loaded by the commands that touch Parquet or imports only, never by `run`
    from ledgermem.ledger.parquet import MANIFEST, ImportMarker, remove_partial_imports

    if path.is_dir():
        if (path / MANIFEST).is_file():
            raise NothingToRepair(f"{path}: a Parquet export; its projections are folded in memory on every "
                                  "open, so there is nothing to repair")
        raise RunNotFound(f"{path}: a directory, not a ledger file")
    with ImportMarker(path):  # refused while an import into it runs; removed when done
        removed = list(remove_partial_imports(path))
        if not path.exists():
            if not removed:
                raise RunNotFound(f"{path}: no ledger here")
            return Repaired(path, tuple(removed), None, False)
        target = Path(projection_path(path))
        with Ledger(path, read_only=True, create=False) as ledger:
            problem = _problem(target, ledger)
            if problem or force:
                rebuild_file(ledger, target)
            else:
                removed += _remove_rebuild_leftovers(target)
            return Repaired(path, tuple(removed), problem, bool(problem) or force, ledger.last_seq)


def _problem(target: Path, ledger: Ledger) -> str:
    if not target.exists():
        return "no projection file"
    with ProjectionStore(target, read_only=True) as store:
        return store.behind(ledger) or ""


def _remove_rebuild_leftovers(target: Path) -> list[Path]:
    """A rebuild killed half-way leaves `<file>.rebuilding`; the next rebuild would remove it, this one does now."""
    found = [p for p in (Path(f"{target}.rebuilding"), Path(f"{target}.rebuilding.wal")) if p.exists()]
    for p in found:
        p.unlink(missing_ok=True)
    return found


@cli.command("repair")
@click.argument("run")
@runs_dir_option
@click.option("--force", is_flag=True, help="Rebuild the projections even when they are a whole fold.")
@fails_cleanly
def repair_cmd(run: str, runs_dir: str, force: bool) -> None:
    """Rebuild a run's projections from its ledger if they are partial, and remove what an interrupted
    import left beside it.

    Partial projections (an import, fill or run killed half-way, or a file
    older than an erasure) are never served: `sql`, `replay`, `audit` and
    the time-travel commands refuse them and name this command. Re-running
    an interrupted `ledgermem import` finishes it too.

    \b
    Example:
      ledgermem repair demo
    """
    done = repair(locate(run, Path(runs_dir)), force=force)
    for path in done.removed:
        out.print(f"removed {path}, left by an interrupted import or rebuild", markup=False, soft_wrap=True)
    if done.problem is None:
        out.print(f"no ledger at {done.ledger}: the import died before writing it; run the import again",
                  markup=False, soft_wrap=True)
    elif done.rebuilt:
        why = f" ({done.problem})" if done.problem else ""
        out.print(f"rebuilt the projections of {done.ledger} from its {done.events} events{why}",
                  markup=False, soft_wrap=True)
    else:
        out.print(f"ok: the projections of {done.ledger} are a whole fold of its {done.events} events",
                  markup=False, soft_wrap=True)
