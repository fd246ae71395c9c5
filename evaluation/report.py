"""The report of a finished run: `report.md` and three PNG plots beside it.

`write_report` reads only the CSV files derived from the run's ledger, so a
report can be rewritten at any time without the ledger or an LLM. An empty
cell is a missing value and prints as `n/a`.

    metrics.csv            ─┐   (main comparison, verdicts, compaction and pins, poisoning, diagnostics, errors)
    probe_predictions.csv  ─┼─> report.md
    predictions.csv        ─┘   accuracy_vs_tokens.png        accuracy per kind against rendered tokens, with CIs
                                reachability_by_distance.png  gold value in the prompt / one hop away, by turn distance
                                per_episode.png               accuracy of every episode, per system

Errors (all `EvaluationError`):

    ReportInputError            a cell that cannot be read (names file, line, column, value)
    ├── MissingRunFile (also FileNotFoundError)   a CSV file is not in the run folder
    └── MissingColumn (also ValueError)           a CSV file lacks a column the report needs
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import TypeVar

from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import offset_copy

from ledgermem.evaluation.errors import MissingColumn, MissingRunFile, ReportInputError
from ledgermem.evaluation.verdicts import DEFAULT_THRESHOLDS, Threshold, shown, verdicts, worst
from ledgermem.evaluation.outputs import SLOT_ALIAS_COLUMNS, SLOT_ALIASES

T = TypeVar("T")

METRICS, PROBES, EPISODES, TIMING = "metrics.csv", "probe_predictions.csv", "predictions.csv", "timing.csv"
#: Machine time: in timing.csv (metrics.csv of runs derived before it existed held them).
WALL = ("wall_ms_per_turn",)
REPORT = "report.md"
PLOTS = {
    "accuracy_vs_tokens.png": "Accuracy against rendered context tokens",
    "reachability_by_distance.png": "Where the gold value was, by turn distance",
    "per_episode.png": "Accuracy per episode",
}
#: Accuracy columns of the main table, with the marker each gets in the accuracy plot.
ACCURACIES = {
    "Current_Fact_Acc": "o",
    "History_Fact_Acc": "s",
    "Memory_Point_Acc": "^",
    "Constraint_Survival": "D",
    "Open_Loop_Survival": "v",
}
#: The other columns of the main table and how each is printed.
PLAIN = {
    "Staleness_Rate": "{:.3f}",
    "Avg_Rendered_Context_Tokens": "{:.1f}",
    "Avg_Active_Chain_Tokens": "{:.1f}",
    "Tool_Call_Success_Rate": "{:.3f}",
    "Tool_Call_Parse_Rate": "{:.3f}",
    "llm_calls_per_turn": "{:.2f}",
    "wall_ms_per_turn": "{:.1f}",
}
#: Columns of the "Compaction and pins" section (three_layer's; n/a for the baselines). Optional in
#: metrics.csv, so a report of a run derived before they existed still reads.
COMPACTION = ("Compactions", "Constraint_Reinjections", "Pin_Survival", "Open_Loops_Before", "Open_Loops_After",
              "Open_Loop_Drops", "indexes_created", "Index_Folds", "Capacity_Merges", "Merges_Rejected",
              "Inferences", "Gated_Turns")
POISONING = ("Poisoning_N", "Poisoning_Acc", "Poisoning_Acc_lo", "Poisoning_Acc_hi", "Poison_Surfaced",
             "Poison_Written")
#: Columns of the "Accuracy by category" section: written for runs with benchmark categories or probes the
#: offline backend cannot answer, with one `Acc[<type>]` (`_lo`, `_hi`) and `N[<type>]` per category.
LABELLED = ("Answerable_Acc", "Answerable_Acc_lo", "Answerable_Acc_hi", "Answerable_N", "Needs_Model_N",
            "Evidence_Retained_Rate", "Evidence_Reachable_Rate", "Evidence_In_Prompt_Rate")
CATEGORY = re.compile(r"(?:Acc|N)\[[^\]]+\](?:_lo|_hi)?")
OPTIONAL = (*COMPACTION, *POISONING, *LABELLED)
TOKENS = "Avg_Rendered_Context_Tokens"
WHERE = ("prompt", "one_hop", "raw_only", "gone")
RETRIEVAL, LOST, UNKNOWN = "retrieval-path failure", "information lost", "where unknown"
VERDICT = {"prompt": RETRIEVAL, "one_hop": RETRIEVAL, "raw_only": LOST, "gone": LOST}
KNOWN_TYPES = ("current_fact", "history_fact", "memory_point", "constraint", "open_loop", "poisoning")
#: Turn-distance buckets: (largest distance in the bucket, label); None = no upper end.
BUCKETS: tuple[tuple[int | None, str], ...] = (
    (10, "0–10"), (25, "11–25"), (50, "26–50"), (100, "51–100"), (200, "101–200"), (None, ">200"),
)
MAX_ERRORS = 50  # listed wrong answers per system; the rest are counted
MAX_CELL = 120  # characters of free text per table cell

REQUIRED = {
    METRICS: ("system", *(f"{c}{s}" for c in ACCURACIES for s in ("", "_lo", "_hi")),
              *(c for c in PLAIN if c not in WALL)),
    TIMING: ("system", *WALL),
    PROBES: ("system", "episode_id", "probe_id", "type", "question", "gold", "answer", "correct",
             "tools_tried", "where", "distance"),
    EPISODES: ("system", "episode_id", "accuracy"),
}


@dataclass(frozen=True, slots=True)
class Probe:
    """One row of `probe_predictions.csv`, typed."""

    system: str
    episode_id: str
    probe_id: str
    type: str
    question: str
    gold: str
    answer: str
    correct: bool
    tools_tried: str
    where: str | None
    distance: int | None
    store_events: int | None = None  # events in the episode's stream when it was asked (optional column)

    @property
    def verdict(self) -> str:
        return VERDICT.get(self.where or "", UNKNOWN)


@dataclass(frozen=True, slots=True)
class Episode:
    """One row of `predictions.csv`: one system on one episode."""

    system: str
    episode_id: str
    accuracy: float | None


Metrics = dict[str, dict[str, float | None]]


def write_report(run_dir: Path, thresholds: Sequence[Threshold] = DEFAULT_THRESHOLDS,
                 measured: Metrics | None = None) -> list[Path]:
    """Write `report.md` and its PNG plots into `run_dir`; return their paths, the Markdown first.
    `measured` adds per-system values not in metrics.csv (`evaluation.verdicts.extraction_recall`)."""
    run_dir = Path(run_dir)
    metrics = read_metrics(run_dir, extra=[t.metric for t in thresholds])
    for system, values in (measured or {}).items():
        metrics.setdefault(system, {}).update(values)
    probes = read_probes(run_dir)
    episodes = read_episodes(run_dir)
    systems = list(dict.fromkeys([*metrics, *(p.system for p in probes), *(e.system for e in episodes)]))
    colours = {s: colormaps["tab10"](i % 10) for i, s in enumerate(systems)}
    md = run_dir / REPORT
    md.write_text(render_markdown(run_dir.name, systems, metrics, probes, thresholds, read_slot_aliases(run_dir)),
                  encoding="utf-8")
    names = list(PLOTS)
    _save(plot_accuracy_vs_tokens(metrics, systems, colours), run_dir / names[0])
    _save(plot_reachability(probes, systems, colours), run_dir / names[1])
    _save(plot_per_episode(episodes, systems, colours), run_dir / names[2])
    return [md, *(run_dir / n for n in names)]


# ── reading ──────────────────────────────────────────────────────────────────


class _Row:
    """The cells of one CSV row; conversion errors name the file, line and column."""

    def __init__(self, file: str, line: int, cells: dict[str | None, str | None]) -> None:
        self.file, self.line, self.cells = file, line, cells

    def text(self, column: str) -> str:
        return (self.cells.get(column) or "").strip()

    def value(self, column: str, convert: Callable[[str], T]) -> T | None:
        raw = self.text(column)
        if not raw:
            return None
        try:
            return convert(raw)
        except ValueError as exc:
            raise ReportInputError(
                f"{self.file} line {self.line}, column {column!r}: cannot read {raw!r} ({exc}). "
                "Rewrite the CSV files from the run's ledger."
            ) from None


def _rows(run_dir: Path, name: str) -> Iterator[_Row]:
    path = run_dir / name
    if not path.is_file():
        raise MissingRunFile(
            f"{name} is missing from the run folder {run_dir}; the report reads {', '.join(REQUIRED)}. "
            "Derive the CSV files from the run's ledger first."
        )
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in REQUIRED[name] if c not in (reader.fieldnames or ())]
        if missing:
            raise MissingColumn(
                f"{path}: required column {missing[0]!r} is missing"
                f"{f' (also {missing[1:]})' if missing[1:] else ''}; the file has {reader.fieldnames}. "
                "Derive the CSV files again with this version."
            )
        for cells in reader:
            yield _Row(name, reader.line_num, cells)


def read_metrics(run_dir: Path, extra: Iterable[str] = ()) -> Metrics:
    """`metrics.csv` as {system: {column: value or None}}, numeric columns only (optional ones and `extra` when
    present, and every benchmark category's, in file order), with the wall times of `timing.csv` when it is there."""
    numeric = list(dict.fromkeys(c for c in (*REQUIRED[METRICS], *OPTIONAL, *WALL, *extra) if c != "system"))
    out: Metrics = {}
    for row in _rows(run_dir, METRICS):
        categories = [c for c in row.cells if c and CATEGORY.fullmatch(c)]
        out[row.text("system")] = {c: row.value(c, float) for c in (*numeric, *categories)}
    if (Path(run_dir) / TIMING).is_file():
        for row in _rows(run_dir, TIMING):
            out.get(row.text("system"), {}).update({c: row.value(c, float) for c in WALL})
    return out


def read_probes(run_dir: Path) -> list[Probe]:
    return [
        Probe(
            system=row.text("system"), episode_id=row.text("episode_id"), probe_id=row.text("probe_id"),
            type=row.text("type") or "unknown", question=row.text("question"), gold=row.text("gold"),
            answer=row.text("answer"), correct=bool(row.value("correct", _flag)),
            tools_tried=row.text("tools_tried"), where=row.value("where", _where),
            distance=row.value("distance", _whole), store_events=row.value("store_events", _whole),
        )
        for row in _rows(run_dir, PROBES)
    ]


def read_episodes(run_dir: Path) -> list[Episode]:
    return [
        Episode(row.text("system"), row.text("episode_id"), row.value("accuracy", float))
        for row in _rows(run_dir, EPISODES)
    ]


def _flag(raw: str) -> bool:
    flags = {"1": True, "0": False, "true": True, "false": False}
    if raw.lower() not in flags:
        raise ValueError("expected 0 or 1")
    return flags[raw.lower()]


def _where(raw: str) -> str:
    if raw not in WHERE:
        raise ValueError(f"expected one of {', '.join(WHERE)}")
    return raw


def _whole(raw: str) -> int:
    number = float(raw)
    if not number.is_integer():
        raise ValueError("expected a whole number of turns")
    return int(number)


# ── Markdown ─────────────────────────────────────────────────────────────────


def render_markdown(run: str, systems: Sequence[str], metrics: Metrics, probes: Sequence[Probe],
                    thresholds: Sequence[Threshold] = DEFAULT_THRESHOLDS,
                    suspected_aliases: Sequence[dict[str, str]] | None = None) -> str:
    counts = Counter(p.system for p in probes)
    lines = [
        f"# Run `{run}`",
        "",
        "Systems: " + ", ".join(f"`{s}` ({counts[s]} probes)" for s in systems) + ".",
        "",
        ("Accuracies show the value with its bootstrap 95% confidence interval across episodes; "
         "`n/a` means the metric does not apply."),
        "",
        *_main_table(systems, metrics),
        *_verdict_table(systems, metrics, thresholds),
        *_category_table(systems, metrics),
        *_compaction_table(systems, metrics),
        *_poisoning_table(systems, metrics),
        *_where_table(systems, probes),
        *_store_table(systems, probes),
        *_type_table(systems, probes),
        *_error_breakdown(systems, probes),
        *slot_alias_section(suspected_aliases),
        "## Plots",
        "",
        *(f"![{title}]({name})\n" for name, title in PLOTS.items()),
    ]
    return "\n".join(lines)


def _table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
    ]


def _cell(text: str, empty: str = "") -> str:
    """Free text as one table cell: one line, pipes escaped, long text cut."""
    flat = " ".join(text.split()) or empty
    if len(flat) > MAX_CELL:
        flat = flat[: MAX_CELL - 1] + "…"
    return flat.replace("|", "\\|")


def _with_ci(m: dict[str, float | None], column: str) -> str:
    value, lo, hi = m.get(column), m.get(f"{column}_lo"), m.get(f"{column}_hi")
    if value is None:
        return "n/a"
    return f"{value:.3f}" if lo is None or hi is None else f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def _ratio(hits: int, n: int) -> str:
    return "n/a" if n == 0 else f"{hits / n:.3f} ({hits}/{n})"


def _main_table(systems: Sequence[str], metrics: Metrics) -> list[str]:
    """Every accuracy and the plain columns; a column that is `n/a` for every system is left out."""
    shown = [c for c in (*ACCURACIES, *PLAIN) if any(metrics.get(s, {}).get(c) is not None for s in systems)]
    rows = []
    for s in systems:
        m = metrics.get(s, {})
        rows.append([f"`{s}`", *(_with_ci(m, c) if c in ACCURACIES else
                                 "n/a" if m.get(c) is None else PLAIN[c].format(m[c]) for c in shown)])
    return ["## Main comparison", "", *_table(["system", *shown], rows)]


def _verdict_table(systems: Sequence[str], metrics: Metrics, thresholds: Sequence[Threshold]) -> list[str]:
    """ok / WARN / FAIL per system and metric (`evaluation.verdicts`), then the thresholds that gave them."""
    used = shown({s: metrics.get(s, {}) for s in systems}, thresholds)
    if not used:
        return []
    marks = verdicts({s: metrics.get(s, {}) for s in systems}, used)
    rows = [[f"`{s}`", worst(marks[s]) or "n/a",
             *("n/a" if marks[s][t.metric] is None else f"{marks[s][t.metric]} ({metrics[s][t.metric]:.3g})"
               for t in used)] for s in systems]
    rules = [[t.metric, t.better, t.describe(), t.source] for t in used]
    return ["## Verdicts", "",
            ("Each main metric against its thresholds (`n/a`: the metric does not apply to the system); `overall` "
             "is the worst verdict of the row. Thresholds come from the design documents where they give one; "
             "`ledgermem report RUN --thresholds FILE` changes them."), "",
            *_table(["system", "overall", *(t.metric for t in used)], rows),
            *_table(["metric", "better", "rule", "source"], rules)]


def _number(m: dict[str, float | None], column: str, fmt: str = "{:.0f}") -> str:
    value = m.get(column)
    return "n/a" if value is None else fmt.format(value)


def _category_table(systems: Sequence[str], metrics: Metrics) -> list[str]:
    """Accuracy per benchmark category, then what could be answered offline and what the memory kept."""
    types = list(dict.fromkeys(c[2:-1] for m in metrics.values() for c in m if c.startswith("N[")))
    if not types and not any(m.get("Needs_Model_N") is not None for m in metrics.values()):
        return []
    lines = ["## Accuracy by category", ""]
    if types:
        head = ["system", *(f"{t} (n)" for t in types)]
        rows = [[f"`{s}`", *(f"{_with_ci(m, f'Acc[{t}]')} ({_number(m, f'N[{t}]')})" for t in types)]
                for s in systems if (m := metrics.get(s, {}))]
        lines += [("One column per probe type of the dataset (LoCoMo `locomo_cat1`…`locomo_cat5`, LongMemEval "
                   "`lme_<question_type>`), from `Acc[<type>]` and `N[<type>]` in `metrics.csv`. Unanswerable "
                   "questions (`locomo_cat5`, `lme_abstention`) count an abstention as correct and the "
                   "distractor as wrong."), "", *_table(head, rows)]
    head = ["system", "answerable", "accuracy on answerable", "needs a model", "Evidence_Retained_Rate",
            "Evidence_Reachable_Rate", "Evidence_In_Prompt_Rate"]
    rows = [[f"`{s}`", _number(m, "Answerable_N"), _with_ci(m, "Answerable_Acc"), _number(m, "Needs_Model_N"),
             *(_number(m, c, "{:.3f}") for c in LABELLED[-3:])]
            for s in systems if (m := metrics.get(s, {}))]
    lines += [("`needs a model`: probes the offline `heuristic` backend cannot answer by design (no fact slot to "
               "read, no abstention expected; `offline_answerable` 0 in `probe_predictions.csv`). The evidence rates "
               "say, with no answer involved, how many of the records the dataset names as evidence the memory still "
               "holds, can read by exact id, and showed in the prompt."), "", *_table(head, rows)]
    return lines


def _compaction_table(systems: Sequence[str], metrics: Metrics) -> list[str]:
    """three_layer's compaction passes, pin survival and re-injections, open loops, capacity steps, gate."""
    if not any(m.get("Compactions") is not None for m in metrics.values()):
        return []  # derived before these columns existed, or no system with compaction ran
    head = ["system", "compactions", "constraint re-injections", "Pin_Survival", "open loops before → after",
            "open-loop drops", "index titles", "index folds", "merges", "merges rejected", "inferences",
            "gated turns", "summarizer calls/turn"]
    rows = []
    for s in systems:
        m = metrics.get(s, {})
        loops = ("n/a" if m.get("Open_Loops_Before") is None
                 else f"{_number(m, 'Open_Loops_Before')} → {_number(m, 'Open_Loops_After')}")
        rows.append([f"`{s}`", _number(m, "Compactions"), _number(m, "Constraint_Reinjections"),
                     _number(m, "Pin_Survival", "{:.3f}"), loops, _number(m, "Open_Loop_Drops"),
                     _number(m, "indexes_created") if m.get("Compactions") is not None else "n/a",
                     _number(m, "Index_Folds"), _number(m, "Capacity_Merges"), _number(m, "Merges_Rejected"),
                     _number(m, "Inferences"), _number(m, "Gated_Turns"), _number(m, "llm_calls_per_turn", "{:.2f}")])
    return [
        "## Compaction and pins",
        "",
        ("Counted from the ledger: compaction passes (`compaction_checked`), pins a survival check found missing "
         "from the prompt and re-injected verbatim (`constraint_reinjected`), the share of (turn, live pin) "
         "pairs whose pin shows in the prompt rendered at the end of the turn, the open loops the prompt showed "
         "before and after each pass (summed over passes; a drop is a red flag), capacity steps, claims kept as "
         "inferences, and turns the gate level or a source policy kept from the summarizer. `n/a`: the system "
         "has no such mechanism."),
        "",
        *_table(head, rows),
    ]


def _poisoning_table(systems: Sequence[str], metrics: Metrics) -> list[str]:
    if not any((m.get("Poisoning_N") or 0) > 0 for m in metrics.values()):
        return []
    rows = [[f"`{s}`", _number(m, "Poisoning_N"), _with_ci(m, "Poisoning_Acc"), _number(m, "Poison_Surfaced", "{:.3f}"),
             _number(m, "Poison_Written", "{:.3f}")]
            for s in systems if (m := metrics.get(s, {}))]
    return [
        "## Poisoning",
        "",
        ("A source the user did not speak for planted a false value after the user stated the true one. "
         "Accuracy: the answer names the true value. `Poison_Surfaced`: share of poisoning probes whose answer "
         "contains the false value. `Poison_Written`: share whose false value the system wrote into its memory "
         "as a fact (`n/a`: the system writes no memory items)."),
        "",
        *_table(["system", "poisoning probes", "accuracy", "Poison_Surfaced", "Poison_Written"], rows),
    ]


def _where_table(systems: Sequence[str], probes: Sequence[Probe]) -> list[str]:
    head = ["system", "probes", *WHERE, *(f"acc {w}" for w in WHERE)]
    rows, unknown = [], 0
    for s in systems:
        mine = [p for p in probes if p.system == s and p.where]
        unknown += sum(1 for p in probes if p.system == s and not p.where)
        share = [_ratio(sum(p.where == w for p in mine), len(mine)) for w in WHERE]
        acc = [_ratio(sum(p.correct for p in mine if p.where == w), sum(p.where == w for p in mine)) for w in WHERE]
        rows.append([f"`{s}`", str(len(mine)), *share, *acc])
    note = [f"{unknown} probe(s) with no recorded `where` are left out.", ""] if unknown else []
    return [
        "## Diagnostics: where the gold value was",
        "",
        ("Share of probes whose gold value was in the rendered prompt, one exact-id tool call away, "
         "only in raw records, or gone; then the accuracy within each class."),
        "",
        *_table(head, rows),
        *note,
    ]


STORE_BUCKETS = ((0, 1_000, "< 1k"), (1_000, 10_000, "1k–10k"), (10_000, 50_000, "10k–50k"),
                 (50_000, None, "≥ 50k"))


def _store_table(systems: Sequence[str], probes: Sequence[Probe]) -> list[str]:
    """Reachability by the size of the episode's stream when the probe was asked."""
    sized = [p for p in probes if p.store_events is not None and p.where]
    if not sized:
        return []
    rows = []
    for s in systems:
        for lo, hi, label in STORE_BUCKETS:
            mine = [p for p in sized if p.system == s and p.store_events is not None
                    and lo <= p.store_events and (hi is None or p.store_events < hi)]
            if mine:
                near = sum(p.where in ("prompt", "one_hop") for p in mine)
                rows.append([f"`{s}`", label, str(len(mine)),
                             _ratio(sum(p.where == "prompt" for p in mine), len(mine)), _ratio(near, len(mine)),
                             _ratio(sum(p.correct for p in mine), len(mine))])
    return [
        "## Diagnostics by store size",
        "",
        "Probes grouped by how many events the episode's stream held when they were asked.",
        "",
        *_table(["system", "events", "probes", "in prompt", "prompt or one hop", "accuracy"], rows),
        "",
    ]


def _type_table(systems: Sequence[str], probes: Sequence[Probe]) -> list[str]:
    present = {p.type for p in probes}
    types = [t for t in KNOWN_TYPES if t in present] + sorted(present - set(KNOWN_TYPES))
    rows = []
    for s in systems:
        for t in types:
            mine = [p for p in probes if p.system == s and p.type == t]
            if mine:
                known = [p for p in mine if p.where]
                share = [_ratio(sum(p.where == w for p in known), len(known)) for w in WHERE]
                rows.append([f"`{s}`", t, str(len(mine)), _ratio(sum(p.correct for p in mine), len(mine)), *share])
    return ["## Diagnostics by probe type", "", *_table(["system", "type", "probes", "accuracy", *WHERE], rows)]


def _error_breakdown(systems: Sequence[str], probes: Sequence[Probe]) -> list[str]:
    wrong = {s: [p for p in probes if p.system == s and not p.correct] for s in systems}
    verdicts = [RETRIEVAL, LOST] + ([UNKNOWN] if any(p.verdict == UNKNOWN for w in wrong.values() for p in w) else [])
    counts = [
        [f"`{s}`", str(len(w)), *(str(sum(p.verdict == v for p in w)) for v in verdicts)] for s, w in wrong.items()
    ]
    lines = [
        "## Error breakdown",
        "",
        (f"Every wrong answer. `{RETRIEVAL}`: the gold value was in the prompt or one exact-id tool call away, "
         f"so the answer path missed it. `{LOST}`: it was only in raw records or gone from memory."),
        "",
        *_table(["system", "wrong", *verdicts], counts),
    ]
    head = ["episode", "probe", "type", "question", "gold", "answered", "where", "tools tried", "verdict"]
    for s, w in wrong.items():
        # Fixable failures first, so the cap never hides them behind lost information.
        ranked = sorted(w, key=lambda p: verdicts.index(p.verdict))
        rows = [
            [_cell(p.episode_id), _cell(p.probe_id), p.type, _cell(p.question), _cell(p.gold),
             _cell(p.answer, "(empty)"), p.where or "n/a", _cell(p.tools_tried, "none"), p.verdict]
            for p in ranked[:MAX_ERRORS]
        ]
        lines += [f"### `{s}`", ""]
        lines += _table(head, rows) if rows else ["No wrong answers.", ""]
        if len(ranked) > MAX_ERRORS:
            lines += [f"{len(ranked) - MAX_ERRORS} more wrong answer(s) omitted; all are in `{PROBES}`.", ""]
    return lines


# ── suspected slot aliases ───────────────────────────────────────────────────

def read_slot_aliases(run_dir: Path) -> list[dict[str, str]] | None:
    """The rows of `slot_aliases.csv`, or None for a run derived before the file existed."""
    path = Path(run_dir) / SLOT_ALIASES
    if not path.is_file():
        return None
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in SLOT_ALIAS_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise MissingColumn(f"{path}: required column {missing[0]!r} is missing; the file has "
                                f"{reader.fieldnames}. Derive the CSV files again with this version.")
        return [{c: row[c] or "" for c in SLOT_ALIAS_COLUMNS} for row in reader]


def slot_alias_section(rows: Sequence[dict[str, str]] | None) -> list[str]:
    """New slot names the gate suspected of naming an attribute the episode already had (two names, two
    registry slots). Stored as written; a dataset's `attributes` mapping settles each pair."""
    if rows is None:
        return []
    head = ["## Suspected slot aliases", ""]
    if not rows:
        return [*head, "No new slot name looked like one its episode already had.", ""]
    pairs = Counter((r["system"], r["slot"], r["existing"], r["rule"]) for r in rows)
    body = [(_cell(system), _cell(slot), _cell(existing), rule, str(n))
            for (system, slot, existing, rule), n in sorted(pairs.items())]
    return [*head, f"{len(rows)} suspected in {len({(r['system'], r['episode_id']) for r in rows})} episodes; "
            "declare the names in the dataset's `attributes` to merge them (or to keep them apart).", "",
            *_table(["system", "new slot", "existing slot", "rule", "times"], body)]


# ── plots ────────────────────────────────────────────────────────────────────

Colours = dict[str, tuple[float, float, float, float]]


def _save(fig: Figure, path: Path) -> None:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=110)
    fig.clear()


def _no_data(ax: Axes, message: str) -> None:
    ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center", va="center")


def plot_accuracy_vs_tokens(metrics: Metrics, systems: Sequence[str], colours: Colours) -> Figure:
    fig = Figure(figsize=(9, 5.5), layout="constrained")
    ax = fig.add_subplot()
    kinds = [c for c in ACCURACIES if any(m.get(c) is not None and m.get(TOKENS) is not None for m in metrics.values())]
    for i, column in enumerate(kinds):
        # Kinds of one system share an x; shift each kind a few points so their error bars stay apart.
        shifted = offset_copy(ax.transData, fig=fig, x=(i - (len(kinds) - 1) / 2) * 6, units="points")
        for s in systems:
            m = metrics.get(s, {})
            x, y, lo, hi = m.get(TOKENS), m.get(column), m.get(f"{column}_lo"), m.get(f"{column}_hi")
            if x is None or y is None:
                continue
            err = [[max(0.0, y - lo) if lo is not None else 0.0], [max(0.0, hi - y) if hi is not None else 0.0]]
            ax.errorbar([x], [y], yerr=err, fmt=ACCURACIES[column], color=colours[s], capsize=3, transform=shifted)
    for s, m in metrics.items():
        ys = [y for c in kinds if (y := m.get(c)) is not None]
        if m.get(TOKENS) is not None and ys:
            ax.annotate(s, (m[TOKENS], max(ys)), xytext=(16, 6), textcoords="offset points", color=colours[s])
    if not kinds:
        _no_data(ax, f"no accuracy with a value of {TOKENS} in {METRICS}")
    ax.set(xlabel="average rendered context tokens", ylabel="accuracy", ylim=(-0.05, 1.08),
           title="Accuracy against rendered context tokens (95% CI)")
    # Autoscaling skips artists drawn through a shifted transform, so set the range from the data.
    xs = [x for m in metrics.values() if (x := m.get(TOKENS)) is not None]
    ax.set_xlim(0, max(xs, default=0.0) * 1.2 or 1.0)
    ax.grid(alpha=0.3)
    systems_handles = [Line2D([], [], color=colours[s], lw=6, label=s) for s in systems if s in metrics]
    kind_handles = [Line2D([], [], color="0.3", ls="", marker=ACCURACIES[c], label=c) for c in kinds]
    if systems_handles:
        fig.legend(handles=systems_handles, title="system", loc="outside right upper")
    if kind_handles:
        fig.legend(handles=kind_handles, title="accuracy", loc="outside right lower")
    return fig


def _bucket(distance: int) -> str:
    return next(label for top, label in BUCKETS if top is None or distance <= top)


def plot_reachability(probes: Sequence[Probe], systems: Sequence[str], colours: Colours) -> Figure:
    fig = Figure(figsize=(9, 5.5), layout="constrained")
    ax = fig.add_subplot()
    known = [p for p in probes if p.distance is not None and p.where]
    present = {_bucket(p.distance) for p in known if p.distance is not None}
    labels = [label for _, label in BUCKETS if label in present]
    for s in systems:
        prompt, near = [], []
        for label in labels:
            mine = [p for p in known if p.system == s and p.distance is not None and _bucket(p.distance) == label]
            n = len(mine) or float("nan")  # a gap in the line where the system has no probe
            prompt.append(sum(p.where == "prompt" for p in mine) / n)
            near.append(sum(p.where in ("prompt", "one_hop") for p in mine) / n)
        if any(p.system == s for p in known):
            xs = range(len(labels))
            ax.plot(xs, prompt, marker="o", color=colours[s], label=f"{s}: in prompt")
            ax.plot(xs, near, marker="o", ls="--", color=colours[s], label=f"{s}: prompt or one hop")
    if labels:
        ticks = [f"{label}\nn={sum(_bucket(p.distance) == label for p in known if p.distance is not None)}"
                 for label in labels]
        ax.set_xticks(range(len(labels)), labels=ticks)
        fig.legend(loc="outside right upper")
    else:
        _no_data(ax, f"no probe in {PROBES} has a known distance and where")
    ax.set(xlabel="turns between the gold value being stated and the probe", ylabel="share of probes",
           ylim=(-0.05, 1.05), title="Gold value in the prompt (solid) or within one hop (dashed)")
    ax.grid(alpha=0.3)
    return fig


def plot_per_episode(episodes: Sequence[Episode], systems: Sequence[str], colours: Colours) -> Figure:
    ids = list(dict.fromkeys(e.episode_id for e in episodes))
    fig = Figure(figsize=(min(24.0, max(8.0, 0.25 * len(ids) + 4)), 5.5), layout="constrained")
    ax = fig.add_subplot()
    at = {e: i for i, e in enumerate(ids)}
    shown = [s for s in systems if any(e.system == s and e.accuracy is not None for e in episodes)]
    width = 0.8 / max(1, len(shown))
    for i in range(0, len(ids), 2):  # banded background: tell neighbouring episodes apart
        ax.axvspan(i - 0.5, i + 0.5, color="0.94", lw=0)
    for k, s in enumerate(shown):
        mine = [e for e in episodes if e.system == s and e.accuracy is not None]
        xs = [at[e.episode_id] - 0.4 + width * (k + 0.5) for e in mine]
        ys = [e.accuracy for e in mine if e.accuracy is not None]
        ax.scatter(xs, ys, color=colours[s], s=28, zorder=3, label=s)
        ax.axhline(fmean(ys), color=colours[s], ls="--", lw=1, zorder=2, label=f"{s} mean {fmean(ys):.3f}")
    if shown:
        ax.set_xticks(range(len(ids)), labels=ids, rotation=90, fontsize=8 if len(ids) <= 20 else 6)
        ax.set_xlim(-0.6, len(ids) - 0.4)
        fig.legend(loc="outside right upper")
    else:
        _no_data(ax, f"no episode accuracy in {EPISODES}")
    ax.set(xlabel="episode", ylabel="accuracy", ylim=(-0.05, 1.05), title="Accuracy per episode")
    ax.grid(axis="y", alpha=0.3)
    return fig
