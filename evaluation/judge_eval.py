"""How often a judge agrees with the hand-labelled (question, answer, gold, label) set.

`load_labelled` reads `judge_set/labelled.jsonl` (or another file of the
same shape) and validates every record; `measure` grades every record with a
judge and counts agreement with the labels: accuracy, false accepts (a
wrong answer graded correct), false rejects (a right answer graded wrong),
overall, per language and per kind, with every disagreement and the rule or
method that decided it. `ledgermem judge-eval` prints it.

The LLM judge is measured through `evaluation.judge.LlmJudge`, its prompt
and its fallback: a verdict it cannot read falls back to the string judge
and is counted as such. With the offline `heuristic` backend the LLM judge
is the string judge behind the judge prompt, so its figures are the string
judge's, not a model's agreement.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ledgermem.evaluation.errors import LabelledSetError
from ledgermem.evaluation.judge import LlmJudge
from ledgermem.memory.matching import judge_answer

__all__ = ["Agreement", "LabelledSetError", "Measured", "Triple", "default_set", "llm_grader", "load_labelled",
           "measure", "string_grader"]

LABELS = {"correct": True, "wrong": False}
LANGS = ("en", "zh")
_FIELDS = ("id", "lang", "kind", "question", "gold", "answer", "label")

#: A grader: (question, gold, answer) -> (graded correct, how it was decided).
Grader = Callable[[str, str, str], tuple[bool, str]]


@dataclass(frozen=True, slots=True)
class Triple:
    id: str
    lang: str
    kind: str
    question: str
    gold: str
    answer: str
    correct: bool  # the label


def default_set() -> Path:
    """The labelled set shipped with the package."""
    return Path(str(resources.files("ledgermem.evaluation") / "judge_set" / "labelled.jsonl"))


def _triple(path: Path, line: int, text: str) -> Triple:
    where = f"{path}, line {line}"
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LabelledSetError(f"{where}: not a JSON object ({exc.msg})") from None
    if not isinstance(record, dict):
        raise LabelledSetError(f"{where}: expected a JSON object, got {type(record).__name__}")
    for name in _FIELDS:
        value = record.get(name)
        if not isinstance(value, str) or (not value.strip() and name != "question"):
            raise LabelledSetError(f"{where}: field {name!r} must be a non-empty string, got {value!r}")
    if record["label"] not in LABELS:
        raise LabelledSetError(f"{where}: field 'label' must be 'correct' or 'wrong', got {record['label']!r}")
    if record["lang"] not in LANGS:
        raise LabelledSetError(f"{where}: field 'lang' must be one of {', '.join(LANGS)}, got {record['lang']!r}")
    return Triple(record["id"], record["lang"], record["kind"], record["question"], record["gold"],
                  record["answer"], LABELS[record["label"]])


def load_labelled(path: Path | None = None) -> list[Triple]:
    """Every record of a labelled set (default: the shipped one), validated; ids must be unique."""
    path = Path(path) if path is not None else default_set()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise LabelledSetError(f"{path}: cannot read the labelled set ({exc.strerror})") from None
    triples = [_triple(path, n, text) for n, text in enumerate(lines, 1) if text.strip()]
    seen: set[str] = set()
    for t in triples:
        if t.id in seen:
            raise LabelledSetError(f"{path}: id {t.id!r} appears twice")
        seen.add(t.id)
    if not triples:
        raise LabelledSetError(f"{path}: no records")
    return triples


@dataclass(slots=True)
class Agreement:
    """Counts of one slice of the set."""

    n: int = 0
    agree: int = 0
    false_accept: int = 0  # labelled wrong, graded correct
    false_reject: int = 0  # labelled correct, graded wrong
    labelled_correct: int = 0

    @property
    def accuracy(self) -> float | None:
        return round(self.agree / self.n, 4) if self.n else None

    def add(self, label: bool, graded: bool) -> None:
        self.n += 1
        self.labelled_correct += label
        self.agree += label == graded
        self.false_accept += graded and not label
        self.false_reject += label and not graded

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "agree": self.agree, "accuracy": self.accuracy, "false_accept": self.false_accept,
                "false_reject": self.false_reject, "labelled_correct": self.labelled_correct}


@dataclass(slots=True)
class Measured:
    """One judge over the whole set."""

    judge: str
    overall: Agreement = field(default_factory=Agreement)
    by_lang: dict[str, Agreement] = field(default_factory=dict)
    by_kind: dict[str, Agreement] = field(default_factory=dict)
    methods: Counter[str] = field(default_factory=Counter)
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "note": self.note, "overall": self.overall.to_dict(),
                "by_lang": {k: v.to_dict() for k, v in self.by_lang.items()},
                "by_kind": {k: v.to_dict() for k, v in sorted(self.by_kind.items())},
                "methods": dict(self.methods), "disagreements": self.disagreements}


def string_grader(question: str, gold: str, answer: str) -> tuple[bool, str]:
    verdict = judge_answer(gold, answer, question)
    return verdict.correct, verdict.rule


def llm_grader(judge: LlmJudge) -> Grader:
    """The LLM judge as a grader; the method says "llm" or that the verdict fell back to the string judge."""

    def grade(question: str, gold: str, answer: str) -> tuple[bool, str]:
        verdict = judge.judge(question=question, gold=gold, answer=answer, turn=0, probe_id="judge-eval")
        return verdict.correct, verdict.method

    return grade


def measure(triples: Iterable[Triple], grader: Grader, *, judge: str, note: str = "") -> Measured:
    """Grade every triple and count agreement with its label."""
    out = Measured(judge, note=note)
    for t in triples:
        graded, how = grader(t.question, t.gold, t.answer)
        method = "llm" if how == "llm" else "string" if judge == "string" else how
        out.methods[method] += 1
        for agreement in (out.overall, out.by_lang.setdefault(t.lang, Agreement()),
                          out.by_kind.setdefault(t.kind, Agreement())):
            agreement.add(t.correct, graded)
        if graded != t.correct:
            out.disagreements.append({"id": t.id, "lang": t.lang, "kind": t.kind, "question": t.question,
                                      "gold": t.gold, "answer": t.answer, "label": t.correct, "graded": graded,
                                      "how": how})
    return out


def rows(measured: Sequence[Measured]) -> list[tuple[str, str, Agreement]]:
    """(judge, slice, counts) for the table: overall first, then each language."""
    return [(m.judge, part, a) for m in measured
            for part, a in (("all", m.overall), *sorted(m.by_lang.items()))]
