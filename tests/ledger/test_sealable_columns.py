"""The columns of `events` that can hold a sealed value are derived from the event classes, once."""

from __future__ import annotations

import pytest

from ledgermem.ledger import schema, store
from ledgermem.ledger.events import EVENT_TYPES
from ledgermem.projections.events import SummaryCreated, TurnRecorded
from ledgermem.ledger.keys import KeyStore
from ledgermem.ledger.store import Ledger, StreamKey

STREAM = StreamKey("r", "three_layer", "e")


def _sealed_ledger() -> Ledger:
    ledger = Ledger(keys=KeyStore())
    events = [TurnRecorded(turn=1, record_id="r0001", text="I live in Oslo", agent="ok"),
              SummaryCreated(turn=1, summary_id="s0001", text="lives in Oslo", facts=(), overrides=(),
                             raw_ids=("r0001",))]  # sealed in the `text` column only
    keys = iter(["k-turn", "k-summary"])
    ledger.append(STREAM, events, expected_version=0, keys=list(keys))
    return ledger


def test_every_personal_field_lands_in_a_sealable_column() -> None:
    cols = schema.sealable_columns()
    assert cols[-1] == "payload" and "text" in cols
    for cls in EVENT_TYPES.values():
        for name in cls.PERSONAL:
            assert (schema._column_of(cls, name) or "payload") in cols, (cls.event_type, name)


def test_the_key_scan_finds_a_value_sealed_in_any_of_them() -> None:
    with _sealed_ledger() as ledger:
        assert ledger.sealed_keys(STREAM) == {1: {"k-turn"}, 2: {"k-summary"}}


def test_control_a_scan_that_skips_a_column_misses_the_key_sealed_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "sealable_columns", lambda: ("payload",))
    with _sealed_ledger() as ledger:
        assert ledger.sealed_keys(STREAM) == {1: {"k-turn"}}  # the summary's key, in `text` only, is not seen
