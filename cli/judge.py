"""`ledgermem judge-eval`: the judges' agreement with the hand-labelled set."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from ledgermem.cli.main import cli, fails_cleanly, out
from ledgermem.cli.options import json_option
from ledgermem.cli.output import emit
from ledgermem.evaluation.judge import LlmJudge
from ledgermem.evaluation.judge_eval import Measured, llm_grader, load_labelled, measure, rows, string_grader
from ledgermem.evaluation.runner import RunOptions, build_backends
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import default_tokenizer

HEURISTIC_NOTE = ("the heuristic judge backend is the string judge behind the judge prompt: these are the string "
                  "judge's figures, not a model's agreement")


def _table(measured: list[Measured]) -> Table:
    table = Table(title="judge agreement with the labelled set")
    for name, justify in (("judge", "left"), ("slice", "left"), ("n", "right"), ("agree", "right"),
                          ("accuracy", "right"), ("false accept", "right"), ("false reject", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for judge, part, a in rows(measured):
        table.add_row(judge, part, str(a.n), str(a.agree), f"{a.accuracy:.3f}" if a.accuracy is not None else "n/a",
                      str(a.false_accept), str(a.false_reject))
    return table


@cli.command("judge-eval")
@click.option("--set", "set_path", default=None, type=click.Path(dir_okay=False),
              help="A labelled set (JSONL: id, lang, kind, question, gold, answer, label); default: the "
                   "shipped one.")
@click.option("--judge-backend", default=None,
              help="Also measure the LLM judge on this backend: heuristic (offline; string match underneath) "
                   "or an OpenAI-compatible preset: openai, deepseek, vllm, llamacpp, ollama, http.")
@click.option("--judge-model", default=None, help="Model of the LLM judge (else LEDGERMEM_MODEL, .env, preset).")
@click.option("--judge-base-url", default=None, help="Base URL of an OpenAI-compatible endpoint (…/v1).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds per HTTP request, above 0 (default 60).")
@click.option("--max-retries", type=click.IntRange(min=0), default=None,
              help="Retries on 429/5xx/disconnects (default 4; 0: none).")
@click.option("--env-file", default=".env", show_default=True, type=click.Path(dir_okay=False),
              help="Read backend settings (and API keys) from this file when not in the environment.")
@click.option("--show-disagreements", is_flag=True, help="List every record a judge grades against its label.")
@json_option("Every figure, per language and kind, as JSON.")
@fails_cleanly
def judge_eval_cmd(set_path: str | None, judge_backend: str | None, judge_model: str | None,
                   judge_base_url: str | None, timeout: float | None, max_retries: int | None, env_file: str,
                   show_disagreements: bool, as_json: bool) -> None:
    """Grade the labelled (question, answer, gold) set with the string judge, and with the LLM judge when a
    judge backend is given; report accuracy against the labels, false accepts and false rejects, overall
    and per language.

    \b
    Example:
      ledgermem judge-eval
      ledgermem judge-eval --judge-backend deepseek --show-disagreements
    """
    triples = load_labelled(Path(set_path) if set_path else None)
    measured = [measure(triples, string_grader, judge="string")]
    if judge_backend is not None:
        opts = RunOptions(run_id="judge-eval", runs_dir=Path("."), backend="heuristic", judge="llm",
                          judge_backend=judge_backend, judge_model=judge_model, judge_base_url=judge_base_url,
                          memory=MemoryConfig(), timeout=timeout, max_retries=max_retries,
                          env_file=Path(env_file))
        backends = build_backends(opts, default_tokenizer())
        note = HEURISTIC_NOTE if judge_backend == "heuristic" else ""
        measured.append(measure(triples, llm_grader(LlmJudge(backends.judge)), judge=f"llm ({judge_backend})",
                                note=note))
    if as_json:
        doc = {"set": set_path or "shipped", "records": len(triples), "judges": [m.to_dict() for m in measured]}
        emit(doc, as_json=True)
        return
    out.print(_table(measured))
    for m in measured:
        fallbacks = sum(n for how, n in m.methods.items() if how not in ("llm", "string"))
        if fallbacks:
            out.print(f"{m.judge}: {fallbacks} verdicts unreadable, graded by the string judge instead")
        if m.note:
            out.print(f"{m.judge}: {m.note}")
        if show_disagreements:
            for d in m.disagreements:
                kind = "false accept" if d["graded"] else "false reject"
                out.print(f"{m.judge} {kind} {d['id']} [{d['kind']}] gold {d['gold']!r} answer {d['answer']!r}: "
                          f"{d['how']}", markup=False)
