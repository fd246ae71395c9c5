"""Run storage: where a run lives, how a name or a path finds it, and how it is opened read-only.

A run is a folder `<runs-dir>/<run-id>/` holding `ledger.duckdb` (the truth),
`ledger.projections.duckdb` (its read models, rebuilt from it), the key store
and the derived files. A Parquet export directory is a run too (read-only).
Every command and the service find runs through `resolve_run` and open them
through `open_run`; "no such run" is one error, `RunNotFound`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ledgermem.ledger.keys import KeyStore, is_sealed
from ledgermem.ledger.store import Ledger
from ledgermem.memory.errors import MemoryError_, RunNotFound
from ledgermem.memory.names import run_folder, validate_run_id
from ledgermem.memory.sandbox import lock_down
from ledgermem.projections.materialise import ProjectionStore, projection_path

__all__ = ["LEDGER_FILE", "check_seq", "ledger_path", "open_run", "resolve_run"]

LEDGER_FILE = "ledger.duckdb"


def ledger_path(runs_dir: Path, run_id: str) -> Path:
    """`<runs_dir>/<run_id>/ledger.duckdb`; `InvalidRunId` unless the id is a name (memory.names)."""
    return run_folder(runs_dir, run_id) / LEDGER_FILE


def resolve_run(run: str, runs_dir: Path = Path("runs")) -> Path:
    """A ledger file, a Parquet export directory, a run folder, or a run id (under `runs_dir`), as an existing path.

    An argument that is not an existing ledger, export or run folder must be
    a run name: `../x` or `/tmp/x` that exists nowhere is refused as an id
    rather than looked up under `runs_dir`.
    """
    direct = Path(run)
    if run and (direct.is_file() or (direct.is_dir() and _is_export(direct))):
        return direct
    if run and direct.is_dir() and (direct / LEDGER_FILE).is_file():
        return direct / LEDGER_FILE
    validate_run_id(run, what="run")
    candidate = ledger_path(runs_dir, run)
    if candidate.is_file():
        return candidate
    known = sorted(p.parent.name for p in Path(runs_dir).glob(f"*/{LEDGER_FILE}"))
    hint = f"known runs in {runs_dir}: {', '.join(known)}" if known else f"no runs in {runs_dir}"
    raise RunNotFound(f"unknown run {run!r}: no ledger at {candidate} ({hint})")


def _is_export(folder: Path) -> bool:
    # ledger.parquet (and with it pyarrow.parquet) is loaded only when a folder may be an export
    from ledgermem.ledger.parquet import MANIFEST

    return (folder / MANIFEST).is_file()


@contextmanager
def open_run(path: Path, *, keys: Path | None = None, examine: bool = False
             ) -> Iterator[tuple[Ledger, ProjectionStore]]:
    """A run's ledger and projections, read-only; the ledger's connection also sees the projection tables.

    `path` is a ledger file (its projection file beside it) or a Parquet
    export directory (its projections are folded from the events into
    memory, decrypted with `keys` if given: an export carries no keys).

    Both connections are sealed by `memory.sandbox.lock_down` once the
    run's files are attached: they read the run and nothing else.

    A projection file that is not a whole fold of the ledger is refused,
    unless `examine` (the audit, whose replay check compares the file with
    a fold of the ledger and reports every difference).
    """
    if Path(path).is_dir():
        from ledgermem.ledger.parquet import ParquetLedger

        with ParquetLedger(path, keys=KeyStore(keys, read_only=True) if keys else None) as ledger:
            proj = ProjectionStore.over(ledger.conn)
            proj.fill(ledger)
            ledger.conn.create_function("decrypt", _decrypt_with(ledger), ["VARCHAR"], "VARCHAR")
            lock_down(ledger.conn, files=ledger.files)  # the export's files stay readable: `events` reads them
            yield ledger, proj
        return
    with Ledger(path, read_only=True) as ledger, ProjectionStore(projection_path(path), read_only=True) as proj:
        if not examine:
            proj.require_current(ledger)  # a partial fold (an interrupted import or run) is refused, never served
        quoted = proj.path.replace("'", "''")  # ATTACH takes no parameters on every DuckDB version
        ledger.conn.execute(f"ATTACH '{quoted}' AS projections (READ_ONLY)")
        ledger.conn.execute("SET search_path = 'main,projections'")
        ledger.conn.create_function("decrypt", _decrypt_with(ledger), ["VARCHAR"], "VARCHAR")
        lock_down(ledger.conn)
        lock_down(proj.conn)
        yield ledger, proj


def check_seq(ledger: Ledger, option: str, seq: int | None) -> None:
    """Refuse a seq past the ledger's last one (`audit --at 999999` would describe a state that never was)."""
    if seq is not None and not 0 <= seq <= ledger.last_seq:
        where = "beyond the ledger's last seq" if seq > 0 else "below 0; seqs run from 0 to the last seq"
        raise MemoryError_(f"{option} {seq} is {where} {ledger.last_seq}")


def _decrypt_with(ledger: Ledger) -> Callable[[str], str]:
    """`decrypt(column)` in SQL: sealed values opened with the run's keys (`[erased]` once shredded)."""

    def decrypt(value: str) -> str:
        return ledger.unseal(value) if is_sealed(value) else value

    return decrypt
