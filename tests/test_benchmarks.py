"""`python -m benchmarks --quick` runs end to end and reports every case with its samples.

Nothing here is about speed: the figures go to the report, not to an assertion.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ledgermem.benchmarks.cases import CASE_IDS
from ledgermem.benchmarks.measure import MIN_RUNS

ROOT = Path(__file__).resolve().parents[1]


def test_quick_run_reports_every_case(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text(encoding="utf-8"))

    assert doc["mode"] == "quick"
    assert doc["machine"]["cores"] and doc["versions"]["duckdb"]
    cases = {c["case"]: c for c in doc["cases"]}
    assert sorted(cases) == sorted(CASE_IDS)
    for name, case in cases.items():
        summary = case["summary"]
        if case["kind"] == "timed":
            assert len(case["samples_s"]) >= MIN_RUNS, name
            assert len(case["baseline_s"]) >= MIN_RUNS, name
            assert all(s > 0 for s in case["samples_s"] + case["baseline_s"]), name
            assert summary["median"] > 0 and summary["baseline_median"] > 0, name
            assert summary["ratio"] is not None and summary["ratio"] > 0, name
        else:
            assert case["kind"] == "memory" and case["value"] > 0, name
        assert case["met"] in (True, False, None), name
    # The generated ledger is a real one: its hash chain verifies.
    assert cases["verify"]["extra"]["chain_ok"] is True
    # The table went to stdout, progress to stderr.
    assert "| `turn_overhead@10` |" in proc.stdout
    assert "verify" in proc.stderr


# -- docs/performance.md is written from results.json --------------------------------------------

PAGE = ROOT / "docs" / "performance.md"
RESULTS = ROOT / "benchmarks" / "results.json"


def test_the_performance_page_is_what_the_results_give() -> None:
    from ledgermem.benchmarks import report

    doc, cases = report.load_json(RESULTS)
    page = PAGE.read_text(encoding="utf-8")
    assert page == report.performance_page(doc, cases, page), \
        "docs/performance.md is stale: python -m benchmarks --report-from benchmarks/results.json"
    assert report.PAGE_BEGIN in page and page.index(report.PAGE_END) < page.index("## Where the cases stand")


def test_control_a_changed_figure_or_a_lost_note_is_caught() -> None:
    import dataclasses

    from ledgermem.benchmarks import report

    doc, cases = report.load_json(RESULTS)
    page = PAGE.read_text(encoding="utf-8")
    timed = next(i for i, c in enumerate(cases) if c.kind == "timed")
    slower = [dataclasses.replace(c, samples_s=[s * 2 for s in c.samples_s]) if i == timed else c
              for i, c in enumerate(cases)]
    assert report.performance_page(doc, slower, page) != page
    assert report.performance_page(doc, cases, "") != page  # the notes after the end marker are kept, not made up
    assert report.performance_page(doc, cases, page).endswith(page.split(report.PAGE_END, 1)[1].lstrip("\n"))


def test_report_from_rewrites_the_page_and_keeps_its_notes(tmp_path: Path) -> None:
    from ledgermem.benchmarks import __main__ as bench
    from ledgermem.benchmarks import report

    doc, cases = report.load_json(RESULTS)
    page = tmp_path / "performance.md"
    page.write_text(f"# Performance\n\n{report.PAGE_BEGIN}\n\nstale figures\n\n{report.PAGE_END}\n\n## Notes\n\nkept\n",
                    encoding="utf-8")
    bench.write_page(doc, cases, page)
    text = page.read_text(encoding="utf-8")
    assert "stale figures" not in text and text.endswith("## Notes\n\nkept\n")
    assert text == report.performance_page(doc, cases, text)


def test_the_live_writers_benchmark_checks_what_it_measured() -> None:
    """`python -m ledgermem.benchmarks.live_writers --quick`: every acknowledged turn in the ledger once, the
    ledger verified, audited and replayed, and the CPU each side spent per turn."""
    from ledgermem.benchmarks import live_writers

    result = live_writers.main(["--quick"])
    assert result["alone"]["turns"] == 20 and result["concurrent"]["turns"] == 40
    assert result["verify_ok"] and result["audit_ok"] and result["replay_identical"]
    assert result["turns_match_acknowledged"] and result["acknowledged_twice"] == []
    for phase in ("alone", "concurrent"):
        assert result[phase]["server_cpu_ms_per_turn"] > 0 and result[phase]["clients_cpu_ms_per_turn"] > 0
