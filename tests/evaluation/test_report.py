"""The run report: Markdown tables, error verdicts, PNG plots, and errors on bad input.

The CSV files are written by hand here, so the report is tested against the
column contract alone, with no ledger and no LLM.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from matplotlib.image import imread

from ledgermem.evaluation.errors import EvaluationError
from ledgermem.evaluation.report import (
    EPISODES,
    LOST,
    METRICS,
    PROBES,
    REPORT,
    RETRIEVAL,
    MissingColumn,
    MissingRunFile,
    ReportInputError,
    plot_accuracy_vs_tokens,
    read_metrics,
    write_report,
)

METRIC_HEAD = [
    "system", "episodes", "turns", "probes",
    *(f"{m}{s}" for m in ("Current_Fact_Acc", "History_Fact_Acc", "Memory_Point_Acc")
      for s in ("", "_lo", "_hi", "_N")),
    "Constraint_Survival", "Constraint_Survival_lo", "Constraint_Survival_hi", "Constraint_N",
    "Open_Loop_Survival", "Open_Loop_Survival_lo", "Open_Loop_Survival_hi", "Open_Loop_N",
    "Staleness_Rate", "Interference", "Write_Precision", "Avg_Active_Chain_Tokens", "Avg_Rendered_Context_Tokens",
    "Tool_Call_Success_Rate", "Tool_Call_Parse_Rate", "tool_calls", "llm_calls_per_turn", "wall_ms_per_turn",
    "wall_ms_per_probe",
]
PROBE_HEAD = ["system", "episode_id", "probe_id", "type", "slot", "question", "gold", "answer", "correct", "judge",
              "tool_calls", "tool_ok", "tools_tried", "where", "distance", "rendered_tokens"]
EPISODE_HEAD = ["system", "episode_id", "turns", "probes", "correct", "accuracy", "Current_Fact_Acc",
                "History_Fact_Acc", "Memory_Point_Acc", "avg_rendered_tokens", "avg_chain_tokens", "llm_calls",
                "wall_ms"]
SYSTEMS = ("three_layer", "full_context", "memgpt_style")
ACC_TRIPLES = {  # system -> (value, lo, hi) for Current, History, Memory_Point, Constraint, Open_Loop
    "three_layer": [("0.9167", "0.85", "0.9667"), ("0.8", "0.7", "0.9"), ("0.75", "0.5", "1.0"),
                    ("1.0", "1.0", "1.0"), ("0.5", "0.25", "0.75")],
    "full_context": [("0.7", "0.6", "0.8"), ("0.6", "0.4", "0.8"), ("0.55", "0.3", "0.8"),
                     ("0.9", "0.8", "1.0"), ("0.4", "0.2", "0.6")],
    "memgpt_style": [("0.5", "0.4", "0.6"), ("0.3", "0.2", "0.4"), ("", "", ""),
                     ("0.6", "0.4", "0.8"), ("", "", "")],
}
PLAIN = {  # Staleness, chain tokens, rendered tokens, tool success, tool parse, llm/turn, wall ms/turn
    "three_layer": ("0.05", "310.5", "1420.25", "0.875", "0.95", "1.5", "12.5"),
    "full_context": ("0.1", "0", "6120", "", "", "1.0", "30.0"),
    "memgpt_style": ("0.3", "400", "900", "", "", "2.0", "8.0"),
}
#: The wrong answers: (system, probe id, where, tools tried) -> the verdict the report must give.
WRONG = {
    ("three_layer", "tl-w1", "prompt", ""): RETRIEVAL,
    ("three_layer", "tl-w2", "one_hop", "get_raw_record(reference_id=r0007) ok; expand_index(index_id=i0001) failed"):
        RETRIEVAL,
    ("three_layer", "tl-w3", "gone", "get_raw_record(reference_id=r0042) failed"): LOST,
    ("memgpt_style", "mg-w1", "prompt", ""): RETRIEVAL,
    ("memgpt_style", "mg-w2", "raw_only", ""): LOST,
    ("memgpt_style", "mg-w3", "gone", ""): LOST,
    ("memgpt_style", "mg-w4", "gone", ""): LOST,
}


def _write(path: Path, head: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=head)
        writer.writeheader()
        writer.writerows(rows)


def _metric_row(system: str) -> dict[str, str]:
    row = dict.fromkeys(METRIC_HEAD, "")
    kinds = ("Current_Fact_Acc", "History_Fact_Acc", "Memory_Point_Acc", "Constraint_Survival", "Open_Loop_Survival")
    for kind, (value, lo, hi) in zip(kinds, ACC_TRIPLES[system], strict=True):
        row |= {kind: value, f"{kind}_lo": lo, f"{kind}_hi": hi}
    plain = ("Staleness_Rate", "Avg_Active_Chain_Tokens", "Avg_Rendered_Context_Tokens", "Tool_Call_Success_Rate",
             "Tool_Call_Parse_Rate", "llm_calls_per_turn", "wall_ms_per_turn")
    return row | dict(zip(plain, PLAIN[system], strict=True)) | {"system": system, "episodes": "4", "turns": "120"}


def _probe(system: str, episode: str, pid: str, **cells: str) -> dict[str, str]:
    return dict.fromkeys(PROBE_HEAD, "") | {
        "system": system, "episode_id": episode, "probe_id": pid, "type": "current_fact", "slot": "city",
        "question": "Where does the user live?", "gold": "Lyon", "answer": "Lyon", "correct": "1",
        "judge": "string", "where": "prompt", "distance": "5", "tool_calls": "0", "tool_ok": "0",
    } | cells


def _probes() -> list[dict[str, str]]:
    rows = []
    wheres = ("prompt", "prompt", "one_hop", "raw_only", "gone")
    types = ("current_fact", "history_fact", "memory_point", "constraint", "open_loop", "temporal_reasoning")
    distances = ("3", "18", "40", "75", "150", "260", "")
    for system in SYSTEMS:
        for e in range(4):
            for k in range(6):
                rows.append(_probe(system, f"ep{e}", f"p{e}-{k}", type=types[k], where=wheres[(e + k) % 5],
                                   distance=distances[(e * 6 + k) % 7]))
    for i, ((system, pid, where, tools), _) in enumerate(WRONG.items()):
        rows.append(_probe(system, f"ep{i % 4}", pid, type="history_fact", gold="Paris", answer="Lyon", correct="0",
                           where=where, tools_tried=tools, distance=str(30 * i)))
    rows.append(_probe("three_layer", "ep0", "tl-nowhere", where="", distance=""))
    rows.append(_probe("full_context", "ep1", "fc-pipe", question="Which of a|b?\nSay one.", answer="a"))
    return rows


def _episodes(systems: tuple[str, ...] = SYSTEMS, n: int = 4) -> list[dict[str, str]]:
    return [
        dict.fromkeys(EPISODE_HEAD, "") | {
            "system": s, "episode_id": f"ep{e}",
            "accuracy": "" if (s, e) == ("memgpt_style", 3) else f"{(e + k) % 5 / 4}",  # one empty cell
        }
        for k, s in enumerate(systems)
        for e in range(n)
    ]


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "demo-run"
    folder.mkdir()
    _write(folder / METRICS, METRIC_HEAD, [_metric_row(s) for s in SYSTEMS])
    _write(folder / PROBES, PROBE_HEAD, _probes())
    _write(folder / EPISODES, EPISODE_HEAD, _episodes())
    return folder


@pytest.fixture()
def report(run_dir: Path) -> str:
    write_report(run_dir)
    return (run_dir / REPORT).read_text(encoding="utf-8")


def _row(text: str, *starts: str) -> str:
    """The one table line whose first cells are `starts`."""
    prefix = "| " + " | ".join(starts) + " |"
    hits = [line for line in text.splitlines() if line.startswith(prefix)]
    assert len(hits) == 1, (prefix, hits)
    return hits[0]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_returns_the_markdown_first_then_the_plots(run_dir: Path) -> None:
    paths = write_report(run_dir)
    assert [p.name for p in paths] == [REPORT, "accuracy_vs_tokens.png", "reachability_by_distance.png",
                                       "per_episode.png"]
    assert all(p.parent == run_dir and p.is_file() for p in paths)


def test_header_names_the_run_and_systems(report: str) -> None:
    assert report.startswith("# Run `demo-run`")
    assert all(f"`{s}`" in report.split("\n\n")[1] for s in SYSTEMS)


def test_main_table_shows_values_with_confidence_intervals_and_na(report: str) -> None:
    assert ("| system | Current_Fact_Acc | History_Fact_Acc | Memory_Point_Acc | Constraint_Survival | "
            "Open_Loop_Survival | Staleness_Rate | Avg_Rendered_Context_Tokens | Avg_Active_Chain_Tokens | "
            "Tool_Call_Success_Rate | Tool_Call_Parse_Rate | llm_calls_per_turn | wall_ms_per_turn |") in report
    assert _cells(_row(report, "`three_layer`", "0.917 [0.850, 0.967]")) == [
        "`three_layer`", "0.917 [0.850, 0.967]", "0.800 [0.700, 0.900]", "0.750 [0.500, 1.000]",
        "1.000 [1.000, 1.000]", "0.500 [0.250, 0.750]", "0.050", "1420.2", "310.5", "0.875", "0.950", "1.50", "12.5",
    ]
    memgpt = _cells(_row(report, "`memgpt_style`", "0.500 [0.400, 0.600]"))
    assert memgpt[3] == "n/a" and memgpt[5] == "n/a"  # empty Memory_Point_Acc and Open_Loop_Survival
    assert memgpt[9:11] == ["n/a", "n/a"]  # tool metrics do not apply to a system without tools
    assert _cells(_row(report, "`full_context`", "0.700 [0.600, 0.800]"))[9] == "n/a"


def test_diagnostics_give_share_and_accuracy_per_where_class(report: str) -> None:
    assert "| system | probes | prompt | one_hop | raw_only | gone | acc prompt |" in report
    # three_layer: 24 planted probes + 3 wrong ones with a known `where`; the one with no `where` is left out.
    cells = _cells(_row(report, "`three_layer`", "27"))
    prompt_n = int(cells[2].split("/")[0].split("(")[1])
    assert cells[2].endswith(f"({prompt_n}/27)") and cells[6].startswith("0.9") and cells[6].endswith(f"/{prompt_n})")
    assert "1 probe(s) with no recorded `where` are left out." in report


def test_types_from_other_datasets_appear_in_the_diagnostics(report: str) -> None:
    assert _cells(_row(report, "`three_layer`", "temporal_reasoning"))[2] == "4"
    assert _cells(_row(report, "`three_layer`", "history_fact"))[2:4] == ["7", "0.571 (4/7)"]


def test_error_breakdown_lists_every_wrong_answer_with_its_verdict(report: str) -> None:
    errors = report.split("## Error breakdown", 1)[1]
    for (system, pid, where, tools), verdict in WRONG.items():
        cells = _cells(_row(errors, f"ep{list(WRONG).index((system, pid, where, tools)) % 4}", pid))
        assert cells[2:] == ["history_fact", "Where does the user live?", "Paris", "Lyon", where,
                             tools.replace("|", "\\|") or "none", verdict]
    assert "| system | wrong | retrieval-path failure | information lost |" in errors
    assert _cells(_row(errors, "`three_layer`", "3")) == ["`three_layer`", "3", "2", "1"]
    assert _cells(_row(errors, "`memgpt_style`", "4")) == ["`memgpt_style`", "4", "1", "3"]
    assert _cells(_row(errors, "`full_context`", "0")) == ["`full_context`", "0", "0", "0"]
    assert "### `full_context`\n\nNo wrong answers." in errors


def test_free_text_stays_inside_its_cell(run_dir: Path) -> None:
    rows = _probes()
    rows.append(_probe("full_context", "ep2", "fc-wrong", question="Which of a|b?\nSay one.", answer="c",
                       correct="0", where="raw_only"))
    _write(run_dir / PROBES, PROBE_HEAD, rows)
    write_report(run_dir)
    line = _row((run_dir / REPORT).read_text(encoding="utf-8"), "ep2", "fc-wrong")
    assert "Which of a\\|b? Say one." in line and len(_cells(line)) == 9


def test_wrong_answers_past_the_cap_are_counted_not_listed(run_dir: Path) -> None:
    rows = [_probe("three_layer", f"ep{i % 4}", f"lost{i:02d}", correct="0", where="gone") for i in range(58)]
    rows += [_probe("three_layer", "ep0", "fixable", correct="0", where="one_hop")]
    _write(run_dir / PROBES, PROBE_HEAD, rows)
    write_report(run_dir)
    text = (run_dir / REPORT).read_text(encoding="utf-8")
    listed = [line for line in text.splitlines() if re.match(r"\| ep\d \| (lost\d\d|fixable) \|", line)]
    assert len(listed) == 50 and "fixable" in listed[0]  # retrieval-path failures come first
    assert "9 more wrong answer(s) omitted" in text
    errors = text.split("## Error breakdown", 1)[1]
    assert _cells(_row(errors, "`three_layer`", "59")) == ["`three_layer`", "59", "1", "58"]


def test_report_links_the_plots(report: str) -> None:
    for name in ("accuracy_vs_tokens.png", "reachability_by_distance.png", "per_episode.png"):
        assert re.search(rf"!\[[^\]]+\]\({name}\)", report)


def _assert_image(path: Path) -> None:
    assert path.stat().st_size > 0
    pixels = imread(path)
    assert pixels.ndim == 3 and pixels.shape[2] in (3, 4)
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert pixels[..., :3].std() > 0


@pytest.mark.parametrize("name", ["accuracy_vs_tokens.png", "reachability_by_distance.png", "per_episode.png"])
def test_plots_are_real_images(run_dir: Path, name: str) -> None:
    write_report(run_dir)
    _assert_image(run_dir / name)


def test_accuracy_plot_shows_every_point_inside_its_axes(run_dir: Path) -> None:
    metrics = read_metrics(run_dir)
    fig = plot_accuracy_vs_tokens(metrics, SYSTEMS, dict.fromkeys(SYSTEMS, (0.0, 0.0, 0.0, 1.0)))
    ax = fig.axes[0]
    assert len(ax.containers) == 13  # 5 + 5 + 3 accuracies with a value
    left, right = ax.get_xlim()
    assert all(left < m["Avg_Rendered_Context_Tokens"] < right for m in metrics.values())
    assert {t.get_text() for t in ax.texts} == set(SYSTEMS)


def test_plots_stay_drawable_for_a_large_run(run_dir: Path) -> None:
    systems = ("three_layer", "full_context", "memgpt_style", "naive_chain")
    _write(run_dir / EPISODES, EPISODE_HEAD, _episodes(systems, n=50))
    for path in write_report(run_dir)[1:]:
        _assert_image(path)


def test_plots_without_tokens_or_distances_still_render(run_dir: Path) -> None:
    _write(run_dir / METRICS, METRIC_HEAD,
           [_metric_row(s) | {"Avg_Rendered_Context_Tokens": ""} for s in SYSTEMS])
    _write(run_dir / PROBES, PROBE_HEAD, [row | {"distance": ""} for row in _probes()])
    for path in write_report(run_dir)[1:]:
        _assert_image(path)


@pytest.mark.parametrize("name", [METRICS, PROBES, EPISODES])
def test_a_missing_csv_is_named(run_dir: Path, name: str) -> None:
    (run_dir / name).unlink()
    with pytest.raises(MissingRunFile, match=re.escape(name)) as info:
        write_report(run_dir)
    assert isinstance(info.value, EvaluationError) and isinstance(info.value, FileNotFoundError)
    assert not (run_dir / REPORT).exists()


@pytest.mark.parametrize(("name", "column"), [
    (METRICS, "Current_Fact_Acc_lo"), (METRICS, "llm_calls_per_turn"), (PROBES, "where"),
    (PROBES, "tools_tried"), (EPISODES, "accuracy"),
])
def test_a_missing_column_is_named_with_its_file(run_dir: Path, name: str, column: str) -> None:
    with (run_dir / name).open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    head = [c for c in rows[0] if c != column]
    _write(run_dir / name, head, [{c: r[c] for c in head} for r in rows])
    with pytest.raises(MissingColumn, match=rf"{re.escape(name)}.*'{column}'") as info:
        write_report(run_dir)
    assert isinstance(info.value, EvaluationError) and isinstance(info.value, ValueError)


def test_wall_time_is_read_from_timing_csv_when_it_is_there(run_dir: Path) -> None:
    """Wall time is machine time: runs derived now keep it in timing.csv, apart from metrics.csv."""
    from ledgermem.evaluation.report import read_metrics

    assert read_metrics(run_dir)["three_layer"]["wall_ms_per_turn"] == 12.5  # an older metrics.csv still reads
    _write(run_dir / "timing.csv", ["system", "wall_ms_per_turn"], [{"system": "three_layer", "wall_ms_per_turn": "99"}])
    assert read_metrics(run_dir)["three_layer"]["wall_ms_per_turn"] == 99.0
    _write(run_dir / "timing.csv", ["system", "wall_ms_per_probe"], [{"system": "three_layer", "wall_ms_per_probe": "1"}])
    with pytest.raises(MissingColumn, match=r"timing\.csv.*'wall_ms_per_turn'"):
        write_report(run_dir)


@pytest.mark.parametrize(("column", "value"), [("correct", "maybe"), ("where", "attic"), ("distance", "2.5")])
def test_an_unreadable_cell_names_file_line_and_column(run_dir: Path, column: str, value: str) -> None:
    rows = _probes()
    rows[3][column] = value
    _write(run_dir / PROBES, PROBE_HEAD, rows)
    with pytest.raises(ReportInputError, match=rf"{PROBES} line 5, column '{column}': cannot read '{value}'"):
        write_report(run_dir)


def test_store_size_diagnostics_appear_when_the_column_is_there(tmp_path: Path) -> None:
    from ledgermem.evaluation.report import Probe, render_markdown

    probes = [Probe(system="a", episode_id="e", probe_id=f"p{i}", type="current_fact", question="q", gold="g",
                    answer="g" if i % 2 else "x", correct=bool(i % 2), tools_tried="", where="prompt" if i < 3 else "gone",
                    distance=1, store_events=500 if i < 2 else 60_000) for i in range(4)]
    text = render_markdown("r", ["a"], {}, probes)
    assert "## Diagnostics by store size" in text
    assert "| `a` | < 1k | 2 | 1.000 (2/2) | 1.000 (2/2) | 0.500 (1/2) |" in text
    assert "| `a` | ≥ 50k | 2 | 0.500 (1/2) | 0.500 (1/2) | 0.500 (1/2) |" in text
    no_sizes = [Probe(**{**{f: getattr(p, f) for f in p.__dataclass_fields__}, "store_events": None}) for p in probes]
    assert "store size" not in render_markdown("r", ["a"], {}, no_sizes)
