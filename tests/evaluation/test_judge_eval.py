"""The judges measured on the hand-labelled set: figures computed from the records, traps rejected."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.evaluation.judge import LlmJudge
from ledgermem.evaluation.judge_eval import LabelledSetError, Triple, llm_grader, load_labelled, measure, string_grader
from ledgermem.memory.backends import Completion, Message
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.matching import contains_value, judge_string
from ledgermem.projections.tokens import ESTIMATOR

SUSHI = ("What is my favorite food?", "sushi", "The weather today was sushi.")


@pytest.fixture(scope="module")
def triples() -> list[Triple]:
    return load_labelled()


def _recount(triples: Sequence[Triple], lang: str | None = None) -> tuple[int, int, int, int]:
    """(n, agree, false accepts, false rejects) counted here, independently of `measure`."""
    chosen = [t for t in triples if lang in (None, t.lang)]
    graded = [(t.correct, judge_string(t.gold, t.answer, t.question)) for t in chosen]
    return (len(graded), sum(label == g for label, g in graded), sum(g and not label for label, g in graded),
            sum(label and not g for label, g in graded))


def test_the_shipped_set_is_big_enough_in_both_languages_with_both_labels(triples: list[Triple]) -> None:
    assert len(triples) >= 200
    for lang in ("en", "zh"):
        mine = [t for t in triples if t.lang == lang]
        assert len(mine) >= 80 and {t.correct for t in mine} == {True, False}
    kinds = {t.kind for t in triples}
    assert {"unrelated", "negation", "hedge", "multi", "old", "abstain", "partial", "near_miss"} <= kinds
    assert any((t.question, t.gold, t.answer) == SUSHI and not t.correct for t in triples)


def test_the_string_judges_agreement_is_reported_as_counted(triples: list[Triple]) -> None:
    m = measure(triples, string_grader, judge="string")
    n, agree, fa, fr = _recount(triples)
    assert (m.overall.n, m.overall.agree, m.overall.false_accept, m.overall.false_reject) == (n, agree, fa, fr)
    assert m.overall.accuracy == round(agree / n, 4)
    for lang in ("en", "zh"):
        a = m.by_lang[lang]
        assert (a.n, a.agree, a.false_accept, a.false_reject) == _recount(triples, lang)
    assert len(m.disagreements) == fa + fr
    assert sum(a.n for a in m.by_kind.values()) == n
    assert m.methods == {"string": n}


def test_the_weather_today_was_sushi_is_rejected(triples: list[Triple]) -> None:
    assert not judge_string("sushi", SUSHI[2], SUSHI[0])
    m = measure(triples, string_grader, judge="string")
    trap = next(t for t in triples if (t.question, t.gold, t.answer) == SUSHI)
    assert trap.id not in {d["id"] for d in m.disagreements}


def test_a_containment_judge_is_caught_accepting_the_traps(triples: list[Triple]) -> None:
    """Must-fail control: the old whole-token containment credits nonsense, and the measurement shows it."""
    old = measure(triples, lambda q, g, a: (contains_value(g, a), "contains"), judge="contains")
    new = measure(triples, string_grader, judge="string")
    assert old.overall.false_accept > 20 > new.overall.false_accept
    sushi = next(t for t in triples if (t.question, t.gold, t.answer) == SUSHI)
    assert sushi.id in {d["id"] for d in old.disagreements}
    assert old.overall.accuracy is not None and new.overall.accuracy is not None
    assert old.overall.accuracy < new.overall.accuracy


def test_the_offline_llm_judge_gives_the_string_judges_figures(triples: list[Triple]) -> None:
    judge = LlmJudge(HeuristicBackend(tokenizer=ESTIMATOR))
    llm = measure(triples, llm_grader(judge), judge="llm (heuristic)")
    string = measure(triples, string_grader, judge="string")
    assert llm.overall.to_dict() == string.overall.to_dict()
    assert {k: v.to_dict() for k, v in llm.by_lang.items()} == {k: v.to_dict() for k, v in string.by_lang.items()}
    assert llm.methods == {"llm": len(triples)}


class _Mumbling:
    """A judge backend whose verdicts cannot be read."""

    name, model = "mumbling", "m"

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        return Completion(text="hmm, hard to say", usage={"prompt_tokens": 1, "completion_tokens": 1})


def test_unreadable_llm_verdicts_are_counted_as_string_fallbacks(triples: list[Triple]) -> None:
    m = measure(triples[:10], llm_grader(LlmJudge(_Mumbling())), judge="llm (mumbling)")
    assert m.methods == {"string (llm verdict unreadable)": 10}
    assert m.overall.agree == _recount(triples[:10])[1]


def test_judge_eval_prints_the_measured_figures() -> None:
    result = CliRunner().invoke(cli, ["judge-eval", "--json", "--judge-backend", "heuristic", "--env-file",
                                      "/nonexistent.env"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    triples = load_labelled()
    n, agree, fa, fr = _recount(triples)
    string, llm = doc["judges"]
    assert string["overall"] == {"n": n, "agree": agree, "accuracy": round(agree / n, 4), "false_accept": fa,
                                 "false_reject": fr, "labelled_correct": sum(t.correct for t in triples)}
    assert llm["judge"] == "llm (heuristic)" and llm["overall"] == string["overall"]
    assert "not a model's agreement" in llm["note"]
    table = CliRunner().invoke(cli, ["judge-eval"], catch_exceptions=False).output
    row = next(line for line in table.splitlines() if "│ string" in line and "│ all" in line)
    cells = [c.strip() for c in row.split("│")]
    assert cells[3:8] == [str(n), str(agree), f"{agree / n:.3f}", str(fa), str(fr)]


@pytest.mark.parametrize(("line", "message"), [
    ("not json", "line 2: not a JSON object (Expecting value)"),
    ('{"id": "x", "lang": "fr", "kind": "k", "question": "q", "gold": "g", "answer": "a", "label": "correct"}',
     "line 2: field 'lang' must be one of en, zh, got 'fr'"),
    ('{"id": "x", "lang": "en", "kind": "k", "question": "q", "gold": "g", "answer": "a", "label": "yes"}',
     "line 2: field 'label' must be 'correct' or 'wrong', got 'yes'"),
    ('{"id": "x", "lang": "en", "kind": "k", "question": "q", "gold": "", "answer": "a", "label": "wrong"}',
     "line 2: field 'gold' must be a non-empty string, got ''"),
])
def test_a_bad_record_is_named_by_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    good = '{"id": "a", "lang": "en", "kind": "k", "question": "q", "gold": "g", "answer": "g", "label": "correct"}'
    path = tmp_path / "set.jsonl"
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(LabelledSetError) as exc:
        load_labelled(path)
    assert str(exc.value) == f"{path}, {message}"
    result = CliRunner().invoke(cli, ["judge-eval", "--set", str(path)])
    assert result.exit_code == 1 and message in result.output


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    good = '{"id": "a", "lang": "en", "kind": "k", "question": "q", "gold": "g", "answer": "g", "label": "correct"}'
    path = tmp_path / "set.jsonl"
    path.write_text(good + "\n" + good + "\n", encoding="utf-8")
    with pytest.raises(LabelledSetError, match="id 'a' appears twice"):
        load_labelled(path)
