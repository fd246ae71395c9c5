"""The projector versions only the rows an event names (`scd2.touched`); its history is still the snapshot diff.

The reference here is the definition written out: after every event that
changes the state, compare the whole `snapshot` with the one before, key by
key, close what changed or left and open what changed or came. The
projector must give exactly those versions (ids, intervals, attributes) on
any sequence `evolve` accepts, golden cases included. A projector told too
little by `touched` (the registry row of an erasure forgotten) is caught.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from ledgermem.projections.events import EpisodeStarted, FactErased, SummaryCreated, TurnRecorded
from ledgermem.ledger.keys import ERASED
from ledgermem.projections import scd2
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.scd2 import TABLES, Projector, snapshot, version_id
from ledgermem.projections.state import EpisodeEvent, EpisodeState, evolve
from ledgermem.projections.tokens import ESTIMATOR
from tests.projections import golden
from tests.projections.test_event_sequences import STREAM, recorded, sequences

Version = tuple[Any, ...]


def _plain(value: Any) -> Any:
    """A cell as the snapshot holds it: lists as tuples, facts as (slot, value) pairs."""
    if isinstance(value, dict) and value.keys() == {"slot", "value"}:
        return (value["slot"], value["value"])
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    return value


def by_definition(stream: tuple[str, str, str], events: list[EpisodeEvent]) -> dict[str, set[Version]]:
    """Every version, from consecutive whole snapshots: (key, attrs, version_id, from/to seq, from/to turn)."""
    state = EpisodeState()
    current = snapshot(state)
    opened: dict[str, dict[Any, list[Any]]] = {spec.name: {} for spec in TABLES}
    done: dict[str, set[Version]] = {spec.name: set() for spec in TABLES}
    for seq, event in enumerate(events, 1):
        after = evolve(state, event)
        if after is not state:
            new = snapshot(after)
            for spec in TABLES:
                old_rows, new_rows, rows = current[spec.name], new[spec.name], opened[spec.name]
                for key, attrs in old_rows.items():
                    if new_rows.get(key) != attrs:
                        done[spec.name].add((*rows.pop(key), seq, event.turn))
                for key, attrs in new_rows.items():
                    if old_rows.get(key) != attrs:
                        rows[key] = [key, _plain(attrs), version_id(stream, spec.name, key, seq), seq, event.turn]
            current = new
        state = after
    for spec in TABLES:
        done[spec.name] |= {(*row, None, None) for row in opened[spec.name].values()}
    return {name: {(k, a, v, fs, ft, ts, tt) for k, a, v, fs, ft, ts, tt in rows} for name, rows in done.items()}


def projected(stream: tuple[str, str, str], events: list[EpisodeEvent]) -> dict[str, set[Version]]:
    p = Projector(stream, keep_history=True)
    p.replay(recorded(events))
    assert p.history is not None
    out: dict[str, set[Version]] = {}
    for spec in TABLES:
        out[spec.name] = {
            (tuple(r[n] for n, _ in spec.key), tuple(_plain(r[n]) for n, _ in spec.attrs), r["version_id"],
             r["valid_from_seq"], r["valid_from_turn"], r["valid_to_seq"], r["valid_to_turn"])
            for r in p.history[spec.name]
        }
    return out


@given(events=sequences(family="lenient"))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_the_projector_gives_the_snapshot_diff_on_any_sequence(events: list[EpisodeEvent]) -> None:
    stream = STREAM.as_tuple()
    assert projected(stream, events) == by_definition(stream, events)


@pytest.mark.parametrize("case", golden.cases())
def test_the_projector_gives_the_snapshot_diff_on_every_golden_case(case: str) -> None:
    streams: dict[Any, list[EpisodeEvent]] = {}
    for stream, event in golden.load_events(golden.events_path(case)):
        if stream.episode_id:
            streams.setdefault(stream, []).append(event)  # type: ignore[arg-type]
    assert streams
    for stream, events in streams.items():
        assert projected(stream.as_tuple(), events) == by_definition(stream.as_tuple(), events), stream


def test_a_projector_told_too_little_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Must-fail control: `touched` forgets the registry row an erasure changes.
    config = MemoryConfig(tokenizer=ESTIMATOR).to_dict()
    events: list[EpisodeEvent] = [
        EpisodeStarted(config=config),
        TurnRecorded(turn=1, record_id="r0001", text="my floor is 3F", agent="ok"),
        SummaryCreated(turn=1, summary_id="s0001", text="floor 3F", facts=(("floor", "3F"),), overrides=(),
                       raw_ids=("r0001",)),
        FactErased(turn=2, summary_id="s0001", slot="floor", legal_basis="GDPR Art. 17"),
    ]
    stream = STREAM.as_tuple()
    assert projected(stream, events) == by_definition(stream, events)
    real = scd2.touched

    def forgetful(before: EpisodeState, after: EpisodeState, event: EpisodeEvent) -> scd2.Touched:
        found = real(before, after, event)
        return {t: keys for t, keys in found.items() if not (isinstance(event, FactErased) and t == "fact_versions")}

    monkeypatch.setattr(scd2, "touched", forgetful)
    wrong, right = projected(stream, events), by_definition(stream, events)
    assert wrong != right
    assert any(a == (None, None, True) for _, a, *_ in right["fact_versions"])  # the erased registry row
    assert not any(a == (None, None, True) for _, a, *_ in wrong["fact_versions"])
    assert ERASED in {v for _, a, *_ in wrong["summary_versions"] for _, v in a[2]}  # the summary row did change
