"""The registry of event types: the ledger stores and reads events whose classes other packages declare.

The ledger names no event type of the memory or the harness; a package
registers its classes (`ledger.events.register`) and the codec goes by the
registered name. These tests declare their own event types, so they show
the ledger working with types it has never heard of, and check that the
packages register theirs on import and nowhere else.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from ledgermem.evaluation import events as harness_events
from ledgermem.ledger import events as registry
from ledgermem.ledger.errors import InvalidEvent, UnknownEventType
from ledgermem.ledger.events import EVENT_TYPES, Event, event_class, is_registered, register
from ledgermem.ledger.schema import decode, encode
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.projections import events as memory_events

ROOT = Path(__file__).resolve().parents[2]
LEDGER_DIR = ROOT / "ledger"
STREAM = StreamKey("registry-run", "sensor", "room-1")


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ReadingTaken(Event):
    """An event type of this test module: nothing in the project knows it."""

    event_type: ClassVar[str] = "test_reading_taken"
    IDS: ClassVar[str | None] = "tags"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text",)
    record_id: str
    text: str
    celsius: float
    tags: tuple[str, ...] = ()


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SensorMoved(Event):
    event_type: ClassVar[str] = "test_sensor_moved"
    where: dict[str, str]


def _fresh_name(stem: str) -> str:
    n = 0
    while f"{stem}_{n}" in EVENT_TYPES:
        n += 1
    return f"{stem}_{n}"


# --- the ledger stores types it does not know -------------------------------------------


def test_a_ledger_round_trips_event_types_declared_outside_it() -> None:
    events: list[Event] = [
        ReadingTaken(turn=1, record_id="t-1", text="kitchen", celsius=21.5, tags=("a", "b")),
        SensorMoved(turn=2, where={"from": "kitchen", "to": "hall"}),
    ]
    with Ledger() as ledger:
        ledger.append(STREAM, events, expected_version=0)
        back = list(ledger.read(stream=STREAM))
        assert [r.event for r in back] == events
        assert [r.event_type for r in back] == ["test_reading_taken", "test_sensor_moved"]
        assert [r.schema_version for r in back] == [1, 1]
        row = ledger.conn.execute("SELECT ids, text, payload FROM events WHERE seq = 1").fetchone()
        assert row == (["a", "b"], "kitchen", '{"celsius":21.5}')
        assert ledger.verify().ok


def test_the_envelope_says_where_and_when_whatever_the_type() -> None:
    with Ledger() as ledger:
        (recorded,) = ledger.append(STREAM, [SensorMoved(where={"to": "attic"})], expected_version=0)
    assert (recorded.seq, recorded.stream, recorded.stream_version) == (1, STREAM, 1)
    assert recorded.event_type == "test_sensor_moved" and recorded.recorded_at is not None
    assert len(recorded.hash) == 64 and len(recorded.event_id) == 32


# --- registering ------------------------------------------------------------------------


def test_a_registered_class_is_found_by_its_name() -> None:
    assert event_class("test_reading_taken") is ReadingTaken
    assert EVENT_TYPES["test_sensor_moved"] is SensorMoved
    assert is_registered(ReadingTaken)
    assert event_class("never_registered_anywhere") is None


def test_the_registry_is_read_only_from_outside() -> None:
    with pytest.raises(TypeError):
        EVENT_TYPES["x"] = ReadingTaken  # type: ignore[index]


def test_a_name_taken_by_another_class_is_refused_naming_both(monkeypatch: pytest.MonkeyPatch) -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Impostor(Event):
        event_type: ClassVar[str] = "test_reading_taken"

    with pytest.raises(InvalidEvent, match=r"Impostor: event type 'test_reading_taken' is already registered by "
                                           r".*ReadingTaken"):
        register(Impostor)
    assert event_class("test_reading_taken") is ReadingTaken

    # Control: the same class under a name of its own is accepted.
    name = _fresh_name("test_impostor")
    monkeypatch.setattr(Impostor, "event_type", name)
    monkeypatch.setitem(registry._REGISTRY, name, Impostor)  # undone after the test
    assert register(Impostor) is Impostor and event_class(name) is Impostor


def test_registering_the_same_class_again_changes_nothing() -> None:
    before = dict(EVENT_TYPES)
    assert register(ReadingTaken) is ReadingTaken
    assert dict(EVENT_TYPES) == before


@pytest.mark.parametrize("name", ["", "TurnRecorded", "turn recorded", "1st", "turn-recorded"])
def test_a_name_that_is_not_a_lower_case_identifier_is_refused(name: str) -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Oddly(Event):
        pass

    Oddly.event_type = name
    with pytest.raises(InvalidEvent, match="must be a lower-case name"):
        register(Oddly)
    assert name not in EVENT_TYPES


def test_only_event_dataclasses_can_be_registered() -> None:
    class NotADataclass(Event):
        event_type: ClassVar[str] = "test_not_a_dataclass"

    with pytest.raises(InvalidEvent, match="must be a dataclass deriving from ledger.events.Event"):
        register(NotADataclass)
    assert "test_not_a_dataclass" not in EVENT_TYPES


def test_a_field_whose_type_does_not_fit_its_typed_column_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class BadColumn(Event):
        event_type: ClassVar[str] = "test_bad_column"
        summary_id: int  # the summary_id column is a string

    @dataclass(frozen=True, slots=True, kw_only=True)
    class GoodColumn(Event):
        event_type: ClassVar[str] = "test_good_column"
        summary_id: str

    monkeypatch.setitem(registry._REGISTRY, "test_bad_column", BadColumn)
    monkeypatch.setitem(registry._REGISTRY, "test_good_column", GoodColumn)
    with pytest.raises(InvalidEvent, match=r"BadColumn.summary_id is BIGINT but goes to the typed column "
                                           r"'summary_id', which is VARCHAR"):
        encode(BadColumn(summary_id=7))
    assert encode(GoodColumn(summary_id="s-1")).columns["summary_id"] == "s-1"  # control


# --- reading a type nobody registered ----------------------------------------------------


def test_decoding_an_unregistered_type_is_one_line_naming_seq_and_type() -> None:
    with pytest.raises(UnknownEventType) as caught:
        decode(4711, "sensor_exploded", 1, {}, "{}")
    message = str(caught.value)
    assert message.startswith("seq 4711: event type 'sensor_exploded' is not registered")
    assert "\n" not in message
    assert caught.value.seq == 4711 and caught.value.event_type == "sensor_exploded"


def test_reading_a_row_of_an_unregistered_type_fails_and_event_types_leaves_it_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    name = _fresh_name("test_passing")

    @dataclass(frozen=True, slots=True, kw_only=True)
    class Passing(Event):
        event_type: ClassVar[str] = name
        note: str = ""

    with Ledger() as ledger:
        with monkeypatch.context() as registered:
            registered.setitem(registry._REGISTRY, name, Passing)
            ledger.append(STREAM, [SensorMoved(where={}), Passing(turn=3, note="x")], expected_version=0)
        assert name not in EVENT_TYPES  # as if the package that declares it were not imported
        with pytest.raises(UnknownEventType, match=rf"^seq 2: event type '{name}' is not registered"):
            list(ledger.read(stream=STREAM))
        kept = [r.event for r in ledger.read(stream=STREAM, event_types=["test_sensor_moved"])]
        assert kept == [SensorMoved(where={})]
        assert ledger.verify().ok  # the chain is checked from the rows: no payload is decoded


# --- who registers what --------------------------------------------------------------------


def _child(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_each_package_registers_its_own_types_on_import_and_the_table_does_not_depend_on_them() -> None:
    out = _child("""
        import ledgermem.ledger.store
        from ledgermem.ledger.events import EVENT_TYPES
        from ledgermem.ledger.schema import events_arrow_schema
        print(sorted(EVENT_TYPES)); print(str(events_arrow_schema()).replace(chr(10), "|"))
        import ledgermem.projections.state
        print(sorted(EVENT_TYPES))
        import ledgermem.evaluation.metrics
        print(sorted(EVENT_TYPES)); print(str(events_arrow_schema()).replace(chr(10), "|"))
    """).splitlines()
    memory = sorted(c.event_type for c in memory_events.MEMORY_EVENTS)
    harness = sorted(c.event_type for c in harness_events.HARNESS_EVENTS)
    # The ledger alone registers nothing (the API package `ledgermem` loads its names on first use, so importing
    # the ledger imports no memory); the memory's types come with projections, the harness's with the harness.
    assert out[0] == "[]"
    assert out[2] == str(memory)
    assert out[3] == str(sorted(memory + harness))
    assert out[1] == out[4]  # the same table whatever is registered
    golden = (Path(__file__).parent / "golden" / "events_schema.txt").read_text(encoding="utf-8")
    assert out[1] == golden.split("\n\n")[0].replace("\n", "|")


def test_a_fold_without_the_harness_names_the_harness_event_it_cannot_read(tmp_path: Path) -> None:
    """The memory reads a stream the harness wrote only once the harness's types are registered."""
    path = tmp_path / "run.duckdb"
    config = {"tokenizer": "estimate", "personal_data": False}
    with Ledger(path) as ledger:
        ledger.append(STREAM, [memory_events.EpisodeStarted(config=config),
                               harness_events.ProbeAnswered(turn=1, probe_id="p1", text="12F", tool_calls=0,
                                                            llm_calls=1)], expected_version=0)
    out = _child(f"""
        from ledgermem.ledger.errors import UnknownEventType
        from ledgermem.ledger.store import Ledger, StreamKey
        from ledgermem.projections.state import fold
        stream = StreamKey{STREAM.as_tuple()!r}
        with Ledger({str(path)!r}, read_only=True) as ledger:
            try:
                fold(r.event for r in ledger.read(stream=stream))
            except UnknownEventType as exc:
                print(exc)
            import ledgermem.evaluation
            print(fold(r.event for r in ledger.read(stream=stream)).started)
    """).splitlines()
    assert out[0].startswith("seq 2: event type 'probe_answered' is not registered")
    assert out[1] == "True"


# --- the ledger names no event type ----------------------------------------------------------


def named_event_types(source: str, names: set[str]) -> set[str]:
    """The registered type names a source spells as a string literal."""
    return {m.group(2) for m in re.finditer(r"(['\"])([a-z][a-z0-9_]*)\1", source) if m.group(2) in names}


def test_the_ledger_names_no_event_type_of_the_memory_or_the_harness() -> None:
    names = {c.event_type for c in (*memory_events.MEMORY_EVENTS, *harness_events.HARNESS_EVENTS)}
    found = {f"{p.name}: {n}" for p in sorted([*LEDGER_DIR.glob("*.py"), *LEDGER_DIR.glob("*.sql")])
             for n in named_event_types(p.read_text(encoding="utf-8"), names)}
    assert found == set()
    # Control: the check sees a name spelled in SQL or Python.
    assert named_event_types("WHERE event_type = 'turn_recorded'", names) == {"turn_recorded"}
    assert named_event_types('x = "probe_answered"', names) == {"probe_answered"}


def _module_file(module: str) -> Path | None:
    parts = module.split(".")[1:]
    for candidate in (ROOT.joinpath(*parts).with_suffix(".py"), ROOT.joinpath(*parts, "__init__.py")):
        if parts and candidate.is_file():
            return candidate
    return None


def imported_at_load(module: str) -> set[str]:
    """Every `ledgermem` module that importing `module` loads, following module-level imports only."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:n]) for n in range(2, len(parts))]  # a module's packages load first
        path = _module_file(name)
        if path is None:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # top level only: not inside functions
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("ledgermem."):
                todo.append(node.module or "")
                todo += [f"{node.module}.{a.name}" for a in node.names if _module_file(f"{node.module}.{a.name}")]
            elif isinstance(node, ast.Import):
                todo += [a.name for a in node.names if a.name.startswith("ledgermem.")]
    return seen


def test_every_command_of_the_cli_reads_what_the_harness_wrote() -> None:
    """Each command module loads the harness package, which registers its types: no command meets a run's
    `run_started` or `probe_answered` it cannot decode."""
    from ledgermem.cli.main import COMMANDS

    for module in sorted(set(COMMANDS.values())):
        assert "ledgermem.evaluation.events" in imported_at_load(module), module
    # Control: the walk does not find the harness where it is not loaded.
    assert "ledgermem.evaluation.events" not in imported_at_load("ledgermem.projections.state")
    assert "ledgermem.projections.events" in imported_at_load("ledgermem.projections.state")


def test_decode_errors_cross_a_process_boundary_whole() -> None:
    """An audit's child process sends its error back pickled: the same class, seq, type and message arrive."""
    import pickle

    from ledgermem.ledger.errors import MalformedEvent, UnknownEventType

    for error in (UnknownEventType(7, "made_up"), MalformedEvent(9, "payload is not JSON")):
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and back.seq == error.seq and str(back) == str(error)
        assert getattr(back, "event_type", None) == getattr(error, "event_type", None)
