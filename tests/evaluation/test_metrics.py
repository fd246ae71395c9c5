"""Metrics from the ledger: bootstrap intervals, per-system rows, and the LLM-free diagnostics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ledgermem.evaluation.baselines import BASELINES
from ledgermem.datasets.model import Episode, Probe, Turn
from ledgermem.evaluation.metrics import (
    ACCURACIES,
    TIMING_COLUMNS,
    WHERE,
    EpisodeOutcome,
    ProbeOutcome,
    bootstrap_ci,
    compute_metrics,
    outcome_from_events,
    outcomes_from_ledger,
    without_timing,
)
from ledgermem.evaluation.runner import SYSTEMS, RunOptions, RunResult, open_memory, run, run_episode
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.evaluation.events import RunFinished
from ledgermem.ledger.store import Ledger
from ledgermem.memory.backends import Backend, Message, ScriptedBackend
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore
from ledgermem.projections.tokens import ESTIMATOR

HEURISTIC = HeuristicBackend(tokenizer=ESTIMATOR)
CONFIG = MemoryConfig(tokenizer=ESTIMATOR, personal_data=False)

Groups = Sequence[tuple[int, int]]


def pooled(groups: Groups) -> float:
    return sum(h for h, _ in groups) / sum(n for _, n in groups)


# -- bootstrap_ci ---------------------------------------------------------------------


def test_bootstrap_is_deterministic_and_contains_the_pooled_rate() -> None:
    groups = [(3, 4), (1, 5), (2, 2), (0, 3), (4, 6)]
    ci = bootstrap_ci(groups)
    assert ci is not None and ci == bootstrap_ci(list(groups))
    lo, hi = ci
    assert lo <= pooled(groups) <= hi and 0 <= lo < hi <= 1
    assert bootstrap_ci(groups, seed=1) != ci  # the seed is what makes it repeatable


def test_bootstrap_of_all_correct_episodes_is_one() -> None:
    assert bootstrap_ci([(2, 2), (5, 5), (1, 1)]) == (1.0, 1.0)
    assert bootstrap_ci([(0, 2), (0, 5)]) == (0.0, 0.0)


def test_bootstrap_widens_with_fewer_episodes() -> None:
    def width(groups: Groups) -> float:
        ci = bootstrap_ci(groups)
        assert ci is not None
        return ci[1] - ci[0]

    few, many = [(1, 1), (0, 1)] * 2, [(1, 1), (0, 1)] * 20
    assert pooled(few) == pooled(many) == 0.5
    assert width(few) > width(many) > 0


def test_bootstrap_without_probes_is_none() -> None:
    assert bootstrap_ci([]) is None
    assert bootstrap_ci([(0, 0), (0, 0)]) is None
    assert bootstrap_ci([(0, 0), (1, 1)]) == (1.0, 1.0)  # episodes without probes are left out


def informative(interval: tuple[float, float] | None, groups: Groups) -> bool:
    """A real interval on episodes whose rates differ has the pooled rate strictly inside."""
    return interval is not None and interval[0] < pooled(groups) < interval[1]


mixed_groups = st.lists(
    st.integers(min_value=1, max_value=5).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    min_size=2, max_size=12,
)


@given(mixed_groups)
def test_bootstrap_interval_is_strictly_around_the_rate_on_mixed_data(groups: list[tuple[int, int]]) -> None:
    assume(len({h / n for h, n in groups}) > 1)
    assert informative(bootstrap_ci(groups), groups)


def test_a_point_estimate_posing_as_an_interval_fails_the_check() -> None:
    """Must-fail control for the property above."""
    groups = [(1, 1), (0, 1), (2, 3)]

    def fake(g: Groups) -> tuple[float, float]:
        return pooled(g), pooled(g)

    assert not informative(fake(groups), groups)
    assert informative(bootstrap_ci(groups), groups)


# -- compute_metrics over a real run --------------------------------------------------


@pytest.fixture(scope="module")
def run_result(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return run(generate_synthetic(n_episodes=4, turns=40, seed=3),
               RunOptions(run_id="m", runs_dir=tmp_path_factory.mktemp("runs"), systems=SYSTEMS, memory=CONFIG))


def test_one_row_per_system(run_result: RunResult) -> None:
    assert sorted(run_result.metrics) == sorted(SYSTEMS) == sorted(("three_layer", *BASELINES))
    assert all(row["episodes"] == 4 and row["turns"] == 4 * 40 for row in run_result.metrics.values())
    probes = {row["probes"] for row in run_result.metrics.values()}
    assert len(probes) == 1 and probes.pop() > 0  # every system is asked the same probes


def test_tool_metrics_are_not_applicable_to_baselines(run_result: RunResult) -> None:
    for system in BASELINES:
        row = run_result.metrics[system]
        assert row["Tool_Call_Success_Rate"] is None and row["Tool_Call_Parse_Rate"] is None
        assert row["tool_calls"] is None and row["unavailable_tool_calls"] == 0
    three = run_result.metrics["three_layer"]
    assert three["tool_calls"] > 0 and three["unavailable_tool_calls"] is None
    assert 0 <= three["Tool_Call_Success_Rate"] <= 1 and 0 <= three["Tool_Call_Parse_Rate"] <= 1


def test_diagnostic_shares_sum_to_one(run_result: RunResult) -> None:
    for row in run_result.metrics.values():
        assert sum(row[f"diag_{w}"] for w in WHERE) == pytest.approx(1, abs=1e-3)
    assert run_result.metrics["full_context"]["diag_one_hop"] == 0  # no tools, nothing one hop away
    assert run_result.metrics["three_layer"]["diag_raw_only"] == 0  # its tools read every raw record
    assert run_result.metrics["three_layer"]["diag_one_hop"] > 0
    assert run_result.metrics["memgpt_style"]["diag_raw_only"] > 0  # it deletes what it rolled up


def test_every_accuracy_lies_inside_its_interval(run_result: RunResult) -> None:
    checked = 0
    for row in run_result.metrics.values():
        for name in ACCURACIES.values():
            if row[name] is None:
                assert row[f"{name}_lo"] is None and row[f"{name}_hi"] is None
                continue
            assert row[f"{name}_lo"] <= row[name] <= row[f"{name}_hi"]
            checked += 1
    assert checked >= 3 * len(SYSTEMS)


def test_metrics_recomputed_from_the_ledger_equal_the_runs(run_result: RunResult) -> None:
    with Ledger(run_result.ledger_path, read_only=True) as ledger:
        again = compute_metrics(outcomes_from_ledger(ledger, "m"))
        finished = [r.event for r in ledger.read(event_types=["run_finished"])]
    assert again == run_result.metrics  # timings included: they come from the ledger's commit times
    assert len(finished) == 1 and isinstance(finished[0], RunFinished)
    # The recorded row leaves out what measures the machine, and only that.
    assert finished[0].metrics == without_timing(run_result.metrics)
    for system, row in run_result.metrics.items():
        assert set(row) - set(finished[0].metrics[system]) == set(TIMING_COLUMNS)
        # Wall times always exist; a purpose's latency only where the run made calls of that purpose.
        assert all(row[c] >= 0 for c in ("wall_ms_per_turn", "wall_ms_per_probe"))
        assert all(row[f"llm_latency_ms_{p}"] >= 0 for p in ("summarize", "answer") if row[f"llm_calls_{p}"])


# -- hand-made episodes ---------------------------------------------------------------

DIALOGUE = (
    ("My office floor is 3F.", "Noted."),
    ("My office floor changed to 7F.", "Noted."),
    ("Nice weather today.", "Indeed."),
    ("How was your weekend?", "Quiet."),
    ("I like jazz.", "Cool."),
    ("See you tomorrow.", "Bye."),
)
FLOOR = ("office floor", ((0, "3F"), (1, "7F")))
CURRENT = Probe(probe_id="cur", type="current_fact", question="What is my office floor now?", answer="7F",
                fact_key="office floor")
BEFORE = Probe(probe_id="before", type="history_fact", question="What was my office floor before it changed to 7F?",
               answer="3F", fact_key="office floor")
NEVER = Probe(probe_id="never", type="constraint", question="What is my budget cap?", answer="450 euros")


def episode(dialogue: Sequence[tuple[str, str]] = DIALOGUE, probes: Sequence[Probe] = (CURRENT, BEFORE, NEVER),
            facts: Sequence[tuple[str, tuple[tuple[int, str], ...]]] = (FLOOR,), lang: str = "en") -> Episode:
    return Episode(episode_id="ep", turns=tuple(Turn(user=u, agent=a) for u, a in dialogue), facts=tuple(facts),
                   probes=tuple(probes), lang=lang)


def outcome(system: str, ep: Episode, backend: Backend = HEURISTIC, **overrides: Any) -> EpisodeOutcome:
    """One episode through one system, as the runner does it, folded back from the ledger."""
    opts = RunOptions(run_id="t", systems=(system,), memory=MemoryConfig(
        tokenizer=ESTIMATOR, personal_data=False, **overrides))
    with Ledger(":memory:") as ledger, ProjectionStore(":memory:") as projections:
        memory = open_memory(ledger, projections, opts, system, ep, backend)
        run_episode(memory, system, ep, lambda what, n: None, memory_points=0)
        return outcome_from_events(system, ep.episode_id, ledger.read(stream=memory.stream))


def by_id(o: EpisodeOutcome) -> dict[str, ProbeOutcome]:
    return {p.probe_id: p for p in o.probes}


def answering(text: str) -> ScriptedBackend:
    def reply(messages: Sequence[Message], purpose: str) -> str:
        return text if purpose == "answer" else "NONE"

    return ScriptedBackend(reply)


@pytest.fixture(scope="module")
def hand_outcomes() -> dict[str, dict[str, ProbeOutcome]]:
    """The hand-made episode through every system; the summary chains hold one item (budget 40)."""
    return {system: by_id(outcome(system, episode(), chain_budget=40)) for system in SYSTEMS}


@pytest.mark.parametrize(("system", "where"), [
    ("full_context", "prompt"),  # every turn is shown
    ("three_layer", "one_hop"),  # 3F lives in an overridden summary and a raw record its tools can read
    ("naive_chain", "raw_only"),  # the 3F item fell off the chain, its raw turn left the window
    ("memgpt_style", "raw_only"),  # the rolling summary kept only 7F
])
def test_where_the_older_value_is(hand_outcomes: dict[str, dict[str, ProbeOutcome]], system: str, where: str) -> None:
    assert hand_outcomes[system]["before"].where == where


@pytest.mark.parametrize("system", SYSTEMS)
def test_where_the_current_value_and_a_value_never_said_are(
    hand_outcomes: dict[str, dict[str, ProbeOutcome]], system: str
) -> None:
    probes = hand_outcomes[system]
    assert probes["cur"].where == "prompt" and probes["cur"].correct
    assert probes["never"].where == "gone" and not probes["never"].correct


def test_answers_follow_where_the_value_is(
    hand_outcomes: dict[str, dict[str, ProbeOutcome]]
) -> None:
    # The baselines that lost 3F cannot answer it; the ones that reach it can.
    assert not hand_outcomes["naive_chain"]["before"].correct and not hand_outcomes["memgpt_style"]["before"].correct
    assert hand_outcomes["full_context"]["before"].correct and hand_outcomes["three_layer"]["before"].correct
    assert hand_outcomes["three_layer"]["before"].tool_calls == 1  # one hop: one tool call
    assert hand_outcomes["full_context"]["before"].tool_calls == 0


@pytest.mark.parametrize("system", SYSTEMS)
def test_distance_is_probe_turn_minus_the_newest_turn_holding_the_gold(
    hand_outcomes: dict[str, dict[str, ProbeOutcome]], system: str
) -> None:
    probes = hand_outcomes[system]
    assert probes["cur"].turn == 6
    assert probes["cur"].distance == 6 - 2 and probes["before"].distance == 6 - 1
    assert probes["never"].distance is None


def test_distance_counts_the_newest_mention_even_in_an_agent_reply() -> None:
    dialogue = list(DIALOGUE)
    dialogue[3] = ("How was your weekend?", "Quiet. You were on 3F back then, right?")
    probes = by_id(outcome("full_context", episode(dialogue)))
    assert probes["before"].distance == 6 - 4 and probes["cur"].distance == 6 - 2


def test_interference_is_the_share_of_shown_items_about_other_slots(
    hand_outcomes: dict[str, dict[str, ProbeOutcome]]
) -> None:
    assert hand_outcomes["full_context"]["cur"].interference == round(4 / 6, 4)  # 6 turns, 2 about the floor
    assert hand_outcomes["memgpt_style"]["cur"].interference == round(4 / 5, 4)  # 4 window turns + the summary
    assert hand_outcomes["full_context"]["never"].interference is None  # the probe names no slot


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize(("answer", "correct", "stale"), [("3F", 0.0, 1.0), ("7F", 1.0, 0.0), ("12F", 0.0, 0.0)])
def test_staleness_is_an_older_value_given_as_current(system: str, answer: str, correct: float, stale: float) -> None:
    o = outcome(system, episode(probes=(CURRENT,)), answering(answer))
    row = compute_metrics([o])[system]
    assert row["Current_Fact_Acc"] == correct and row["Staleness_Rate"] == stale
    assert row["Current_Fact_N"] == 1


def test_staleness_is_not_applicable_without_an_update_history() -> None:
    o = outcome("full_context", episode(probes=(CURRENT,), facts=()), answering("3F"))
    assert o.probes[0].stale is None and compute_metrics([o])["full_context"]["Staleness_Rate"] is None


WRITE_DIALOGUE = (
    ("My office floor is 3F.", "Noted."),
    ("My favorite drink is espresso.", "Nice."),  # a fact, but not one the data plants
    ("Nice weather today.", "Indeed."),
    ("My office floor changed to 7F.", "Noted."),
)


@pytest.mark.parametrize("system", ["three_layer", "naive_chain"])
def test_write_precision_is_planted_summaries_over_all_summaries(system: str) -> None:
    ep = episode(WRITE_DIALOGUE, probes=(CURRENT,), facts=(("office floor", ((0, "3F"), (3, "7F"))),))
    o = outcome(system, ep)
    row = compute_metrics([o])[system]
    assert row["summaries_created"] == 3 and o.counts["summaries_worth_keeping"] == 2
    assert row["Write_Precision"] == round(2 / 3, 4)


def test_write_precision_without_summaries_is_not_applicable() -> None:
    ep = episode(WRITE_DIALOGUE, probes=(CURRENT,), facts=(("office floor", ((0, "3F"), (3, "7F"))),))
    row = compute_metrics([outcome("full_context", ep)])["full_context"]
    assert row["summaries_created"] == 0 and row["Write_Precision"] is None


def test_a_chinese_value_inside_a_longer_one_is_not_found_in_the_prompt() -> None:
    dialogue = (("我的工位是3楼。", "好的。"), ("我的工位改成了13楼。", "好的。"), ("今天天气不错。", "是的。"),
                ("周末过得怎么样？", "还行。"), ("我喜欢爵士乐。", "不错。"), ("明天见。", "再见。"))
    before = Probe(probe_id="before", type="history_fact", question="我的工位在改成13楼之前是什么？", answer="3楼",
                   fact_key="工位")
    ep = episode(dialogue, probes=(before,), facts=(("工位", ((0, "3楼"), (1, "13楼"))),), lang="zh")
    probe = by_id(outcome("memgpt_style", ep))["before"]
    assert (probe.where, probe.distance) == ("raw_only", 6 - 1)


# -- outcome folding ------------------------------------------------------------------


def test_outcome_of_a_baseline_counts_summarizer_calls_and_has_no_tools() -> None:
    naive = outcome("naive_chain", episode(), chain_budget=40)
    full = outcome("full_context", episode())
    assert not naive.has_tools and not full.has_tools
    assert naive.counts["llm_calls_summarize"] == len(DIALOGUE) and full.counts["llm_calls_summarize"] == 0
    assert [t.turn for t in naive.turns] == list(range(1, len(DIALOGUE) + 1))
    assert all(t.chain_text_tokens is None for t in full.turns)
    assert all(t.chain_text_tokens is not None for t in naive.turns)


def test_metrics_of_episodes_without_probes_are_empty() -> None:
    o = outcome("full_context", episode(probes=()))
    row = compute_metrics([o])["full_context"]
    assert row["probes"] == 0 and row["turns"] == len(DIALOGUE)
    assert all(row[name] is None and row[f"{name}_lo"] is None for name in ACCURACIES.values())
    assert all(row[f"diag_{w}"] is None for w in WHERE)
