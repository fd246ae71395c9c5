"""Benchmark categories: per-type accuracy, abstention judging, the needs-a-model label, questions in the data's language.

The LoCoMo and LongMemEval fixtures run through the CLI with every system and
the offline `heuristic` backend: its answer to an open question is "I don't
know.", which is right for an unanswerable question and says nothing about
the others, so those are labelled as needing a model and counted apart.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ledgermem.cli.commands import cli, metrics_table
from ledgermem.datasets.model import Episode, Turn
from ledgermem.datasets.loaders import load_dataset
from ledgermem.evaluation.judge import ABSTENTION_TYPES, LlmJudge, StringJudge, judge_messages, judge_string
from ledgermem.datasets.loaders.locomo import ADVERSARIAL_GOLD
from ledgermem.evaluation.metrics import answered_offline, compute_metrics, offline_answerable, outcome_from_events
from ledgermem.evaluation.runner import SYSTEMS, RunOptions, memory_point_probes, open_memory, run_episode
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.ledger.store import Ledger
from ledgermem.memory.backends import Message, ScriptedBackend
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.matching import abstains
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore
from ledgermem.projections.tokens import ESTIMATOR

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"
LOCOMO_TYPES = {"locomo_cat1": 2, "locomo_cat2": 3, "locomo_cat3": 3, "locomo_cat4": 4, "locomo_cat5": 2}
LME_TYPES = {"lme_single-session-user": 1, "lme_knowledge-update": 1, "lme_temporal-reasoning": 1,
             "lme_abstention": 1}
LME_ABS_GOLD = "The information provided is not enough. You mentioned your cat Luna but not a hamster."
DISTRACTOR = "self-care is important"
CONFIG = MemoryConfig(tokenizer=ESTIMATOR, personal_data=False)


def _judge(answer: str, probe_type: str = "locomo_cat5", gold: str = ADVERSARIAL_GOLD,
           distractor: str | None = DISTRACTOR) -> tuple[bool, str]:
    verdict = StringJudge().judge(question="What did Caroline realize after her charity race?", gold=gold,
                                  answer=answer, turn=9, probe_id="q", probe_type=probe_type, distractor=distractor)
    return verdict.correct, verdict.method


# -- judging unanswerable questions -----------------------------------------------------


@pytest.mark.parametrize("answer", ["I don't know.", "Not mentioned in the conversation.",
                                    "There is no information about that.", "I do not know",
                                    "我不知道。", "对话里没有提到这件事。", "无法确定", "The conversation never mentioned it."])
def test_an_abstention_is_the_right_answer_to_an_adversarial_question(answer: str) -> None:
    assert _judge(answer) == (True, "abstention")


@pytest.mark.parametrize("answer", [DISTRACTOR, "She realized that Self-Care is important.",
                                    "I don't know, maybe that self-care is important?", "running", ""])
def test_the_distractor_or_any_other_answer_is_wrong(answer: str) -> None:
    assert _judge(answer) == (False, "abstention")


def test_longmemeval_abstention_is_judged_the_same_way() -> None:
    assert _judge("I don't know.", "lme_abstention", LME_ABS_GOLD, None) == (True, "abstention")
    assert _judge("Your hamster is called Luna.", "lme_abstention", LME_ABS_GOLD, None) == (False, "abstention")
    assert ABSTENTION_TYPES == {"locomo_cat5", "lme_abstention"}


def test_the_abstention_rule_is_what_makes_i_dont_know_right() -> None:
    """Must-fail control: judged as an ordinary probe, an abstention never matches the adversarial gold."""
    assert not judge_string(ADVERSARIAL_GOLD, "I don't know.")
    assert _judge("I don't know.", probe_type="locomo_cat4") == (False, "string")
    assert _judge("Not mentioned in the conversation", probe_type="locomo_cat4") == (True, "string")  # gold itself
    assert not abstains("I know: the beach.") and not abstains("unknown slot")  # no loose words


def test_the_llm_judge_is_told_to_expect_an_abstention_and_shown_the_distractor() -> None:
    seen: list[list[Message]] = []

    def grade(messages: Sequence[Message], purpose: str) -> str:
        seen.append(list(messages))
        return "CORRECT"

    verdict = LlmJudge(ScriptedBackend(grade)).judge(question="Q?", gold=ADVERSARIAL_GOLD, answer="I don't know.",
                                                     turn=3, probe_id="q", probe_type="locomo_cat5",
                                                     distractor=DISTRACTOR)
    assert verdict.correct and verdict.method == "llm" and len(verdict.events) == 1
    system, user = seen[0][0]["content"], seen[0][1]["content"]
    assert "declines to answer" in system and "DISTRACTOR" in system
    assert f"EXPECTED: abstention\nGOLD: {ADVERSARIAL_GOLD}\nDISTRACTOR: {DISTRACTOR}\nANSWER: I don't know." in user
    ordinary = judge_messages("Q?", "Lyon", "Lyon", probe_type="locomo_cat4")
    assert "EXPECTED" not in ordinary[1]["content"] and "DISTRACTOR" not in ordinary[0]["content"]


@pytest.mark.parametrize(("answer", "correct"), [("I don't know.", True), (DISTRACTOR, False),
                                                 ("没有提到。", True), ("Lyon", False)])
def test_the_heuristic_llm_judge_follows_the_abstention_contract(answer: str, correct: bool) -> None:
    judge = LlmJudge(HeuristicBackend(tokenizer=ESTIMATOR))
    verdict = judge.judge(question="Q?", gold=ADVERSARIAL_GOLD, answer=answer, turn=1, probe_id="q",
                          probe_type="locomo_cat5", distractor=DISTRACTOR)
    assert (verdict.correct, verdict.method) == (correct, "llm")


def test_an_unreadable_llm_verdict_falls_back_to_the_abstention_rule() -> None:
    judge = LlmJudge(ScriptedBackend(["no idea what you want"]))
    verdict = judge.judge(question="Q?", gold=ADVERSARIAL_GOLD, answer="I don't know.", turn=1, probe_id="q",
                          probe_type="locomo_cat5", distractor=DISTRACTOR)
    assert (verdict.correct, verdict.method) == (True, "abstention (llm verdict unreadable)")


def test_a_run_scores_an_adversarial_probe_by_its_answer(tmp_path: Path) -> None:
    """Through the runner: the same probe, answered with an abstention and with the distractor."""
    ds = load_dataset(str(FIXTURES / "locomo10_sample.json"), question_types={"locomo_cat5"})
    ep = ds.episodes[0]
    verdicts = {}
    for answer in ("I don't know.", f"She realized {DISTRACTOR}."):
        backend = ScriptedBackend(lambda m, purpose, a=answer: a if purpose == "answer" else "NONE")
        with Ledger(":memory:") as ledger, ProjectionStore(":memory:") as projections:
            opts = RunOptions(run_id="t", systems=("three_layer",), memory=CONFIG)
            memory = open_memory(ledger, projections, opts, "three_layer", ep, backend)
            run_episode(memory, "three_layer", ep, lambda what, n: None, memory_points=0)
            [probe] = outcome_from_events("three_layer", ep.episode_id, ledger.read(stream=memory.stream)).probes
        verdicts[answer] = (probe.probe_type, probe.correct, probe.judge, probe.where)
    assert list(verdicts.values()) == [("locomo_cat5", True, "abstention", ""), ("locomo_cat5", False, "abstention", "")]


# -- the needs-a-model label --------------------------------------------------------------


def test_the_offline_backend_needs_a_slot_or_an_abstention() -> None:
    assert not offline_answerable("locomo_cat1", None, offline=True)
    assert not offline_answerable("lme_knowledge-update", None, offline=True)
    assert not offline_answerable("current_fact", None, offline=True)  # a seed probe without fact_key
    assert offline_answerable("current_fact", "city", offline=True)
    assert offline_answerable("locomo_cat5", None, offline=True)
    assert offline_answerable("lme_abstention", None, offline=True)
    assert offline_answerable("locomo_cat1", None, offline=False)  # a model may answer anything


def test_which_runs_answered_offline() -> None:
    assert answered_offline({"backend": "heuristic", "backends": {"answer": {"backend": "heuristic"}}})
    assert answered_offline({"backend": "heuristic"})
    assert not answered_offline({"backend": "heuristic", "backends": {"answer": {"backend": "deepseek"}}})
    assert not answered_offline({"backend": "http", "backends": {"answer": {"backend": "http"}}})
    assert not answered_offline({"backend": "heuristic", "replay_llm": "runs/live/ledger.duckdb"})


# -- the run table ----------------------------------------------------------------------------


def _rendered(metrics: dict[str, dict[str, Any]]) -> str:
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(metrics_table(metrics, "t"))
    return console.export_text()


def test_a_column_that_is_na_for_every_system_is_left_out() -> None:
    metrics = {"a": {"Current_Fact_Acc": None, "Staleness_Rate": None, "Tool_Call_Success_Rate": None, "probes": 3},
               "b": {"Current_Fact_Acc": None, "Staleness_Rate": 0.0, "Tool_Call_Success_Rate": None, "probes": 3}}
    shown = _rendered(metrics)
    assert "Stale" in shown and "Probes" in shown
    assert "CurAcc" not in shown and "ToolOK" not in shown
    metrics["a"]["Current_Fact_Acc"] = 0.5  # control: one value keeps the column
    assert "CurAcc" in _rendered(metrics)


# -- fixture runs through the CLI ---------------------------------------------------------------


def _cli_run(runs: Path, fixture: str, run_id: str) -> str:
    result = CliRunner().invoke(cli, ["run", "--dataset", str(FIXTURES / fixture), "--run-id", run_id, "--force",
                                      "--runs-dir", str(runs)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = CliRunner().invoke(cli, ["report", run_id, "--runs-dir", str(runs)], catch_exceptions=False)
    assert report.exit_code == 0, report.output
    return result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    folder = tmp_path_factory.mktemp("runs")
    printed = {"locomo": _cli_run(folder, "locomo10_sample.json", "locomo"),
               "lme": _cli_run(folder, "longmemeval_s_sample.json", "lme")}
    return folder, printed


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _table_rows(printed: str, title: str) -> list[list[str]]:
    """The body rows of the printed table titled `title` (header first), cells stripped."""
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if title in line)
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("└"):
            break
        if line[:1] in "┃│":
            rows.append([c.strip() for c in re.split(r"[┃│]", line)[1:-1]])
    return rows


CASES = [("locomo", LOCOMO_TYPES, "locomo_cat5", 12), ("lme", LME_TYPES, "lme_abstention", 3)]


@pytest.mark.parametrize(("run_id", "types", "abstention", "needs_model"), CASES)
def test_metrics_carry_an_accuracy_per_category_for_every_system(runs, run_id, types, abstention,
                                                                 needs_model) -> None:
    rows = {r["system"]: r for r in _csv(runs[0] / run_id / "metrics.csv")}
    assert sorted(rows) == sorted(SYSTEMS)
    for system, row in rows.items():
        for t, n in types.items():
            assert int(row[f"N[{t}]"]) == n, (system, t)
            lo, acc, hi = (float(row[f"Acc[{t}]{s}"]) for s in ("_lo", "", "_hi"))
            assert lo <= acc <= hi, (system, t)
        assert float(row[f"Acc[{abstention}]"]) == 1.0  # the heuristic abstains, which is right here
        assert int(row["Needs_Model_N"]) == needs_model
        assert int(row["Answerable_N"]) == int(row["probes"]) - needs_model
        assert float(row["Answerable_Acc"]) == 1.0
        assert row["Evidence_Retained_Rate"] and row["Evidence_In_Prompt_Rate"]


@pytest.mark.parametrize(("run_id", "types", "abstention", "needs_model"), CASES)
def test_probe_predictions_label_what_needs_a_model(runs, run_id, types, abstention, needs_model) -> None:
    probes = _csv(runs[0] / run_id / "probe_predictions.csv")
    assert Counter(p["type"] for p in probes) == Counter({t: n * len(SYSTEMS) for t, n in types.items()})
    for p in probes:
        assert p["offline_answerable"] == ("1" if p["type"] == abstention else "0"), p
        assert p["judge"] == ("abstention" if p["type"] == abstention else "string")
    assert sum(p["offline_answerable"] == "0" for p in probes) == needs_model * len(SYSTEMS)


@pytest.mark.parametrize(("run_id", "types", "abstention", "needs_model"), CASES)
def test_the_printed_table_shows_categories_and_no_empty_column(runs, run_id, types, abstention,
                                                                needs_model) -> None:
    printed = runs[1][run_id]
    main = _table_rows(printed, f"run {run_id} (")
    assert main[0][0] == "system" and {"Answerable", "NeedsModel", "EvKept", "EvReach", "EvPrompt"} <= set(main[0])
    for column in range(1, len(main[0])):
        assert any(row[column] != "n/a" for row in main[1:]), main[0][column]
    assert "CurAcc" not in main[0]  # these datasets have no current-fact probes
    by_category = _table_rows(printed, f"run {run_id}: accuracy by category")
    assert by_category[0] == ["system", *(f"{t} (n={n})" for t, n in sorted(types.items()))]
    assert sorted(r[0] for r in by_category[1:]) == sorted(SYSTEMS)
    at = by_category[0].index(f"{abstention} (n={types[abstention]})")
    assert all(r[at] == "1.00 [1.00,1.00]" for r in by_category[1:])
    assert f"needs a model: {needs_model} of {sum(types.values())} probes per system" in printed


@pytest.mark.parametrize(("run_id", "types", "abstention", "needs_model"), CASES)
def test_the_report_has_a_category_table_per_system(runs, run_id, types, abstention, needs_model) -> None:
    report = (runs[0] / run_id / "report.md").read_text(encoding="utf-8")
    section = report.split("## Accuracy by category", 1)[1].split("\n## ", 1)[0]
    head = "| system | " + " | ".join(f"{t} (n)" for t in sorted(types)) + " |"
    assert head in section
    for system in SYSTEMS:
        line = next(x for x in section.splitlines() if x.startswith(f"| `{system}` | ") and "(n)" not in x)
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1 + sorted(types).index(abstention)] == f"1.000 [1.000, 1.000] ({types[abstention]})"
    assert f"| 1.000 [1.000, 1.000] | {needs_model} |" in section  # answerable accuracy, then needs a model
    main = report.split("## Main comparison", 1)[1].split("\n## ", 1)[0]
    assert "Current_Fact_Acc" not in main  # n/a for every system: left out


def test_a_synthetic_run_gets_no_category_or_label_columns(tmp_path: Path) -> None:
    """Control: built-in probe types with slots are neither categories nor in need of a model."""
    result = CliRunner().invoke(cli, ["run", "--episodes", "2", "--turns", "12", "--systems", "three_layer",
                                      "--run-id", "syn", "--runs-dir", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [row] = _csv(tmp_path / "syn" / "metrics.csv")
    assert not [c for c in row if "[" in c or c.startswith(("Answerable", "Needs_Model"))]
    assert {p["offline_answerable"] for p in _csv(tmp_path / "syn" / "probe_predictions.csv")} == {"1"}
    assert "accuracy by category" not in result.output and "needs a model" not in result.output
    assert "CurAcc" in result.output and "EvKept" not in result.output


def test_metrics_of_a_category_follow_its_probes() -> None:
    """`Acc[<type>]` counts only its own probes: a hand outcome with one right and one wrong answer."""
    from ledgermem.evaluation.metrics import EpisodeOutcome, ProbeOutcome

    def probe(pid: str, kind: str, correct: bool) -> ProbeOutcome:
        return ProbeOutcome(probe_id=pid, probe_type=kind, slot=None, question="q", gold="g", answer="a",
                            correct=correct, tool_calls=0, tool_ok=0, offline_answerable=kind == "locomo_cat5")

    o = EpisodeOutcome("three_layer", "e", probes=[probe("a", "locomo_cat1", True), probe("b", "locomo_cat1", False),
                                                   probe("c", "locomo_cat5", True)])
    row = compute_metrics([o])["three_layer"]
    assert (row["Acc[locomo_cat1]"], row["N[locomo_cat1]"]) == (0.5, 2)
    assert (row["Acc[locomo_cat5]"], row["N[locomo_cat5]"]) == (1.0, 1)
    assert (row["Answerable_Acc"], row["Answerable_N"], row["Needs_Model_N"]) == (1.0, 1, 2)
    assert row["Current_Fact_Acc"] is None and "Acc[current_fact]" not in row


# -- questions in the data's language -----------------------------------------------------------


def _chinese(text: str) -> bool:
    return re.search(r"[\u4e00-\u9fff]", text) is not None


def test_the_language_of_an_episode_without_lang_comes_from_its_dialogue() -> None:
    zh = Episode(episode_id="z", turns=(Turn(user="我的城市是杭州。", agent="好的。"),), facts=(), probes=())
    en = Episode(episode_id="e", turns=(Turn(user="My city is Lyon, 杭州 is nice.", agent="ok"),), facts=(),
                 probes=())
    assert zh.language() == "zh" and en.language() == "en"
    assert replace(en, lang="zh").language() == "zh"  # a declared lang wins


@pytest.mark.parametrize("declared", ["zh", None])
@pytest.mark.parametrize("system", ["three_layer", "memgpt_style"])
def test_memory_point_probes_on_chinese_data_are_asked_in_chinese(declared: str | None, system: str) -> None:
    [zh] = generate_synthetic(n_episodes=1, turns=40, seed=5, langs=("zh",)).episodes
    [en] = generate_synthetic(n_episodes=1, turns=40, seed=5, langs=("en",)).episodes
    asked = {}
    for name, ep in (("zh", replace(zh, lang=declared)), ("en", replace(en, lang=None))):
        opts = RunOptions(run_id="t", systems=(system,), memory=CONFIG)
        with Ledger(":memory:") as ledger, ProjectionStore(":memory:") as projections:
            memory = open_memory(ledger, projections, opts, system, ep, HeuristicBackend(tokenizer=ESTIMATOR))
            run_episode(memory, system, ep, lambda what, n: None, memory_points=2)
            asked[name] = [p.question for p in memory_point_probes(memory, system, ep, 2)]
    assert asked["zh"] and all(_chinese(q) and "Which" not in q for q in asked["zh"]), asked["zh"]
    assert asked["en"] and all(q.startswith("Which ") and not _chinese(q) for q in asked["en"]), asked["en"]
