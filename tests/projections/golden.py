"""Golden replays: event files in `tests/golden/`, and the projections they must fold to.

A case is `<case>.events.jsonl`, one event per line,

    {"event_type": "summary_created", "stream": ["run", "system", "episode"], "event": {"turn": 1, ...}}

with every field of the event class (tuples written as JSON lists), and
`<case>.expected.json`, the projections `rebuild` made from it, as JSON.
"""

from __future__ import annotations

import json
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

from ledgermem.evaluation import events as _harness_events  # noqa: F401  registers run_started, probe_answered
from ledgermem.ledger.events import EVENT_TYPES, Event
from ledgermem.ledger.store import Ledger, StreamKey

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
REGEN_ENV = "LEDGERMEM_REGEN_GOLDEN"


def cases() -> list[str]:
    return sorted(p.name.removesuffix(".events.jsonl") for p in GOLDEN_DIR.glob("*.events.jsonl"))


def events_path(case: str) -> Path:
    return GOLDEN_DIR / f"{case}.events.jsonl"


def expected_path(case: str) -> Path:
    return GOLDEN_DIR / f"{case}.expected.json"


def _frozen(value: Any) -> Any:
    """JSON lists back into the tuples the event classes declare (facts are tuples of pairs)."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _event(event_type: str, body: dict[str, Any]) -> Event:
    cls = EVENT_TYPES[event_type]
    hints = typing.get_type_hints(cls)
    kwargs = {name: _frozen(value) if typing.get_origin(hints[name]) is tuple else value
              for name, value in body.items()}
    return cls(**kwargs)


def load_events(path: Path) -> list[tuple[StreamKey, Event]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append((StreamKey(*row["stream"]), _event(row["event_type"], row["event"])))
    return out


def ledger_from(path: Path) -> Ledger:
    """An in-memory ledger holding the file's events in file order, values in clear."""
    ledger = Ledger(":memory:")
    for stream, event in load_events(path):
        ledger.append(stream, [event], expected_version=ledger.stream_version(stream))
    return ledger


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def event_line(stream: StreamKey, event: Event) -> str:
    body = {f.name: _jsonable(getattr(event, f.name)) for f in fields(event)}
    row = {"event_type": event.event_type, "stream": list(stream.as_tuple()), "event": body}
    return json.dumps(row, ensure_ascii=False, sort_keys=False)


def write_events(path: Path, events: list[tuple[StreamKey, Event]]) -> None:
    path.write_text("".join(event_line(s, e) + "\n" for s, e in events), encoding="utf-8")


def read_expected(case: str) -> dict[str, list[dict[str, Any]]]:
    data: dict[str, list[dict[str, Any]]] = json.loads(expected_path(case).read_text(encoding="utf-8"))
    return data


def write_expected(case: str, projections: dict[str, list[dict[str, Any]]]) -> None:
    text = json.dumps(projections, ensure_ascii=False, indent=1, sort_keys=False)
    expected_path(case).write_text(text + "\n", encoding="utf-8")
