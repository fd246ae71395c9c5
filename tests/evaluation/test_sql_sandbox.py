"""The SQL sandbox: a query on a run reads the run and touches nothing else.

Every statement that once wrote or read outside a run through `ledgermem sql`
is tried three ways: through the command (a one-line refusal, exit 1, the
target unchanged), straight on the connection `open_run` gives with the
statement check bypassed (DuckDB itself refuses: external access off,
configuration locked), and on a connection opened the same way but not
locked down, where it must succeed — the control that shows each attack is
real. Ordinary reads, `decrypt`, and a Parquet export keep working.
`verify` (like `sql`) answers for a run whose writer holds its ledger.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from click.testing import Result

from ledgermem.memory import sandbox
from ledgermem.service.catalog import Catalog
from tests.invoke import invoke_in
from ledgermem.memory.errors import SqlRefused
from ledgermem.memory.runs import open_run
from ledgermem.ledger.store import Ledger
from ledgermem.projections.materialise import projection_path


def invoke(*args: str, cwd: Path) -> Result:
    return invoke_in(cwd, *args)


def digest(path: Path) -> str | None:
    """The file's hash; a folder's listing; None while nothing is there."""
    if path.is_dir():
        return ",".join(sorted(p.name for p in path.iterdir()))
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


@dataclass(frozen=True)
class Runs:
    cwd: Path
    mine: Path  # runs/mine: a personal-data run (it has a key store)
    other: Path  # runs/other: a second run, another ledger
    export: Path  # a Parquet export of runs/mine

    @property
    def targets(self) -> dict[str, Path]:
        return {"other": self.other / "ledger.duckdb", "metrics": self.mine / "metrics.csv",
                "keys": self.mine / "ledger.keys.duckdb", "dump": self.cwd / "dump"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    cwd = tmp_path_factory.mktemp("sandbox")
    for run_id, extra in (("mine", ["--personal-data"]), ("other", [])):
        result = invoke("run", "--episodes", "1", "--turns", "8", "--systems", "three_layer", "--run-id", run_id,
                        *extra, cwd=cwd)
        assert result.exit_code == 0, result.output
    assert invoke("export", "mine", "--to", "exported", cwd=cwd).exit_code == 0
    return Runs(cwd, cwd / "runs" / "mine", cwd / "runs" / "other", cwd / "exported")


# Every statement of the report, plus their close relatives. {other}, {metrics}, {keys}, {dump} are filled with
# the paths of the files they aim at.
ATTACKS = {
    "attach other ledger read-write, delete": "ATTACH '{other}' AS o (READ_WRITE); DELETE FROM o.events",
    "attach other ledger read-write": "ATTACH '{other}' AS o (READ_WRITE)",
    "copy over the run's metrics.csv": "COPY (SELECT 1 AS x) TO '{metrics}' (HEADER)",
    "copy over another ledger": "COPY (SELECT * FROM events) TO '{other}' (FORMAT parquet)",
    "read_csv /etc/passwd": "SELECT * FROM read_csv('/etc/passwd', sep = ':', header = false)",
    "read_text /etc/passwd": "SELECT content FROM read_text('/etc/passwd')",
    "glob /*": "SELECT * FROM glob('/*')",
    "read_blob the key store": "SELECT content FROM read_blob('{keys}')",
    "set": "SET threads = 1",
    "allow every directory": "SET allowed_directories = ['/']",
    "reset the lock": "RESET lock_configuration",
    "pragma": "PRAGMA enable_profiling = 'json'",
    "create temp table": "CREATE TEMP TABLE t AS SELECT 1 AS x",
    "export database": "EXPORT DATABASE '{dump}'",
    "install": "INSTALL httpfs",
    "read over the network": "SELECT * FROM read_csv('https://example.com/data.csv')",
    "detach": "DETACH projections",
}

# What the command says, for each (the statement kind, or DuckDB's own refusal naming the file).
REFUSAL = {
    "attach other ledger read-write, delete": "2 statements",
    "attach other ledger read-write": "ATTACH",
    "copy over the run's metrics.csv": "COPY",
    "copy over another ledger": "COPY",
    "read_csv /etc/passwd": 'Cannot access file "/etc/passwd"',
    "read_text /etc/passwd": 'Cannot access file "/etc/passwd"',
    "glob /*": 'Cannot access file "/*"',
    "read_blob the key store": "ledger.keys.duckdb",
    "set": "SET",
    "allow every directory": "SET",
    "reset the lock": "RESET",
    "pragma": "PRAGMA",
    "create temp table": "CREATE",
    "export database": "EXPORT",
    "install": "INSTALL",
    "read over the network": 'Cannot access file "https://example.com/data.csv"',
    "detach": "DETACH",
}

# Statements DuckDB's sandbox itself refuses (a temporary table, DETACH and a multi-statement string touch no
# file, so only the statement check stops them). Unlocked, the network ones would need the network to
# succeed, so they have no control here.
DATABASE_REFUSES = [k for k in ATTACKS if k not in ("create temp table", "detach",
                                                    "attach other ledger read-write, delete")]
NETWORK = ("install", "read over the network")
DATABASE_CASES = [(a, True) for a in DATABASE_REFUSES] + [(a, False) for a in DATABASE_REFUSES if a not in NETWORK]


def fill(query: str, targets: dict[str, Path]) -> str:
    return query.format(**{k: str(v) for k, v in targets.items()})


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_the_command_refuses_in_one_line_and_nothing_changes(runs: Runs, attack: str) -> None:
    targets = runs.targets
    before = {name: digest(path) for name, path in targets.items()}
    for where in ("mine", "exported"):  # a run folder and a Parquet export
        result = invoke("sql", where, fill(ATTACKS[attack], targets), cwd=runs.cwd) if where == "mine" else \
            invoke("sql", str(runs.export), fill(ATTACKS[attack], targets), cwd=runs.cwd)
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 1, (where, result.output)
        assert len(lines) == 1 and lines[0].startswith("error: refused: "), (where, result.stderr)
        assert REFUSAL[attack] in lines[0], (where, lines[0])
        assert "Traceback" not in result.output and "root:" not in result.stdout
    assert {name: digest(path) for name, path in targets.items()} == before
    verified = invoke("verify", "other", cwd=runs.cwd)
    assert verified.exit_code == 0 and verified.stdout.startswith("ok: "), verified.output


@contextmanager
def unlocked(path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A run opened as `open_run` opens it, but not locked down: the control."""
    with Ledger(path, read_only=True) as ledger:
        ledger.conn.execute(f"ATTACH '{projection_path(path)}' AS projections (READ_ONLY)")
        ledger.conn.execute("SET search_path = 'main,projections'")
        yield ledger.conn


def scratch_targets(runs: Runs, tmp: Path) -> dict[str, Path]:
    """Copies of the files the attacks aim at, so that the control may damage them."""
    (tmp / "other").mkdir()
    shutil.copyfile(runs.other / "ledger.duckdb", tmp / "other" / "ledger.duckdb")
    shutil.copyfile(runs.mine / "metrics.csv", tmp / "metrics.csv")
    shutil.copyfile(runs.mine / "ledger.keys.duckdb", tmp / "keys.duckdb")
    return {"other": tmp / "other" / "ledger.duckdb", "metrics": tmp / "metrics.csv", "keys": tmp / "keys.duckdb",
            "dump": tmp / "dump"}


def attempt(conn: duckdb.DuckDBPyConnection, query: str) -> list[tuple[object, ...]]:
    """Each statement of `query` executed straight on `conn` (no statement check); the last one's rows."""
    rows: list[tuple[object, ...]] = []
    for statement in duckdb.extract_statements(query):
        rows = conn.execute(statement).fetchall()
    return rows


@pytest.mark.parametrize("attack, sandboxed", DATABASE_CASES,
                         ids=[f"{a}-{'sandboxed' if s else 'control-unlocked'}" for a, s in DATABASE_CASES])
def test_duckdb_itself_refuses_what_the_statement_check_would_catch(
    runs: Runs, tmp_path: Path, attack: str, sandboxed: bool
) -> None:
    targets = scratch_targets(runs, tmp_path)
    before = {name: digest(path) for name, path in targets.items()}
    query = fill(ATTACKS[attack], targets)
    path = runs.mine / "ledger.duckdb"
    with open_run(path) if sandboxed else unlocked(path) as handle:
        conn = handle[0].conn if sandboxed else handle
        if sandboxed:
            with pytest.raises((duckdb.PermissionException, duckdb.InvalidInputException)) as caught:
                attempt(conn, query)
            assert "disabled" in str(caught.value) or "configuration has been locked" in str(caught.value)
            assert sandbox.is_locked(conn)
        else:
            rows = attempt(conn, query)  # the attack is real: unlocked, it runs
            if attack.startswith(("read_", "glob")):
                assert rows
            if attack == "allow every directory":
                assert conn.execute("SELECT current_setting('allowed_directories')").fetchone() == (["/"],)
    after = {name: digest(path) for name, path in targets.items()}
    if sandboxed:
        assert after == before
    elif attack.startswith("copy over"):
        changed = "metrics" if "metrics" in attack else "other"
        assert after[changed] != before[changed]
    elif attack == "export database":
        assert targets["dump"].is_dir()


def test_control_an_unlocked_connection_attaches_another_ledger_and_breaks_it(runs: Runs, tmp_path: Path) -> None:
    """The first statement of the report, whole: without the sandbox it succeeds and the other ledger fails verify."""
    targets = scratch_targets(runs, tmp_path)
    with unlocked(runs.mine / "ledger.duckdb") as conn:
        attempt(conn, "ATTACH '{other}' AS o (READ_WRITE); DELETE FROM o.events WHERE seq = 3".format(**targets))
        conn.execute("DETACH o")
    with Ledger(targets["other"], read_only=True) as other:
        assert not other.verify().ok
    with open_run(runs.mine / "ledger.duckdb") as (ledger, _):
        with pytest.raises(duckdb.PermissionException):
            ledger.conn.execute(f"ATTACH '{runs.other / 'ledger.duckdb'}' AS o (READ_WRITE)")


def test_every_connection_open_run_gives_is_locked_and_the_service_uses_it(runs: Runs) -> None:
    with open_run(runs.mine / "ledger.duckdb") as (ledger, projections):
        assert sandbox.is_locked(ledger.conn) and sandbox.is_locked(projections.conn)
        assert sandbox.is_locked(ledger.conn.cursor())
        with pytest.raises(duckdb.PermissionException):
            ledger.conn.execute("LOAD httpfs")
    with open_run(runs.export) as (ledger, _):
        assert sandbox.is_locked(ledger.conn)
    catalog = Catalog(runs.cwd / "runs", hold=0.0)
    try:
        with catalog.open("mine") as view:
            assert sandbox.is_locked(view.conn)
            with pytest.raises(duckdb.PermissionException):
                view.conn.execute("SELECT * FROM read_text('/etc/passwd')")
    finally:
        catalog.close()


def test_two_readers_of_one_run_in_one_process_both_work(runs: Runs) -> None:
    """DuckDB shares one database per file in a process: the second reader finds the first's attachment and seal."""
    path = runs.mine / "ledger.duckdb"
    query = "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM summary_versions), decrypt('x')"
    first = open_run(path)
    ledger, _ = first.__enter__()
    try:
        with open_run(path) as (second, projections):
            assert second.conn.execute(query).fetchone() == ledger.conn.execute(query).fetchone()
            assert sandbox.is_locked(second.conn) and sandbox.is_locked(projections.conn)
            first.__exit__(None, None, None)
            first = None  # the first reader closed while the second still reads
            assert second.conn.execute(query).fetchone()[0] > 0
    finally:
        if first is not None:
            first.__exit__(None, None, None)


def test_execute_refuses_an_unlocked_connection(runs: Runs) -> None:
    with unlocked(runs.mine / "ledger.duckdb") as conn:
        with pytest.raises(SqlRefused, match="not sandboxed"):
            sandbox.execute(conn, "SELECT 1")


@pytest.mark.parametrize("query", [
    "SELECT count(*) FROM events",
    "WITH e AS (SELECT * FROM events) SELECT count(*) FROM e",
    "FROM fact_versions SELECT slot, value WHERE valid_to_seq IS NULL",
    "DESCRIBE summary_versions",
    "SHOW TABLES",
    "SUMMARIZE raw_records",
    "-- a comment\nEXPLAIN SELECT count(*) FROM raw_records",
    "EXPLAIN ANALYZE SELECT count(*) FROM raw_records",
    "SELECT * FROM pragma_table_info('events')",
    "SELECT 1;",
])
def test_read_only_accepts_reads(query: str) -> None:
    assert sandbox.read_only(query) == query


@pytest.mark.parametrize("query, fragment", [
    ("", "no statement"),
    ("-- only a comment", "no statement"),
    ("SELECT 1; SELECT 2", "2 statements"),
    ("EXPLAIN ANALYZE COPY (SELECT 1) TO 'x.csv'", "EXPLAIN of anything but a SELECT"),
    ("/* c */ EXPLAIN /* d */ COPY (SELECT 1) TO 'x.csv'", "EXPLAIN of anything but a SELECT"),
    ("IMPORT DATABASE 'somewhere'", "IMPORT changes settings"),
    ("CALL checkpoint()", "CALL runs a procedure"),
    ("CHECKPOINT", "CHECKPOINT runs a procedure"),
    ("USE projections", "USE changes settings"),
    ("SET VARIABLE x = 1", "SET"),
    ("LOAD httpfs", "LOAD adds extensions"),
    ("INSERT INTO events SELECT * FROM events", "INSERT"),
    ("UPDATE events SET payload = ''", "UPDATE"),
    ("DELETE FROM events", "DELETE"),
    ("DROP TABLE events", "DROP"),
    ("CREATE MACRO m(x) AS x", "CREATE"),
    ("CREATE SECRET s (TYPE s3)", "CREATE"),
    ("BEGIN", "BEGIN is transaction control"),
    ("COPY FROM DATABASE memory TO projections", "COPY changes settings, reads or writes files"),
])
def test_read_only_refuses_everything_else_naming_it(query: str, fragment: str) -> None:
    with pytest.raises(SqlRefused) as caught:
        sandbox.read_only(query)
    message = str(caught.value)
    assert message.startswith("refused: ") and fragment in message and "\n" not in message


def test_reads_decrypt_and_an_export_still_work(runs: Runs) -> None:
    same = ("SELECT count(*) AS n, bool_and(decrypt(e.payload ->> '$.agent') = r.agent_text) AS same, "
            "bool_and(starts_with(e.payload ->> '$.agent', 'enc1:')) AS sealed FROM events e "
            "JOIN raw_records r USING (run_id, system, episode_id, turn) WHERE e.event_type = 'turn_recorded'")
    result = invoke("sql", "mine", same, "--json", cwd=runs.cwd)
    assert result.exit_code == 0, result.output
    assert '"n": 8' in result.stdout and '"same": true' in result.stdout and '"sealed": true' in result.stdout
    current = invoke("sql", "mine", "SELECT count(*) AS n FROM fact_versions WHERE valid_to_seq IS NULL", "--json",
                     cwd=runs.cwd)
    assert current.exit_code == 0 and '"n": 0' not in current.stdout
    events = invoke("sql", "mine", "SELECT count(*) AS n FROM events", "--json", cwd=runs.cwd)
    exported = invoke("sql", str(runs.export), "SELECT count(*) AS n FROM events", "--json", cwd=runs.cwd)
    assert exported.exit_code == 0 and exported.stdout == events.stdout, exported.output
    keyed = invoke("sql", str(runs.export), same, "--keys", str(runs.mine / "ledger.keys.duckdb"), "--json",
                   cwd=runs.cwd)
    assert keyed.exit_code == 0 and '"same": true' in keyed.stdout, keyed.output


HOLD = """
import sys, time, duckdb
conn = duckdb.connect(sys.argv[1])  # a writer's lock, as a running `ledgermem run` holds it
print("held", flush=True)
time.sleep(120)
"""


@contextmanager
def held(path: Path) -> Iterator[None]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


@pytest.mark.parametrize("tampered", [False, True], ids=["intact", "control-tampered"])
def test_verify_answers_from_a_snapshot_while_the_writer_holds_the_ledger(tmp_path: Path, tampered: bool) -> None:
    assert invoke("run", "--episodes", "1", "--turns", "6", "--systems", "three_layer", "--run-id", "live",
                  cwd=tmp_path).exit_code == 0
    path = tmp_path / "runs" / "live" / "ledger.duckdb"
    if tampered:  # the snapshot is really verified: a changed payload is still found
        with duckdb.connect(str(path)) as conn:
            conn.execute("UPDATE events SET payload = payload || ' ' WHERE seq = 4")
    with held(path):
        result = invoke("verify", "live", cwd=tmp_path)
    assert "is being written; verifying a snapshot of its ledger" in result.stderr, result.output
    assert "Traceback" not in result.output
    if tampered:
        assert result.exit_code == 1 and "BROKEN at seq 4" in result.stderr
    else:
        assert result.exit_code == 0 and result.stdout.startswith("ok: "), result.output
