"""A dated question (LongMemEval's question_date) is asked on its date: the answer prompt says which day it is.

The run goes through real HTTP to a loopback model, so what is checked is
the request the model received, and the ledger ties it to the probe: the
`probe_asked` event records the date and the answer's `llm_called` event
carries the hash of exactly that prompt.
"""

from __future__ import annotations

from pathlib import Path

from ledgermem.datasets.loaders import load_dataset
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.projections.events import LlmCalled, ProbeAsked
from ledgermem.ledger.store import Ledger
from ledgermem.memory.backends import prompt_hash
from ledgermem.memory.prompts import today_line
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR
from tests.llm_server import ScriptedLlmServer, heuristic_script, purpose_of

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "datasets" / "longmemeval_s_sample.json"


def test_the_answer_prompt_of_a_longmemeval_question_carries_its_date(tmp_path: Path) -> None:
    dataset = load_dataset(str(SAMPLE))
    dates = {p.probe_id: p.asked_at for ep in dataset.episodes for p in ep.probes}
    assert dates["e47becba"] == "2023-05-30T23:40:00"
    opts = RunOptions(run_id="lme", runs_dir=tmp_path, systems=("three_layer", "full_context"), backend="http",
                      model="m", memory=MemoryConfig(tokenizer=ESTIMATOR, personal_data=False), env_file=None,
                      memory_points=0)
    with ScriptedLlmServer(heuristic_script()) as server:
        opts = RunOptions(**{**{f: getattr(opts, f) for f in RunOptions.__dataclass_fields__},
                             "base_url": server.base_url})
        run(dataset, opts)
        answers = [r.json["messages"] for r in server.requests if purpose_of(r.json) == "answer"]
    by_hash = {prompt_hash(m): m for m in answers}
    with Ledger(tmp_path / "lme" / "ledger.duckdb", read_only=True) as ledger:
        asked = [r.event for r in ledger.read(event_types=["probe_asked"])]
        called = [r.event for r in ledger.read(event_types=["llm_called"])
                  if isinstance(r.event, LlmCalled) and r.event.purpose == "answer"]
    assert asked and all(isinstance(e, ProbeAsked) and e.asked_at == dates[e.probe_id] for e in asked)
    assert {e.probe_id for e in called} == set(dates)
    for event in called:
        messages = by_hash[event.prompt_hash]  # the prompt the ledger names is one the model received
        user = messages[1]["content"]
        assert today_line(dates[event.probe_id]) in user, event.probe_id
        assert user.index("Today is ") < user.index("QUESTION: ")
    assert any("Today is 2023-05-30 (Tuesday) 23:40.\nQUESTION: " in m[1]["content"] for m in answers)


def test_an_undated_question_gets_no_date_line(tmp_path: Path) -> None:
    """Control: the synthetic data has no question dates, and its prompts say nothing about today."""
    from ledgermem.datasets.synthetic import generate_synthetic

    opts = RunOptions(run_id="syn", runs_dir=tmp_path, systems=("three_layer",), backend="http", model="m",
                      memory=MemoryConfig(tokenizer=ESTIMATOR, personal_data=False), env_file=None)
    with ScriptedLlmServer(heuristic_script()) as server:
        opts = RunOptions(**{**{f: getattr(opts, f) for f in RunOptions.__dataclass_fields__},
                             "base_url": server.base_url})
        run(generate_synthetic(n_episodes=1, turns=8, seed=2), opts)
        answers = [r.json["messages"] for r in server.requests if purpose_of(r.json) == "answer"]
    assert answers and not any("Today is" in m[1]["content"] for m in answers)


def test_the_date_line_reads_iso_dates_in_both_languages() -> None:
    assert today_line("2023-05-30T23:40:00") == "Today is 2023-05-30 (Tuesday) 23:40."
    assert today_line("2023-05-30") == "Today is 2023-05-30 (Tuesday)."
    assert today_line("2023-05-30T00:00:00", "zh") == "当前日期：2023-05-30（星期二）。"
    assert today_line("spring of 2023") == "Today is spring of 2023."
