"""Capacity: the index guards (per-turn cap, cost gate, progress, folding) and the merge rules.

The merge rules are checked by one function, `merge_problems`, applied to
the real planner on arbitrary chains and to deliberately broken planners
that it must catch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from ledgermem.gate.capacity import merge_events, merge_group, plan_index, plan_merge
from ledgermem.gate.decide import decide
from ledgermem.projections.events import (
    CapacityMerged,
    CompactionChecked,
    EpisodeStarted,
    IndexCreated,
    IndexFolded,
    MergeRejected,
    SummaryArchived,
    SummaryCreated,
)
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.render import chain_tokens, render
from ledgermem.projections.state import EpisodeEvent, EpisodeState, fold
from ledgermem.projections.tokens import ESTIMATOR
from tests.turns import called, record_turn


def started(**cfg: object) -> EpisodeState:
    config = MemoryConfig(tokenizer=ESTIMATOR, window_turns=2, **cfg)  # type: ignore[arg-type]
    return fold([EpisodeStarted(config=config.to_dict())])


def summary(sid: str, turn: int, text: str, facts: tuple[tuple[str, str], ...] = ()) -> SummaryCreated:
    return SummaryCreated(turn=turn, summary_id=sid, text=text, facts=facts, overrides=(), raw_ids=(f"r{turn:04d}",))


def chain(state: EpisodeState, items: list[tuple[str, tuple[tuple[str, str], ...]]]) -> EpisodeState:
    return fold([summary(f"s{i + 1:04d}", i + 1, text, facts) for i, (text, facts) in enumerate(items)], state)


# -- merge rules -----------------------------------------------------------------------

Planner = Callable[[EpisodeState, frozenset[str]], tuple[EpisodeEvent, ...]]


def real_merge(state: EpisodeState, protect: frozenset[str]) -> tuple[EpisodeEvent, ...]:
    return plan_merge(state, turn=state.turn + 1, protect=protect)[0]


def merge_problems(state: EpisodeState, protect: frozenset[str], events: tuple[EpisodeEvent, ...]) -> list[str]:
    """Where a merge pass breaks the rules (empty when it keeps all of them)."""
    problems: list[str] = []
    cfg = state.config
    current = pre = state
    for event in events:
        if isinstance(event, SummaryCreated) and event.summary_id not in current.summaries:
            pre = current  # the state the merge step started from
        if isinstance(event, CapacityMerged):
            members = [pre.summaries[m] for m in event.merged_from]
            newest = pre.newest_holders()
            if len(members) < 2:
                problems.append(f"{event.summary_id}: merged fewer than two summaries")
            for m in members:
                if m.summary_id in protect:
                    problems.append(f"{m.summary_id}: a protected summary (this turn's) was merged")
                if m.summary_id in newest:
                    problems.append(f"{m.summary_id}: the newest holder of a slot was merged")
                if m.status != "active":
                    problems.append(f"{m.summary_id}: only summaries of the chain proper are merged")
            values: dict[str, str] = {}
            for m in members:
                for k, v in m.facts:
                    if values.setdefault(k, v) != v:
                        problems.append(f"{event.summary_id}: members hold different values of {k}")
            if event.tokens_before and (event.tokens_before - event.tokens_after) / event.tokens_before < cfg.merge_min_gain:
                problems.append(f"{event.summary_id}: applied with a gain under {cfg.merge_min_gain:.0%}")
        current = fold([event], current)
        if isinstance(event, CapacityMerged):
            merged = current.summaries[event.summary_id]
            if merged.merged_from != event.merged_from:
                problems.append(f"{event.summary_id}: lineage merged_from is not recorded on the summary")
            for m in event.merged_from:
                old = current.summaries[m]
                if old.status != "archived" or old.archive_reason != "merged" or old.superseded_by != (merged.summary_id,):
                    problems.append(f"{m}: not archived as merged into {merged.summary_id}")
                if old.text != pre.summaries[m].text or old.facts != pre.summaries[m].facts:
                    problems.append(f"{m}: the archived member was changed")
            if not set(r for m in event.merged_from for r in current.summaries[m].raw_ids) <= set(merged.raw_ids):
                problems.append(f"{event.summary_id}: the members' evidence was not carried")
    if current.current_values() != state.current_values():
        problems.append("the merge changed the registry")
    return problems


texts = st.text(alphabet="abcdefgh ", min_size=1, max_size=60).map(lambda t: " ".join(t.split()) or "x")
facts = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["1", "2", "3"])),
                 max_size=2, unique_by=lambda f: f[0]).map(tuple)


@settings(max_examples=150, deadline=None)
@given(items=st.lists(st.tuples(texts, facts), min_size=0, max_size=12), budget=st.integers(10, 200),
       gain=st.sampled_from([0.0, 0.15, 0.5]), protect_last=st.booleans())
def test_the_real_merge_keeps_every_rule(items, budget, gain, protect_last) -> None:
    s = chain(started(chain_budget=budget, chain_strategy="merge", merge_min_gain=gain), items)
    protect = frozenset({f"s{len(items):04d}"}) if protect_last and items else frozenset()
    assert merge_problems(s, protect, real_merge(s, protect)) == []


def _pressed_chain() -> tuple[EpisodeState, frozenset[str]]:
    """Seven early summaries of a slot that later summaries restate, then this turn's."""
    items = [(f"note {i} about the trip and the plan", (("a", str(i % 3)),)) for i in range(7)]
    items.append(("the newest word on a", (("a", "9"),)))
    s = chain(started(chain_budget=60, chain_strategy="merge", merge_max_group=3), items)
    return s, frozenset({"s0008"})


def test_a_merge_happens_under_pressure_and_is_lineage_tracked() -> None:
    s, protect = _pressed_chain()
    events = real_merge(s, protect)
    merged = [e for e in events if isinstance(e, CapacityMerged)]
    assert merged and merge_problems(s, protect, events) == []
    after = fold(list(events), s)
    first = after.summaries[merged[0].summary_id]
    assert first.merged_from and all(after.summaries[m].archive_reason == "merged" for m in first.merged_from)
    assert chain_tokens(after) < chain_tokens(s)


def test_a_merge_under_the_minimum_gain_is_rejected_and_counted() -> None:
    s, protect = _pressed_chain()
    s = replace(s, config=replace(s.config, merge_min_gain=0.99))
    events, report = plan_merge(s, turn=9, protect=protect)
    assert [type(e) for e in events] == [MergeRejected]
    assert report.rejected == 1 and report.created == 0 and report.stopped == "minimum gain"
    assert "under the minimum 99%" in events[0].reason  # type: ignore[union-attr]


def _broken_ignores_gain(state: EpisodeState, protect: frozenset[str]) -> tuple[EpisodeEvent, ...]:
    group = merge_group(state, protect)
    if len(group) < 2:
        return ()
    step = merge_events(state, group, turn=state.turn + 1)
    return (*step, CapacityMerged(turn=state.turn + 1, summary_id=step[0].summary_id,  # type: ignore[union-attr]
                                  merged_from=tuple(g.summary_id for g in group), tokens_before=100, tokens_after=99))


def _broken_eats_the_newest(state: EpisodeState, protect: frozenset[str]) -> tuple[EpisodeEvent, ...]:
    group = state.active_chain()[:3]  # ignores protection and newest holders
    if len(group) < 2:
        return ()
    step = merge_events(state, group, turn=state.turn + 1)
    return (*step, CapacityMerged(turn=state.turn + 1, summary_id=step[0].summary_id,  # type: ignore[union-attr]
                                  merged_from=tuple(g.summary_id for g in group), tokens_before=100, tokens_after=10))


def _broken_loses_lineage(state: EpisodeState, protect: frozenset[str]) -> tuple[EpisodeEvent, ...]:
    events = real_merge(state, protect)
    return tuple(replace(e, merged_from=()) if isinstance(e, SummaryCreated) else e for e in events)


def _broken_truncates_members(state: EpisodeState, protect: frozenset[str]) -> tuple[EpisodeEvent, ...]:
    out: list[EpisodeEvent] = []
    for e in real_merge(state, protect):
        out.append(e)
        if isinstance(e, SummaryArchived) and e.summary_id in state.summaries:  # the archive must never change
            old = state.summaries[e.summary_id]
            out.append(summary(old.summary_id, old.turn, old.text[:3], old.facts))
    return tuple(out)


def test_every_broken_merge_is_caught() -> None:
    s, protect = _pressed_chain()
    s = replace(s, config=replace(s.config, merge_min_gain=0.15))
    assert merge_problems(s, protect, real_merge(s, protect)) == []
    for broken in (_broken_ignores_gain, _broken_eats_the_newest, _broken_loses_lineage, _broken_truncates_members):
        assert merge_problems(s, protect, broken(s, protect)), broken.__name__


# -- index guards --------------------------------------------------------------------------


def _stale_chain(n: int, **cfg: object) -> EpisodeState:
    """n summaries of slot a, none overridden: all but the newest may go under a title."""
    items = [(f"note {i} about the project with several words", (("a", f"v{i}"),)) for i in range(n)]
    return chain(started(**cfg), items)


def test_at_most_index_max_per_turn_titles_per_turn() -> None:
    s = _stale_chain(20, chain_budget=40, index_group_size=2, index_max_per_turn=2)
    events, report = plan_index(s, turn=21, protect=frozenset())
    assert len([e for e in events if isinstance(e, (IndexCreated, IndexFolded))]) == 2
    assert report.stopped == "per-turn cap"


def test_the_cost_gate_refuses_a_title_dearer_than_what_it_replaces(monkeypatch) -> None:
    import ledgermem.gate.capacity as capacity
    s = _stale_chain(12, chain_budget=60, index_group_size=3)
    # Every applied title is cheaper than the lines it hides ...
    events, report = plan_index(s, turn=13, protect=frozenset())
    assert report.created and report.rejected == 0
    # ... and when a title would cost more than what it hides, it is refused and counted.
    monkeypatch.setattr(capacity, "_replaced_cost", lambda state, step: (10, 11))
    events, report = plan_index(s, turn=13, protect=frozenset())
    assert events == () and report.rejected == 1 and report.stopped == "cost gate"


def test_every_applied_title_makes_the_chain_cheaper_and_titles_are_capped() -> None:
    s = _stale_chain(12, chain_budget=60, index_group_size=3, index_max_per_turn=10, index_title_max_chars=30)
    events, report = plan_index(s, turn=13, protect=frozenset())
    steps = [e for e in events if isinstance(e, (IndexCreated, IndexFolded))]
    assert steps and report.created == len(steps)
    assert all(e.tokens_after < e.tokens_before for e in steps)
    assert all(len(e.text) <= 30 for e in steps)
    assert [e.tokens_before for e in steps[1:]] == [e.tokens_after for e in steps[:-1]]  # monotonic


def test_titles_fold_into_a_higher_level_when_they_pass_their_share() -> None:
    s = _stale_chain(30, chain_budget=70, index_group_size=2, index_max_per_turn=40, index_fold_share=0.2)
    events, _ = plan_index(s, turn=31, protect=frozenset())
    folds = [e for e in events if isinstance(e, IndexFolded)]
    assert folds and all(e.level >= 2 for e in folds)
    after = fold(list(events), s)
    for f in folds:
        for child in f.members:
            assert after.indexes[child].folded_into == f.index_id
    shown = set(render(after, 10_000).part("index").ids)
    assert not shown & {c for f in folds for c in f.members}, "a folded title is shown only through its parent"
    # Nothing became unreachable: every summary is in the chain, under a shown title, or archived.
    under = {s.summary_id for e in after.top_indexes() for s in after.index_summaries(e)}
    assert all(x.status != "indexed" or x.summary_id in under for x in after.summaries.values())


# -- the pass inside decide ------------------------------------------------------------


def test_a_compaction_pass_is_reported_with_its_survival_checks() -> None:
    s = started(chain_budget=50, index_group_size=2)
    seen: list[CompactionChecked] = []
    for n in range(1, 14):
        user = f"my a is v{n} and the note for turn {n} has several words"
        events = decide(s, record_turn(s, turn=n, user=user, agent="ok", summarizer=called(
            f"note {n} with several words\n[FACTS: a=v{n}]\n[OVERRIDES: none]", n)))
        s = fold(list(events), s)
        seen += [e for e in events if isinstance(e, CompactionChecked)]
    assert seen and all(c.strategy == "index" and c.created >= 1 for c in seen)
    assert all(c.open_loops_after >= c.open_loops_before for c in seen)
