"""Imports and projection fills killed half-way: detected on the next import or open, finished or rebuilt.

Each crash is a real process death (`os._exit` at a named point of
`ledgermem import`, or `kill -9` from outside while the import writes): no
`finally` runs, no lock is released by hand. After it, the next import into
the same file succeeds, nothing of the dead import is left beside it, and
`ledgermem sql` on the target gives the whole result or a one-line refusal
naming `ledgermem repair`, never a partial projection.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ledgermem.ledger.errors import LedgerError, LedgerLocked
from ledgermem.projections.events import EpisodeStarted, TurnRecorded
from ledgermem.ledger.parquet import ImportMarker, export, import_dataset, import_marker_path, partial_imports
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.errors import ProjectionsBehind
from ledgermem.projections.materialise import ProjectionStore, projection_path
from ledgermem.projections.tokens import default_tokenizer

ROOT = Path(__file__).resolve().parents[2]
EPISODES, TURNS = 12, 60
COUNT = "SELECT count(*) AS n FROM raw_records"  # one row per turn of every episode once projected
TOTAL = EPISODES * TURNS

#: `ledgermem import` (or `repair`) in a child process, after patching one function to die where it is called.
CHILD = """
import os, sys
import importlib
module, attr, when = sys.argv[1], sys.argv[2], int(sys.argv[3])
owner = importlib.import_module("ledgermem." + module)  # the modules the CLI uses, not a bare top-level copy
path = attr.split(".")
holder = owner
for part in path[:-1]:
    holder = getattr(holder, part)
original = getattr(holder, path[-1])
calls = [0]
def dying(*args, **kwargs):
    calls[0] += 1
    if calls[0] >= when:
        os._exit(137)  # as abrupt as kill -9: no finally, no atexit, no flush
    return original(*args, **kwargs)
setattr(holder, path[-1], dying)
from ledgermem.cli.commands import cli
cli.main(args=sys.argv[4:], prog_name="ledgermem")
"""


def ledgermem(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ledgermem", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env or _env(), timeout=300)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def crash(at: str, when: int, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `ledgermem ARGS` with `at` (module:attribute) dying on its `when`-th call."""
    module, attr = at.split(":")
    return subprocess.run([sys.executable, "-c", CHILD, module, attr, str(when), *args], capture_output=True,
                          text=True, cwd=ROOT, env=_env(), timeout=300)


def rows(target: Path) -> int | str:
    """`ledgermem sql`'s count of projected turns, or its error line when it refuses."""
    done = ledgermem("sql", str(target), COUNT, "--json")
    if done.returncode != 0:
        assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
        return done.stderr.strip()
    return int(json.loads(done.stdout)[0]["n"])


def leftovers(target: Path) -> list[str]:
    """Everything beside `target` an import writes only while it runs."""
    return sorted(p.name for p in target.parent.iterdir() if p.name.startswith(f".{target.name}.importing")
                  or p.name.endswith((".rebuilding", ".rebuilding.wal")))


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export of a ledger of 12 episodes of 60 turns (raw records only): big enough to kill an import in."""
    root = tmp_path_factory.mktemp("source")
    config = MemoryConfig(personal_data=False, tokenizer=default_tokenizer()).to_dict()
    with Ledger(root / "ledger.duckdb") as ledger:
        for e in range(EPISODES):
            events: list[EpisodeStarted | TurnRecorded] = [EpisodeStarted(config=config)]
            events += [TurnRecorded(turn=t, record_id=f"r{t:04d}", text=f"My desk number is {e}-{t}.",
                                    agent="Noted.") for t in range(1, TURNS + 1)]
            ledger.append(StreamKey("big", "three_layer", f"ep-{e:03d}"), events, expected_version=0)
        export(ledger, root / "export")
    return root / "export"


def test_an_uninterrupted_import_serves_every_row(exported: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.duckdb"
    done = ledgermem("import", str(exported), "--to", str(target))
    assert done.returncode == 0, done.stderr
    assert rows(target) == TOTAL and leftovers(target) == []


CRASH_POINTS = [
    # (where the import dies, what it leaves behind)
    ("ledger.parquet:ParquetLedger.verify_copy", 1, "its partial ledger, rows written, not yet renamed"),
    ("projections.materialise:ProjectionStore.replace_stream", 5, "a projection file half folded"),
    ("ledger.parquet:ImportMarker.__exit__", 1, "everything, but its marker"),
]


@pytest.mark.parametrize(("at", "when", "left"), CRASH_POINTS, ids=[c[2] for c in CRASH_POINTS])
def test_an_import_killed_at_a_named_point_is_finished_by_the_next(
    exported: Path, tmp_path: Path, at: str, when: int, left: str
) -> None:
    target = tmp_path / "copy.duckdb"
    died = crash(at, when, "import", str(exported), "--to", str(target))
    assert died.returncode == 137, died.stderr
    assert import_marker_path(target).exists()  # the dead import's marker, whatever else it left
    served = rows(target) if target.exists() else None
    assert served in (None, TOTAL) or "ledgermem repair" in str(served), served  # never a partial count
    again = ledgermem("import", str(exported), "--to", str(target))
    assert again.returncode == 0, again.stderr
    assert leftovers(target) == []
    assert rows(target) == TOTAL
    with Ledger(target, read_only=True) as ledger:
        assert ledger.verify().ok and ledger.last_seq == EPISODES * (TURNS + 1)


def test_a_dead_imports_partial_ledger_is_named_then_removed(exported: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.duckdb"
    crash("ledger.parquet:ParquetLedger.verify_copy", 1, "import", str(exported), "--to", str(target))
    orphans = partial_imports(target)
    assert orphans and not target.exists()
    again = ledgermem("import", str(exported), "--to", str(target))
    assert again.returncode == 0, again.stderr
    for orphan in orphans:
        assert f"removed {orphan}" in again.stdout and not orphan.exists()


def test_a_sigkill_while_the_import_writes_is_recovered(exported: Path, tmp_path: Path) -> None:
    """Killed from outside (SIGKILL) as soon as its partial ledger, then its new projection file, appears."""
    for marker in (lambda t: partial_imports(t), lambda t: list(t.parent.glob("*.rebuilding"))):
        target = tmp_path / f"copy-{len(list(tmp_path.iterdir()))}.duckdb"
        child = subprocess.Popen([sys.executable, "-m", "ledgermem", "import", str(exported), "--to", str(target)],
                                 cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert _wait_for(lambda: bool(marker(target)), child), "the import ended before the kill"
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait(timeout=60)
        assert child.returncode == -signal.SIGKILL
        assert import_marker_path(target).exists()
        if target.exists():
            served = rows(target)
            assert served == TOTAL or "ledgermem repair" in str(served), served
        again = ledgermem("import", str(exported), "--to", str(target))
        assert again.returncode == 0, again.stderr
        assert leftovers(target) == [] and rows(target) == TOTAL


def _wait_for(seen: Callable[[], bool], child: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if seen():
            return True
        if child.poll() is not None:
            return False
        time.sleep(0.0005)
    return False


# -- partial projections are never served ------------------------------------------------


@pytest.fixture
def half_filled(exported: Path, tmp_path: Path) -> Path:
    """A complete ledger beside a projection file whose in-place fill died after 4 of 12 episodes.

    This is what `import` left before it wrote projections to a new file:
    the file every read command opened then held some episodes and not others.
    """
    target = tmp_path / "copy.duckdb"
    import_dataset(exported, target).close()
    script = (
        "import os, sys\n"
        "from ledgermem.ledger.store import Ledger\n"
        "from ledgermem.projections import materialise as m\n"
        "original, calls = m.ProjectionStore.replace_stream, [0]\n"
        "def dying(self, *a):\n"
        "    calls[0] += 1\n"
        "    if calls[0] > 4: os._exit(137)\n"
        "    return original(self, *a)\n"
        "m.ProjectionStore.replace_stream = dying\n"
        "with Ledger(sys.argv[1]) as ledger:\n"
        "    m.ProjectionStore(m.projection_path(sys.argv[1])).fill(ledger)\n"
    )
    died = subprocess.run([sys.executable, "-c", script, str(target)], cwd=ROOT, env=_env(), timeout=120)
    assert died.returncode == 137
    return target


def test_a_half_filled_projection_is_refused_with_the_repair_command(half_filled: Path) -> None:
    refused = rows(half_filled)
    assert isinstance(refused, str) and "partial projections" in refused
    assert f"ledgermem repair {half_filled}" in refused
    assert "a fill up to seq" in refused and "did not finish" in refused
    done = ledgermem("replay", str(half_filled))
    assert done.returncode == 1 and "partial projections" in done.stderr, done.stderr
    # The audit examines the file instead of refusing it: its replay check names what the fold lacks.
    audited = ledgermem("audit", str(half_filled))
    assert audited.returncode == 1, audited.stdout + audited.stderr
    assert "projections: not a whole fold of the ledger: a fill up to seq" in audited.stdout, audited.stderr
    assert "VIOLATED replay" in audited.stdout
    # Without the fill's marker, the streams' high-water marks give it away on their own.
    with ProjectionStore(projection_path(half_filled)) as store:
        store.conn.execute("DELETE FROM projection_meta WHERE key = 'filling_to_seq'")
    refused = rows(half_filled)
    assert isinstance(refused, str) and "8 of 12 stream(s) not folded to their last event" in refused, refused


def test_must_fail_control_without_the_check_the_partial_projection_is_served(half_filled: Path) -> None:
    """The same file read with the check switched off: the query answers, wrongly, from 4 of 12 episodes."""
    script = (
        "import sys\n"
        "from ledgermem.projections.materialise import ProjectionStore\n"
        "ProjectionStore.require_current = lambda self, ledger: None\n"
        "from cli.commands import cli\n"
        "cli.main(args=sys.argv[1:], prog_name='ledgermem')\n"
    )
    served = subprocess.run([sys.executable, "-c", script, "sql", str(half_filled), COUNT, "--json"],
                            capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=120)
    assert served.returncode == 0, served.stderr
    assert json.loads(served.stdout)[0]["n"] == 4 * TURNS  # partial, and nothing said so


def test_repair_rebuilds_a_half_filled_projection(half_filled: Path) -> None:
    done = ledgermem("repair", str(half_filled))
    assert done.returncode == 0, done.stderr
    assert "rebuilt the projections" in done.stdout and "a fill up to seq" in done.stdout
    assert rows(half_filled) == TOTAL
    again = ledgermem("repair", str(half_filled))
    assert again.returncode == 0 and again.stdout.startswith("ok:"), again.stdout


def test_a_fill_marked_started_is_partial_even_with_every_stream_marked(exported: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.duckdb"
    import_dataset(exported, target).close()
    with Ledger(target, read_only=True) as ledger, ProjectionStore(projection_path(target)) as store:
        store.fill(ledger)
        assert store.behind(ledger) is None
        store.conn.execute("INSERT INTO projection_meta VALUES ('filling_to_seq', ?)", [ledger.last_seq])
        assert "did not finish" in str(store.behind(ledger))
        with pytest.raises(ProjectionsBehind, match="ledgermem repair"):
            store.require_current(ledger)


def test_a_projection_behind_a_crashed_run_is_refused(exported: Path, tmp_path: Path) -> None:
    """A writer that died between its ledger commit and its projection commit leaves one stream behind."""
    target = tmp_path / "copy.duckdb"
    ledgermem("import", str(exported), "--to", str(target))
    with Ledger(target) as ledger:
        stream = StreamKey("big", "three_layer", "ep-003")
        ledger.append(stream, [TurnRecorded(turn=TURNS + 1, record_id="r9999", text="x", agent="y")],
                      expected_version=ledger.stream_version(stream))  # the projections never see it
    refused = rows(target)
    assert isinstance(refused, str) and "1 of 12 stream(s)" in refused and "big/three_layer/ep-003" in refused
    assert ledgermem("repair", str(target)).returncode == 0
    assert rows(target) == TOTAL + 1


# -- the marker ----------------------------------------------------------------------------


def test_a_running_import_is_not_mistaken_for_a_dead_one(exported: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.duckdb"
    with ImportMarker(target) as held:
        assert not held.left_over
        with pytest.raises(LedgerLocked, match=f"another import into it is running \\(pid {os.getpid()}"):
            import_dataset(exported, target)
        refused = ledgermem("repair", str(target))
        assert refused.returncode == 1 and "another import into it is running" in refused.stderr
    assert not import_marker_path(target).exists()
    import_dataset(exported, target).close()


def test_an_existing_ledger_is_still_refused(exported: Path, tmp_path: Path) -> None:
    """Only a file an interrupted import left is finished; any other is never overwritten."""
    target = tmp_path / "copy.duckdb"
    import_dataset(exported, target).close()
    with pytest.raises(LedgerError, match="already exists"):
        import_dataset(exported, target)
    assert leftovers(target) == []


def test_an_interrupted_imports_ledger_that_differs_from_the_export_is_kept(exported: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.duckdb"
    crash("projections.materialise:ProjectionStore.replace_stream", 1, "import", str(exported), "--to", str(target))
    with Ledger(target) as ledger:  # written to after the import died
        stream = StreamKey("big", "three_layer", "ep-000")
        ledger.append(stream, [TurnRecorded(turn=TURNS + 1, record_id="r9999", text="x", agent="y")],
                      expected_version=ledger.stream_version(stream))
        size = ledger.last_seq
    refused = ledgermem("import", str(exported), "--to", str(target))
    assert refused.returncode == 1 and "left by an interrupted import" in refused.stderr, refused.stderr
    with Ledger(target, read_only=True) as ledger:
        assert ledger.last_seq == size  # untouched
    assert import_marker_path(target).exists()  # still marked as an interrupted import's


def test_the_server_answers_a_half_filled_run_from_a_private_rebuilt_copy(half_filled: Path) -> None:
    from ledgermem.service.catalog import Catalog

    catalog = Catalog(half_filled, hold=0)
    try:
        with catalog.open("big") as view:
            assert view.conn.execute(COUNT).fetchone() == (TOTAL,)
            assert view.ledger.path != str(half_filled)  # a copy, with its own projections
    finally:
        catalog.close()
    with Ledger(half_filled, read_only=True) as ledger, ProjectionStore(projection_path(half_filled),
                                                                          read_only=True) as store:
        assert store.behind(ledger) is not None  # the run's own file is left for `repair` to rebuild


def test_a_writer_catches_up_what_a_crash_left_behind(exported: Path, tmp_path: Path) -> None:
    """On a writable open (a resumed run, the intake) lagging streams are refolded; anything else is rebuilt."""
    target = tmp_path / "copy.duckdb"
    import_dataset(exported, target).close()
    with Ledger(target) as ledger, ProjectionStore(projection_path(target)) as store:
        store.fill(ledger)
        stream = StreamKey("big", "three_layer", "ep-005")
        ledger.append(stream, [TurnRecorded(turn=TURNS + 1, record_id="r9999", text="x", agent="y")],
                      expected_version=ledger.stream_version(stream))
        assert "ep-005" in str(store.catch_up(ledger))
        assert store.behind(ledger) is None and store.catch_up(ledger) is None
        assert store.conn.execute(COUNT).fetchone() == (TOTAL + 1,)
        store.conn.execute("INSERT INTO projection_meta VALUES ('filling_to_seq', 1)")
        assert "did not finish" in str(store.catch_up(ledger))  # rebuilt
        assert store.behind(ledger) is None and store.conn.execute(COUNT).fetchone() == (TOTAL + 1,)


def test_repair_cleans_up_after_an_import_that_died_before_its_ledger(exported: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.duckdb"
    crash("ledger.parquet:ParquetLedger.verify_copy", 1, "import", str(exported), "--to", str(target))
    assert partial_imports(target) and not target.exists()
    done = ledgermem("repair", str(target))
    assert done.returncode == 0, done.stderr
    assert "run the import again" in done.stdout and leftovers(target) == []
    assert ledgermem("repair", str(target)).returncode == 1  # nothing there any more: an unknown run
