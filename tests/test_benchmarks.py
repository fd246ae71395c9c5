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
