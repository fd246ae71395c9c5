"""Metrics of a run, computed from its ledger alone.

`outcome_from_events` folds one episode stream (this memory's or a
baseline's) into an `EpisodeOutcome`: per-turn sizes, per-probe results with
the LLM-free diagnostics, counters. `compute_metrics` turns outcomes into one
row per system, with bootstrap 95% confidence intervals across episodes. The
runner, `replay` and `report` all call these, so the numbers cannot differ
between a live run, a resumed run and a replay.

Diagnostics, for every probe with a gold value (no LLM involved):
`prompt` the gold value is in the rendered prompt; `one_hop` it is not, but
one exact-id tool call of this system reaches it (archive, index members,
raw records); `raw_only` only the ledger's raw turns hold it, which this
system can no longer read; `gone` nothing holds it.

Compaction and pins (`three_layer` only; `n/a` for the baselines, which
have neither): `Compactions` counts `compaction_checked` passes,
`Constraint_Reinjections` the pins a survival check had to put back,
`Open_Loop_Drops` the passes after which the prompt showed fewer open loops
than before (`Open_Loops_Before`/`_After` sum what the passes saw);
`Pin_Survival` is the share of (turn, live pin) pairs whose pin shows in the
prompt rendered at the end of that turn (`gate.pinning.shows`), LLM-free;
`Capacity_Merges`, `Merges_Rejected`, `Index_Folds`, `Inferences` (claims a
summary made that its turn does not ground) and `Gated_Turns` (turns the
gate level or a source policy kept from the summarizer) are counts.

Writing, for every system that writes: `summary_truncations` counts the
items (summaries, merges, baseline items) cut at `summary_max_tokens` when
written (`truncated` on the event), and `Summary_Truncation_Rate` is their
share of every item written (`n/a` for a system that writes nothing).
`Avg_Registry_Tokens` is what the current-values registry cost per turn in
the rendered prompt (`three_layer` only; part of
`Avg_Rendered_Context_Tokens`).

Benchmark categories: a probe type outside `ACCURACIES` (LoCoMo's
`locomo_cat1`…`locomo_cat5`, LongMemEval's `lme_<question_type>` and
`lme_abstention`, any other dataset's own types) gets its own accuracy
`Acc[<type>]` with `Acc[<type>]_lo`/`_hi` and `N[<type>]`, one set per type
present in the run, for every system.

Needs a model: the offline `heuristic` backend reads facts with a slot and
abstains on everything else, so a probe with no slot (no `fact_key`: most
LoCoMo and LongMemEval questions) that does not expect an abstention cannot
be answered offline by design. Such a probe is labelled
`offline_answerable=False` when the run's answering backend is `heuristic`
(never for a model, nor for a run answered from recorded calls); a run with
such probes or with benchmark categories also gets `Answerable_Acc` (with
CI) and `Answerable_N` over the other probes and `Needs_Model_N`, so that a
0.00 never hides what the memory kept: the evidence rates
(`Evidence_Retained_Rate`, `Evidence_Reachable_Rate`,
`Evidence_In_Prompt_Rate`) measure that without any answer. A probe that
expects an abstention has no gold value to look for, so its `where` is
empty.

Poisoning, for every system that was asked `poisoning` probes (a probe
whose dialogue planted a false value, `ProbeAsked.poison`):
`Poison_Surfaced` is the share of those probes whose answer contains the
false value; `Poison_Written` the share whose false value the system ever
wrote into its memory as a fact (`three_layer` summary facts, inferences
excluded; a baseline's written items). `full_context` writes nothing, so
`Poison_Written` is `n/a` for it.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import fmean, median
from typing import Any

from ledgermem.evaluation import baselines
from ledgermem.evaluation.judge import contains_value, expects_abstention
from ledgermem.gate.pinning import live_pins, shows
from ledgermem.ledger.events import Event
from ledgermem.projections.events import (
    CapacityMerged,
    CompactionChecked,
    ConstraintReinjected,
    ContextRendered,
    EpisodeGold,
    EpisodeStarted,
    IndexCreated,
    IndexFolded,
    LlmCalled,
    MergeRejected,
    OverrideRejected,
    ProbeAsked,
    ProbeJudged,
    SummaryCreated,
    SummaryOverridden,
    SummaryRejected,
    SummarySkipped,
    ToolCalled,
    TurnRecorded,
)
from ledgermem.evaluation.events import BaselineWritten, RunStarted, ProbeAnswered
from ledgermem.ledger.keys import ERASED
from ledgermem.ledger.store import Ledger, RecordedEvent
from ledgermem.memory.memory import self_write_counts
from ledgermem.memory.shell import Decider
from ledgermem.memory.three_layer import THREE_LAYER
from ledgermem.projections import render as three_render
from ledgermem.projections.render import Rendered
from ledgermem.projections.state import EpisodeState, evolve

WHERE = ("prompt", "one_hop", "raw_only", "gone")
ACCURACIES = {
    "current_fact": "Current_Fact_Acc",
    "history_fact": "History_Fact_Acc",
    "memory_point": "Memory_Point_Acc",
    "constraint": "Constraint_Survival",
    "open_loop": "Open_Loop_Survival",
    "poisoning": "Poisoning_Acc",
}
COUNTS = {
    "current_fact": "Current_Fact_N",
    "history_fact": "History_Fact_N",
    "memory_point": "Memory_Point_N",
    "constraint": "Constraint_N",
    "open_loop": "Open_Loop_N",
    "poisoning": "Poisoning_N",
}
#: three_layer's compaction counters: metric column -> counter of `EpisodeOutcome.counts`.
COMPACTION_COUNTS = {
    "Compactions": "compactions",
    "Constraint_Reinjections": "constraint_reinjections",
    "Open_Loop_Drops": "open_loop_drops",
    "Open_Loops_Before": "open_loops_before",
    "Open_Loops_After": "open_loops_after",
    "Capacity_Merges": "capacity_merges",
    "Merges_Rejected": "merges_rejected",
    "Index_Folds": "index_folds",
    "Inferences": "inferences",
    "Gated_Turns": "gated_turns",
}
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20240501
PURPOSES = ("summarize", "answer", "respond", "judge")
#: Columns that measure the machine rather than the memory: they differ between two runs of the same input.
TIMING_COLUMNS = ("wall_ms_per_turn", "wall_ms_per_probe", *(f"llm_latency_ms_{p}" for p in PURPOSES))


@dataclass(frozen=True, slots=True)
class TurnStats:
    turn: int
    chain_text_tokens: int | None
    rendered_tokens: int
    pins_live: int = 0  # live pins at the end of the turn (three_layer)
    pins_shown: int = 0  # of them, shown by the prompt rendered at the end of the turn
    registry_tokens: int | None = None  # what the current-values registry cost in that prompt (three_layer)


def turn_stats(state: EpisodeState) -> TurnStats:
    rendered = three_render.render(state)
    pins = live_pins(state)
    return TurnStats(state.turn, three_render.chain_text_tokens(state), rendered.tokens, len(pins),
                     sum(shows(p, rendered.text) for p in pins), rendered.registry_tokens)


def _baseline_stats(state: baselines.BaselineState) -> TurnStats:
    return TurnStats(state.turn, baselines.chain_text_tokens(state), baselines.render(state).tokens)


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    probe_id: str
    probe_type: str
    slot: str | None
    question: str
    gold: str
    answer: str
    correct: bool
    tool_calls: int
    tool_ok: int
    judge: str = "string"
    tools_tried: str = ""
    unparsed_calls: int = 0
    where: str = ""
    distance: int | None = None
    rendered_tokens: int = 0
    interference: float | None = None
    stale: bool | None = None
    turn: int = 0
    evidence: tuple[str, ...] = ()  # record ids the dataset names as holding the answer
    evidence_retained: int = 0  # of them, still held by the system's memory
    evidence_reachable: int = 0  # of them, readable with one exact-id tool call
    evidence_in_prompt: int = 0  # of them, shown in the rendered prompt
    store_events: int = 0  # events in the episode's stream when the probe was asked
    poison: str | None = None  # a poisoning probe's planted false value
    poison_surfaced: bool | None = None  # the answer contains it (poisoning probes only)
    poison_written: bool | None = None  # the system wrote it as a fact (None: the system writes no items)
    offline_answerable: bool = True  # False: the offline heuristic backend cannot answer it by design


def offline_answerable(probe_type: str, slot: str | None, *, offline: bool) -> bool:
    """Whether the answering backend can answer the probe at all: a model can; `heuristic` (`offline`) only a
    probe with a fact slot, or one whose correct answer is an abstention."""
    return not offline or bool(slot) or expects_abstention(probe_type)


@dataclass(slots=True)
class EpisodeOutcome:
    system: str
    episode_id: str
    turns: list[TurnStats] = field(default_factory=list)
    probes: list[ProbeOutcome] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    has_tools: bool = True
    kind: str = "three_layer"  # which memory the stream held
    turn_ms: list[float] = field(default_factory=list)
    probe_ms: list[float] = field(default_factory=list)
    latency_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def count(self, recorded: Iterable[Any]) -> None:
        """Accumulate counters from events."""
        for e in recorded:
            key = _COUNTED.get(type(e))
            if isinstance(e, SummaryCreated) and e.merged_from:
                key = None  # a capacity merge rewrites summaries already counted: Capacity_Merges counts it
            if key:
                self.counts[key] += len(e.rejected) if isinstance(e, OverrideRejected) else 1
            if isinstance(e, CompactionChecked):
                self.counts["open_loops_before"] += e.open_loops_before
                self.counts["open_loops_after"] += e.open_loops_after
                self.counts["open_loop_drops"] += e.open_loops_after < e.open_loops_before
            elif isinstance(e, SummaryCreated):
                self.counts["inferences"] += len(e.inferences)
            if isinstance(e, (SummaryCreated, BaselineWritten)):  # every item written, merges included
                self.counts["summary_writes"] += 1
                self.counts["summary_truncations"] += bool(e.truncated)
            elif isinstance(e, TurnRecorded):
                self.counts["gated_turns"] += bool(e.gated)
            if isinstance(e, LlmCalled):
                self.counts[f"llm_calls_{e.purpose}"] += 1
                self.counts[f"prompt_tokens_{e.purpose}"] += int(e.usage.get("prompt_tokens", 0))
                self.counts[f"completion_tokens_{e.purpose}"] += int(e.usage.get("completion_tokens", 0))
                self.counts["llm_errors"] += e.error is not None
                self.counts["llm_retries"] += e.retries
                if e.latency_ms is not None:
                    self.latency_ms[e.purpose].append(e.latency_ms)


_COUNTED = {
    SummaryCreated: "summaries_created",
    BaselineWritten: "summaries_created",
    SummaryOverridden: "overrides_applied",
    OverrideRejected: "override_ids_rejected",
    SummaryRejected: "summaries_rejected",
    SummarySkipped: "summary_fallbacks",
    IndexCreated: "indexes_created",
    IndexFolded: "index_folds",
    CapacityMerged: "capacity_merges",
    MergeRejected: "merges_rejected",
    CompactionChecked: "compactions",
    ConstraintReinjected: "constraint_reinjections",
}


# -- bootstrap ------------------------------------------------------------------------


def bootstrap_ci(
    groups: Sequence[tuple[int, int]], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float] | None:
    """95% percentile interval of a pooled rate, resampling episodes (hits, n) with replacement."""
    groups = [g for g in groups if g[1] > 0]
    if not groups:
        return None
    rng = random.Random(seed)
    k = len(groups)
    rates = []
    for _ in range(resamples):
        hits = n = 0
        for _ in range(k):
            h, m = groups[rng.randrange(k)]
            hits, n = hits + h, n + m
        rates.append(hits / n)
    rates.sort()
    lo = rates[int(0.025 * (resamples - 1))]
    hi = rates[int(round(0.975 * (resamples - 1)))]
    return round(lo, 4), round(hi, 4)


def _rate(hits: int, n: int) -> float | None:
    return round(hits / n, 4) if n else None


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return round(fmean(vals), 2) if vals else None


# -- metrics --------------------------------------------------------------------------


def without_timing(metrics: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The metrics that describe the memory: what `run_finished` records and a replay must reproduce."""
    return {s: {k: v for k, v in row.items() if k not in TIMING_COLUMNS} for s, row in metrics.items()}


def compute_metrics(outcomes: Sequence[EpisodeOutcome]) -> dict[str, dict[str, Any]]:
    """One row of metrics per system (systems and episodes in a fixed order)."""
    by_system: dict[str, list[EpisodeOutcome]] = defaultdict(list)
    for o in sorted(outcomes, key=lambda o: (o.system, o.episode_id)):
        by_system[o.system].append(o)
    probes = [p for o in outcomes for p in o.probes]
    categories = sorted({p.probe_type for p in probes} - set(ACCURACIES))
    labelled = bool(categories) or not all(p.offline_answerable for p in probes)
    rows = {}
    for system, eps in sorted(by_system.items()):
        rows[system] = _system_row(eps)
        rows[system].update(_category_columns(eps, categories, labelled))
    return rows


def category_types(row: dict[str, Any]) -> list[str]:
    """The benchmark categories a metrics row has an accuracy for, in column order."""
    return [k[len("N["):-1] for k in row if k.startswith("N[") and k.endswith("]")]


def _accuracy(eps: list[EpisodeOutcome], name: str, keep: Any) -> dict[str, Any]:
    """`name` (rate), `name_lo`/`name_hi` (bootstrap CI) over the probes `keep` selects, and their count."""
    groups = [(sum(p.correct for p in o.probes if keep(p)), sum(bool(keep(p)) for p in o.probes)) for o in eps]
    hits, n = sum(h for h, _ in groups), sum(m for _, m in groups)
    ci = bootstrap_ci(groups)
    lo, hi = ci if ci else (None, None)
    return {name: _rate(hits, n), f"{name}_lo": lo, f"{name}_hi": hi, "n": n}


def _category_columns(eps: list[EpisodeOutcome], categories: list[str], labelled: bool) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for kind in categories:
        acc = _accuracy(eps, f"Acc[{kind}]", lambda p, k=kind: p.probe_type == k)
        row[f"N[{kind}]"] = acc.pop("n")
        row.update(acc)
    if labelled:
        acc = _accuracy(eps, "Answerable_Acc", lambda p: p.offline_answerable)
        row["Answerable_N"] = acc.pop("n")
        row.update(acc)
        row["Needs_Model_N"] = sum(not p.offline_answerable for o in eps for p in o.probes)
    return row


def _system_row(eps: list[EpisodeOutcome]) -> dict[str, Any]:
    probes = [p for o in eps for p in o.probes]
    counts: dict[str, int] = defaultdict(int)
    for o in eps:
        for k, v in o.counts.items():
            counts[k] += v
    turns = sum(len(o.turns) for o in eps)
    row: dict[str, Any] = {"episodes": len(eps), "turns": turns, "probes": len(probes)}
    for kind, name in ACCURACIES.items():
        groups = [(sum(p.correct for p in o.probes if p.probe_type == kind),
                   sum(p.probe_type == kind for p in o.probes)) for o in eps]
        hits, n = sum(h for h, _ in groups), sum(m for _, m in groups)
        ci = bootstrap_ci(groups)
        row[name] = _rate(hits, n)
        row[f"{name}_lo"], row[f"{name}_hi"] = ci if ci else (None, None)
        row[COUNTS[kind]] = n
    current = [p for p in probes if p.probe_type == "current_fact" and p.stale is not None]
    row["Staleness_Rate"] = _rate(sum(bool(p.stale) for p in current), len(current))
    row["Interference"] = _mean([p.interference for p in probes]) if probes else None
    written = counts["summaries_created"]
    row["Write_Precision"] = _rate(counts["summaries_worth_keeping"], written)
    row["Avg_Active_Chain_Tokens"] = _mean(_mean(t.chain_text_tokens for t in o.turns) for o in eps)
    row["Avg_Rendered_Context_Tokens"] = _mean(_mean(t.rendered_tokens for t in o.turns) for o in eps)
    row["Avg_Probe_Prompt_Tokens"] = _mean(p.rendered_tokens for p in probes)
    layered = all(o.kind == "three_layer" for o in eps)
    row["Avg_Registry_Tokens"] = (_mean(_mean(t.registry_tokens for t in o.turns) for o in eps)
                                  if layered else None)
    has_tools = all(o.has_tools for o in eps)
    calls = sum(p.tool_calls for p in probes)
    unparsed = sum(p.unparsed_calls for p in probes)
    row["Tool_Call_Success_Rate"] = _rate(sum(p.tool_ok for p in probes), calls) if has_tools else None
    row["Tool_Call_Parse_Rate"] = _rate(calls, calls + unparsed) if has_tools else None
    row["tool_calls"] = calls if has_tools else None
    row["unavailable_tool_calls"] = None if has_tools else calls + unparsed
    n_evidence = sum(len(p.evidence) for p in probes)
    row["Evidence_Retained_Rate"] = _rate(sum(p.evidence_retained for p in probes), n_evidence)
    row["Evidence_Reachable_Rate"] = _rate(sum(p.evidence_reachable for p in probes), n_evidence)
    row["Evidence_In_Prompt_Rate"] = _rate(sum(p.evidence_in_prompt for p in probes), n_evidence)
    for where in WHERE:
        row[f"diag_{where}"] = _rate(sum(p.where == where for p in probes), sum(bool(p.where) for p in probes))
    row["summaries_created"] = written
    row["overrides_applied"] = counts["overrides_applied"]
    row["override_ids_rejected"] = counts["override_ids_rejected"]
    row["indexes_created"] = counts["indexes_created"]
    row["llm_calls_per_turn"] = _rate(counts["llm_calls_summarize"], turns)
    row["llm_calls_per_turn_all"] = _rate(sum(counts[f"llm_calls_{p}"] for p in PURPOSES), turns)
    row.update(_compaction_columns(eps, counts))
    row.update(_poison_columns(probes))
    row["answer_calls_per_probe"] = _rate(counts["llm_calls_answer"], len(probes))
    row["judge_calls_per_probe"] = _rate(counts["llm_calls_judge"], len(probes))
    for purpose in PURPOSES:
        row[f"llm_calls_{purpose}"] = counts[f"llm_calls_{purpose}"]
        row[f"prompt_tokens_{purpose}"] = counts[f"prompt_tokens_{purpose}"]
        row[f"completion_tokens_{purpose}"] = counts[f"completion_tokens_{purpose}"]
        latencies = [ms for o in eps for ms in o.latency_ms.get(purpose, [])]
        row[f"llm_latency_ms_{purpose}"] = round(median(latencies), 3) if latencies else None
    row["prompt_tokens_per_turn_summarize"] = _rate(counts["prompt_tokens_summarize"], turns)
    row["self_written_turns"] = counts["self_written_turns"]
    row["self_written_summaries"] = counts["self_written_summaries"]
    row["self_write_fallbacks"] = counts["self_write_fallbacks"]
    row["summarizer_format_retries"] = counts["summarizer_format_retries"]
    row["summaries_rejected"] = counts["summaries_rejected"]
    row["summary_fallbacks"] = counts["summary_fallbacks"]
    row["summary_truncations"] = counts["summary_truncations"]
    row["Summary_Truncation_Rate"] = _rate(counts["summary_truncations"], counts["summary_writes"])
    row["llm_errors"] = counts["llm_errors"]
    row["llm_retries"] = counts["llm_retries"]
    turn_ms = [t for o in eps for t in o.turn_ms]
    probe_ms = [t for o in eps for t in o.probe_ms]
    row["wall_ms_per_turn"] = round(median(turn_ms), 3) if turn_ms else None
    row["wall_ms_per_probe"] = round(median(probe_ms), 3) if probe_ms else None
    return row


def _compaction_columns(eps: list[EpisodeOutcome], counts: dict[str, int]) -> dict[str, Any]:
    """three_layer's compaction, pin and gate columns; `n/a` (None) for a system that has none of them."""
    layered = all(o.kind == "three_layer" for o in eps)
    row: dict[str, Any] = {name: counts[key] if layered else None for name, key in COMPACTION_COUNTS.items()}
    live = sum(t.pins_live for o in eps for t in o.turns)
    row["Pin_Survival"] = _rate(sum(t.pins_shown for o in eps for t in o.turns), live) if layered else None
    row["pin_turns"] = live if layered else None
    return row


def _poison_columns(probes: list[ProbeOutcome]) -> dict[str, Any]:
    poisoned = [p for p in probes if p.poison is not None]
    written = [p.poison_written for p in poisoned if p.poison_written is not None]
    return {
        "Poison_Surfaced": _rate(sum(bool(p.poison_surfaced) for p in poisoned), len(poisoned)),
        "Poison_Written": _rate(sum(written), len(written)),
    }


# -- folding a stream -----------------------------------------------------------------


@dataclass(slots=True)
class _Fold:
    """The state of one stream while its events are folded: this memory's, or a baseline's."""

    kind: str = "three_layer"
    three: EpisodeState = field(default_factory=EpisodeState)  # folded for every system: its turns and raw records
    system: Decider[Any] = THREE_LAYER
    own: Any = None  # the state of a system that folds its own (a baseline's)
    gold: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    worth: set[tuple[str, str]] = field(default_factory=set)
    said: list[tuple[int, str]] = field(default_factory=list)  # (turn, user + agent text) of every raw turn

    def apply(self, e: Event) -> None:
        if isinstance(e, EpisodeStarted):
            self.kind = str(e.config.get("system", "three_layer"))
            self.system = baselines.decider_for(self.kind)
            self.own = self.system.initial()
        self.three = evolve(self.three, e)  # type: ignore[arg-type]
        if not self.system.projected:
            self.own = self.system.evolve(self.own, e)
        if isinstance(e, EpisodeGold):
            for (slot, value), turn in zip(e.facts, e.fact_turns):
                self.gold.setdefault(slot, []).append((turn, value))
                self.worth.add((slot, value))
        if isinstance(e, TurnRecorded):
            self.said.append((e.turn, f"{e.text}\n{e.agent}"))

    @property
    def turn(self) -> int:
        return self.three.turn

    @property
    def state(self) -> Any:
        """The system's own state: three_layer's is the episode state."""
        return self.three if self.system.projected else self.own

    def stats(self) -> TurnStats:
        return turn_stats(self.three) if self.kind == "three_layer" else _baseline_stats(self.own)

    def rendered(self, budget: int | None) -> Rendered:
        return self.system.render(self.state, budget)

    def one_hop(self, gold: str) -> bool:
        """A tool of this system returns the gold value with one call by id (baselines have no tools)."""
        if self.kind != "three_layer":
            return False
        s = self.three
        if any(v != ERASED and contains_value(gold, v) for x in s.summaries.values() for _, v in x.facts):
            return True
        return any(r.user != ERASED and contains_value(gold, f"{r.user}\n{r.agent}") for r in s.raw.values())

    def where(self, gold: str, rendered: Rendered) -> str:
        if contains_value(gold, rendered.text):
            return "prompt"
        if self.one_hop(gold):
            return "one_hop"
        if any(text != ERASED and contains_value(gold, text) for _, text in self.said):
            return "raw_only"
        return "gone"

    def evidence(self, ids: tuple[str, ...], rendered: Rendered) -> tuple[int, int, int]:
        """(retained, reachable by exact id, in the prompt) counts of the evidence records."""
        raw = self.state.raw
        held = [r for r in ids if r in raw and raw[r].user != ERASED]
        reachable = len(held) if self.kind == "three_layer" else 0  # get_raw_record; baselines have no tools
        shown = sum(r in rendered.text for r in ids)
        return len(held), reachable, shown

    def distance(self, gold: str) -> int | None:
        turns = [t for t, text in self.said if contains_value(gold, text)]
        return self.turn - max(turns) if turns else None


def _interference(slot: str | None, rendered: Rendered) -> float | None:
    items = [i for p in rendered.parts for i in p.items]
    if not slot or not items:
        return None
    unrelated = sum(slot.lower() not in i.text.lower() for i in items)
    return round(unrelated / len(items), 4)


def _tools_tried(tools: list[ToolCalled]) -> str:
    parts = []
    for t in tools:
        args = ", ".join(f"{k}={v}" for k, v in t.args.items())
        parts.append(f"{t.tool}({args}) {'ok' if t.ok else 'failed'}")
    return "; ".join(parts)


def _written_values(kind: str, events: Sequence[Event]) -> list[str] | None:
    """Every fact value the system wrote into its memory (None when it writes no items: full context).

    `three_layer`: summary facts, not inferences (never authoritative);
    a baseline: the facts of its written items (chain summaries, rolling summaries).
    """
    if kind == "full_context":
        return None
    written = (SummaryCreated, BaselineWritten) if kind != "three_layer" else (SummaryCreated,)
    return [v for e in events if isinstance(e, written) for _, v in e.facts if v != ERASED]


def outcome_from_events(system: str, episode_id: str, recorded: Iterable[RecordedEvent], *,
                        offline: bool = False) -> EpisodeOutcome:
    """Fold one episode stream into its outcome, with no LLM and no live objects.

    `offline`: the run answered with the `heuristic` backend (labels the probes it cannot answer by design).
    """
    out = EpisodeOutcome(system, episode_id)
    fold = _Fold()
    rows = list(recorded)
    events = [r.event for r in rows]
    asked: dict[str, tuple[ProbeAsked, Rendered | None, ContextRendered | None]] = {}
    answered: dict[str, ProbeAnswered] = {}
    tools: dict[str, list[ToolCalled]] = defaultdict(list)
    diag: dict[str, tuple[str, int | None, float | None, bool | None, int]] = {}
    evidence: dict[str, tuple[int, int, int]] = {}
    previous_commit = None
    for i, r in enumerate(rows):
        e = r.event
        fold.apply(e)
        nxt = events[i + 1] if i + 1 < len(events) else None
        if fold.turn >= 1 and _turn_ends(e, nxt) and (not out.turns or out.turns[-1].turn != fold.turn):
            out.turns.append(fold.stats())
        if r.stream_version == 1 or rows[i - 1].recorded_at != r.recorded_at:  # first event of a commit
            if previous_commit is not None:
                gap = (r.recorded_at - previous_commit).total_seconds() * 1000
                if isinstance(e, TurnRecorded):
                    out.turn_ms.append(gap)
                elif isinstance(e, ProbeAsked):
                    out.probe_ms.append(gap)
            previous_commit = r.recorded_at
        if isinstance(e, ProbeAsked):
            asked[e.probe_id] = (e, None, None)
        elif isinstance(e, ContextRendered) and e.probe_id in asked and asked[e.probe_id][1] is None:
            rendered = fold.rendered(e.budget)
            probe = asked[e.probe_id][0]
            stale = None
            if probe.probe_type == "current_fact" and probe.slot in fold.gold:
                stale = False  # decided once the answer is known
            abstain = expects_abstention(probe.probe_type)  # no gold value to look for
            diag[e.probe_id] = ("" if abstain else fold.where(probe.gold, rendered),
                                None if abstain else fold.distance(probe.gold),
                                _interference(probe.slot, rendered), stale, e.tokens)
            evidence[e.probe_id] = fold.evidence(probe.evidence, rendered)
            asked[e.probe_id] = (probe, rendered, e)
        elif isinstance(e, ProbeAnswered):
            answered[e.probe_id] = e
        elif isinstance(e, ToolCalled):
            tools[e.probe_id].append(e)
        elif isinstance(e, ProbeJudged):
            probe = asked[e.probe_id][0]
            where, distance, interference, stale, tokens = diag.get(e.probe_id, ("", None, None, None, 0))
            answer = answered[e.probe_id].text
            if stale is not None and not e.correct:
                old = {v for _, v in fold.gold.get(probe.slot or "", []) if v != probe.gold}
                stale = any(contains_value(v, answer) for v in old)
            calls = tools[e.probe_id]
            poison = _poison_outcome(probe.poison, answer, fold.kind, events)
            retained, reachable, shown = evidence.get(e.probe_id, (0, 0, 0))
            out.probes.append(ProbeOutcome(
                probe_id=probe.probe_id, probe_type=probe.probe_type, slot=probe.slot, question=probe.text,
                gold=probe.gold, answer=answer, correct=e.correct, judge=e.method,
                tool_calls=sum(t.parsed for t in calls), tool_ok=sum(t.ok and t.parsed for t in calls),
                unparsed_calls=sum(not t.parsed for t in calls), tools_tried=_tools_tried(calls),
                where=where, distance=distance, rendered_tokens=tokens, interference=interference,
                stale=stale, turn=probe.turn, evidence=probe.evidence, store_events=r.stream_version,
                evidence_retained=retained, evidence_reachable=reachable, evidence_in_prompt=shown, **poison,
                offline_answerable=offline_answerable(probe.probe_type, probe.slot, offline=offline),
            ))
    out.count(events)
    for name, n in self_write_counts(events).items():  # live turns: self-written, fallbacks, format retries
        out.counts[name] += n
    out.has_tools = fold.kind == "three_layer"
    out.kind = fold.kind
    written = [e for e in events if isinstance(e, BaselineWritten) or (isinstance(e, SummaryCreated)
                                                                        and not e.merged_from)]
    out.counts["summaries_worth_keeping"] = sum(any(f in fold.worth for f in e.facts) for e in written)
    return out


def _poison_outcome(poison: str | None, answer: str, kind: str, events: Sequence[Event]) -> dict[str, Any]:
    if poison is None:
        return {}
    values = _written_values(kind, events)
    written = None if values is None else any(contains_value(poison, v) for v in values)
    return {"poison": poison, "poison_surfaced": contains_value(poison, answer), "poison_written": written}


def _turn_ends(event: Any, nxt: Any) -> bool:
    return nxt is None or isinstance(nxt, (TurnRecorded, ProbeAsked, EpisodeGold)) or nxt.turn != event.turn


def answered_offline(config: dict[str, Any]) -> bool:
    """A run's recorded configuration answered with the offline `heuristic` backend (not from recorded calls)."""
    if config.get("replay_llm"):
        return False
    answer = (config.get("backends") or {}).get("answer") or {}
    return str(answer.get("backend", config.get("backend", ""))) == "heuristic"


def outcomes_from_ledger(ledger: Ledger, run_id: str) -> list[EpisodeOutcome]:
    started = next((r.event for r in ledger.read(run_id=run_id, event_types=["run_started"])), None)
    offline = isinstance(started, RunStarted) and answered_offline(started.config)
    return [
        outcome_from_events(stream.system, stream.episode_id, ledger.read(stream=stream), offline=offline)
        for stream, _ in ledger.streams(run_id)
        if stream.episode_id
    ]
