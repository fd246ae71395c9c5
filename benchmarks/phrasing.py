"""How well the fact grammar reads phrasing it was and was not developed on.

`python -m benchmarks.phrasing [--episodes N] [--turns N] [--json PATH] [--markdown PATH]`

For each language and each part of the phrasing corpus (``datasets/phrasing``): the development
half, the extra development phrasing by other writers, and the held-out half:
the detector's recall and precision over every statement, update and
distractor frame filled with every slot of that half, the question parser's
accuracy on every question frame, and the end-to-end accuracy of
``three_layer`` (and ``full_context`` beside it) on synthetic episodes whose
user turns and questions are drawn from that half, with the offline
``heuristic`` backend. The held-out half was written before the grammar and
is never used to tune it: its row is the measure of generality; the
development half's row only says the rules fit what they were written on.

A full run writes ``benchmarks/PHRASING.md`` and ``benchmarks/phrasing.json``.
It measures quality, not speed: nothing here is timed.

Example:
  python -m benchmarks.phrasing
  python -m benchmarks.phrasing --episodes 4 --turns 24 --markdown /tmp/phrasing.md
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledgermem.datasets.phrasing import PARTS
from ledgermem.evaluation.phrasing import measure_detector, measure_questions
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.datasets.synthetic import generate_synthetic

HERE = Path(__file__).resolve().parent
TARGETS = {"recall": 0.95, "precision": 0.98, "current": 0.95, "history": 0.95}


@dataclass(frozen=True, slots=True)
class Row:
    lang: str
    half: str
    recall: float
    precision: float
    expected: int
    distractors: int
    distractor_hits: int
    questions: float
    asked: int
    current: dict[str, float | None]
    history: dict[str, float | None]
    probes: int

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


def _end_to_end(lang: str, half: str, *, episodes: int, turns: int, seed: int, scratch: Path
                ) -> tuple[dict[str, float | None], dict[str, float | None], int]:
    data = generate_synthetic(n_episodes=episodes, turns=turns, seed=seed, langs=(lang,), phrasing=half)
    opts = RunOptions(run_id=f"phrasing-{lang}-{half}", runs_dir=scratch, systems=("three_layer", "full_context"),
                      force=True, env_file=None)
    result = run(data, opts)
    current = {s: m.get("Current_Fact_Acc") for s, m in result.metrics.items()}
    history = {s: m.get("History_Fact_Acc") for s, m in result.metrics.items()}
    probes = sum(len(e.probes) for e in data.episodes)
    return current, history, probes


def measure(*, episodes: int, turns: int, seed: int) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="ledgermem-phrasing-") as scratch:
        for half in PARTS:
            for lang in ("en", "zh"):
                print(f"measuring {lang} {half} ...", file=sys.stderr)
                d = measure_detector(lang, half)
                q = measure_questions(lang, half)
                current, history, probes = _end_to_end(lang, half, episodes=episodes, turns=turns, seed=seed,
                                                       scratch=Path(scratch))
                rows.append(Row(lang, half, d.recall, d.precision, d.expected, d.distractors, d.distractor_hits,
                                q.accuracy, q.asked, current, history, probes))
    return rows


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def table(rows: list[Row]) -> str:
    lines = [
        "| half | lang | detector recall | detector precision | distractors taken as facts | questions read "
        "| three_layer current | three_layer history | full_context current | full_context history |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.half} | {r.lang} | {_f(r.recall)} ({r.expected}) | {_f(r.precision)} "
            f"| {r.distractor_hits} of {r.distractors} | {_f(r.questions)} ({r.asked}) "
            f"| {_f(r.current.get('three_layer'))} | {_f(r.history.get('three_layer'))} "
            f"| {_f(r.current.get('full_context'))} | {_f(r.history.get('full_context'))} |"
        )
    return "\n".join(lines)


def verdicts(rows: list[Row]) -> list[str]:
    """Each held-out target, met or missed, with the figure."""
    out = []
    for r in rows:
        if r.half != "heldout":
            continue
        figures = {"recall": r.recall, "precision": r.precision, "current": r.current.get("three_layer"),
                   "history": r.history.get("three_layer")}
        for name, target in TARGETS.items():
            value = figures[name]
            met = value is not None and value >= target
            out.append(f"{r.lang} {name}: {_f(value)} (target ≥ {target}) {'met' if met else 'MISSED'}")
    return out


def markdown(rows: list[Row], *, command: str, episodes: int, turns: int, seed: int) -> str:
    return "\n".join([
        "# Phrasing: the fact grammar on text it was and was not written on",
        "",
        f"Produced by `{command}` ({episodes} synthetic episodes of {turns} turns per language and half, "
        f"seed {seed}, backend `heuristic`, string judge). The held-out half of `datasets/phrasing/` was "
        "written before the fact grammar and the question parser and never used to tune them; the development "
        "half (`dev`) and the extra development phrasing other writers added (`extra`: casual, formal, varied, "
        "regional, questions and distractors, phone typing and buried facts, non-native and elderly registers) are "
        "what they were developed against.",
        "",
        "Detector figures count every statement and update frame filled with every slot of the half (two "
        "values each); a distractor frame counts as taken when the detector returns any fact for it. "
        "Questions read: the parser found the slot, what is asked (current, previous, before a value, "
        "original) and the named value, given only the slot's current value as a prompt shows it.",
        "",
        table(rows),
        "",
        "Targets on the held-out half:",
        "",
        *[f"- {v}" for v in verdicts(rows)],
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.phrasing", description=__doc__.split("\n\n")[1],
                                epilog="Example: python -m benchmarks.phrasing --episodes 4 --turns 24")
    p.add_argument("--episodes", type=int, default=8)
    p.add_argument("--turns", type=int, default=40)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--markdown", type=Path, default=None)
    args = p.parse_args(argv)
    if args.episodes < 1 or args.turns < 6:
        p.error("--episodes must be >= 1 and --turns >= 6")
    rows = measure(episodes=args.episodes, turns=args.turns, seed=args.seed)
    default = args.json is None and args.markdown is None and (args.episodes, args.turns, args.seed) == (8, 40, 5)
    command = "python -m benchmarks.phrasing" + ("" if default else
                                                 f" --episodes {args.episodes} --turns {args.turns} --seed {args.seed}")
    md = markdown(rows, command=command, episodes=args.episodes, turns=args.turns, seed=args.seed)
    print(table(rows))
    print("\n".join(verdicts(rows)))
    md_path = args.markdown or (HERE / "PHRASING.md" if default else None)
    json_path = args.json or (HERE / "phrasing.json" if default else None)
    if md_path is not None:
        md_path.write_text(md, encoding="utf-8")
    if json_path is not None:
        json_path.write_text(json.dumps([r.as_dict() for r in rows], indent=2, ensure_ascii=False) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
