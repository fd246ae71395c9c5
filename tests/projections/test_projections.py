"""evolve is pure; SCD-2 history is well-formed; live tables equal a rebuild; render allocates."""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ledgermem.gate.decide import decide
from ledgermem.projections.events import EpisodeStarted
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore, rebuild
from ledgermem.projections.render import render
from ledgermem.projections.scd2 import TABLES, Projector
from ledgermem.projections.state import EpisodeState, evolve, fold
from ledgermem.projections.tokens import ESTIMATOR
from tests.turns import called, record_turn

SLOTS = ("floor", "team", "city")
CONFIG = MemoryConfig(window_turns=3, chain_budget=60, index_group_size=2, tokenizer=ESTIMATOR)

responses = st.one_of(
    st.just("NONE"),
    st.just("garbage without any tags {{{"),
    st.builds(
        lambda facts, overrides: (
            "note " + " ".join(f"{k} {v}" for k, v in facts)
            + "\n[FACTS: " + "; ".join(f"{k}={v}" for k, v in facts) + "]"
            + "\n[OVERRIDES: " + (", ".join(overrides) or "none") + "]"
        ),
        st.lists(st.tuples(st.sampled_from(SLOTS), st.sampled_from("ABCD")), min_size=1, max_size=3),
        st.lists(st.integers(1, 12).map(lambda n: f"s{n:04d}"), max_size=3),
    ),
)


def _scripted(script: list[str]) -> ScriptedBackend:
    it = iter(script)
    return ScriptedBackend(lambda messages, purpose: next(it, "NONE"))


def test_evolve_does_not_mutate_its_input() -> None:
    s = fold([EpisodeStarted(config=CONFIG.to_dict())])
    events = decide(s, record_turn(s, turn=1, user="my floor is 1", agent="a", summarizer=called(
        "x\n[FACTS: floor=1]\n[OVERRIDES: none]", 1, backend="b")))
    for e in events:
        before = copy.deepcopy(s)
        after = evolve(s, e)
        assert s == before
        s = after
    assert s.summaries["s0001"].facts == (("floor", "1"),)


def _check_well_formed(history: dict[str, list[dict[str, Any]]]) -> None:
    for spec in TABLES:
        by_key: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
        for row in history[spec.name]:
            by_key[tuple(row[n] for n, _ in spec.key)].append(row)
        for key, rows in by_key.items():
            rows.sort(key=lambda r: r["valid_from_seq"])
            assert sum(r["valid_to_seq"] is None for r in rows) <= 1, (spec.name, key, "two open versions")
            for r in rows:
                if r["valid_to_seq"] is not None:
                    assert r["valid_to_seq"] > r["valid_from_seq"], (spec.name, key)
                    assert r["valid_to_turn"] >= r["valid_from_turn"], (spec.name, key)
            for a, b in zip(rows, rows[1:]):
                assert a["valid_to_seq"] is not None and a["valid_to_seq"] <= b["valid_from_seq"], (spec.name, key)
                if spec.name != "window_versions":  # only the window lets a key leave and never come back
                    assert a["valid_to_seq"] == b["valid_from_seq"], (spec.name, key, "gap")


@given(st.lists(responses, min_size=1, max_size=14))
def test_scd2_history_is_well_formed_and_live_equals_rebuild(script: list[str]) -> None:
    ledger, store = Ledger(":memory:"), ProjectionStore()
    memory = Memory(ledger, StreamKey("run", "three_layer", "ep"), _scripted(script), config=CONFIG, projections=store)
    for i, response in enumerate(script):
        memory.add_turn(f"user says {i}: {response}", "ok")  # the user said what the summary claims: grounded
    rebuilt = rebuild(ledger)
    _check_well_formed(rebuilt)
    assert store.read_tables() == rebuilt
    # Current rows of the rebuild are the live state's snapshot.
    open_slots = {r["slot"]: r["value"] for r in rebuilt["fact_versions"] if r["valid_to_seq"] is None}
    assert open_slots == {k: v for k, (v, _) in memory.state.current_values().items()}


def test_as_of_seq_selects_exactly_one_version_per_key() -> None:
    ledger, store = Ledger(":memory:"), ProjectionStore()
    memory = Memory(ledger, StreamKey("run", "s", "ep"), projections=store, backend=_scripted([
        "a\n[FACTS: floor=3F]\n[OVERRIDES: none]", "b\n[FACTS: floor=7F]\n[OVERRIDES: s0001]",
        "c\n[FACTS: floor=9F]\n[OVERRIDES: s0002]"]), config=CONFIG)
    for i, floor in enumerate(("3F", "7F", "9F")):
        memory.add_turn(f"turn {i}: my floor is {floor}", "ok")
    values = []
    for seq in range(1, ledger.last_seq + 1):
        rows = store.conn.execute(
            "SELECT value FROM fact_versions WHERE slot = 'floor' AND valid_from_seq <= ? "
            "AND ? < coalesce(valid_to_seq, 9223372036854775807)", [seq, seq]).fetchall()
        assert len(rows) <= 1
        values.append(rows[0][0] if rows else None)
    assert [v for i, v in enumerate(values) if v and (i == 0 or values[i - 1] != v)] == ["3F", "7F", "9F"]


def test_projector_skips_events_that_change_nothing() -> None:
    p = Projector(("r", "s", "e"))
    delta = p.apply(1, EpisodeStarted(config=CONFIG.to_dict()))
    assert not delta.opened and not delta.closed
    assert p.state.started


def test_render_under_a_tight_budget_keeps_every_item_and_the_registry() -> None:
    s = fold([EpisodeStarted(config=CONFIG.to_dict())])
    long_user = "a very long message " * 60
    for n, resp in enumerate(["x\n[FACTS: floor=3F]\n[OVERRIDES: none]", "NONE", "y\n[FACTS: team=6]\n[OVERRIDES: none]"], 1):
        s = fold(list(decide(s, record_turn(s, turn=n, user=long_user if n == 2 else f"short {n}", agent="ok",
                                            summarizer=called(resp, n, backend="b")))), s)
    full = render(s, 10_000)
    tight = render(s, 60)
    assert tight.item_ids == full.item_ids  # nothing pushed out
    assert tight.part("registry") == full.part("registry")
    for a, b in zip(full.parts, tight.parts):
        for fi, ti in zip(a.items, b.items):
            assert ti.text.rstrip("…") and fi.text.startswith(ti.text.rstrip("…")[:8])  # every item keeps its head
    assert tight.part("window").tokens < full.part("window").tokens


def test_empty_state_renders_nothing() -> None:
    assert render(EpisodeState()).text == ""
