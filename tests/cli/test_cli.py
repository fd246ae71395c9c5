"""The CLI: clean one-line errors with exit codes, tamper detection, README first screen."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledgermem.cli.commands import cli

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str, cwd: Path):
    runner = CliRunner()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def _first_slot() -> str:
    """A slot the user states in the first episode of the run the fixture makes (the corpus decides its name)."""
    from ledgermem.datasets.synthetic import generate_synthetic

    facts = generate_synthetic(n_episodes=2, turns=12).episodes[0].facts
    updated = [slot for slot, history in facts if len(history) > 1]
    return (updated or [facts[0][0]])[0]


SLOT = _first_slot()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("cli")
    result = invoke("run", "--episodes", "2", "--turns", "12", "--run-id", "small", cwd=cwd)
    assert result.exit_code == 0, result.output
    return cwd


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_run_prints_a_result_table_and_leaves_a_ledger(workdir: Path) -> None:
    ledger = workdir / "runs" / "small" / "ledger.duckdb"
    assert ledger.is_file()
    assert (workdir / "runs" / "small" / "metrics.csv").read_text().startswith("system,")
    result = invoke("replay", "small", "--json", cwd=workdir)
    data = json.loads(result.output)
    assert result.exit_code == 0 and data["identical"] is True
    assert data["metrics"]["three_layer"]["Current_Fact_N"] > 0


def _bad_dataset(tmp: Path, kind: str) -> Path:
    path = tmp / f"{kind}.json"
    if kind == "malformed":
        path.write_text('{"episodes": [', encoding="utf-8")
    elif kind == "empty":
        path.write_text('{"episodes": []}', encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("run", "--dataset", "missing.json", "--run-id", "small"), "no such dataset file"),
        (("run", "--dataset", "{malformed}", "--run-id", "small"), "malformed.json"),
        (("run", "--dataset", "{empty}", "--run-id", "small"), "contains no episodes"),
        (("replay", "no-such-run"), "unknown run 'no-such-run'"),
        (("sql", "no-such-run", "SELECT 1"), "unknown run 'no-such-run'"),
        (("verify", "no-such-run"), "unknown run 'no-such-run'"),
        (("run", "--run-id", "small", "--episodes", "1", "--turns", "4"), "already exists"),
        (("sql", "small", "SELEC nonsense"), "query failed"),
    ],
)
def test_errors_are_one_line_no_traceback_and_leave_ledgers_untouched(
    workdir: Path, args: tuple[str, ...], fragment: str
) -> None:
    ledger = workdir / "runs" / "small" / "ledger.duckdb"
    before = _digest(ledger)
    args = tuple(str(_bad_dataset(workdir, a[1:-1])) if a.startswith("{") else a for a in args)
    proc = subprocess.run([sys.executable, "-m", "ledgermem", *args], cwd=workdir, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert _digest(ledger) == before


def test_verify_names_the_seq_of_a_changed_payload_byte(tmp_path: Path) -> None:
    assert invoke("run", "--episodes", "1", "--turns", "6", "--run-id", "t", cwd=tmp_path).exit_code == 0
    path = tmp_path / "runs" / "t" / "ledger.duckdb"
    import duckdb

    with duckdb.connect(str(path)) as conn:
        seq, payload = conn.execute(
            "SELECT seq, payload FROM events WHERE event_type = 'turn_recorded' ORDER BY seq LIMIT 1 OFFSET 2"
        ).fetchone()
        i = payload.index("Noted") if "Noted" in payload else len(payload) // 2
        forged = payload[:i] + chr(ord(payload[i]) ^ 1) + payload[i + 1:]
        conn.execute("UPDATE events SET payload = ? WHERE seq = ?", [forged, seq])
    proc = subprocess.run([sys.executable, "-m", "ledgermem", "verify", "t"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert f"BROKEN at seq {seq}:" in proc.stderr


def test_verify_ok_exits_zero(workdir: Path) -> None:
    result = invoke("verify", "small", cwd=workdir)
    assert result.exit_code == 0 and result.output.startswith("ok: ")


def test_sql_json_output(workdir: Path) -> None:
    result = invoke("sql", "small", "SELECT count(*) AS n FROM raw_records", "--json", cwd=workdir)
    assert result.exit_code == 0 and json.loads(result.output) == [{"n": 4 * 24}]  # four systems × 2 episodes × 12 turns


def test_every_command_help_ends_with_an_example() -> None:
    for name in cli.commands:
        help_text = CliRunner().invoke(cli, [name, "--help"]).output
        assert "Example:" in help_text and f"ledgermem {name}" in help_text.split("Example:")[1], name


def test_readme_first_screen_has_two_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```bash\n(.*?)```", readme, re.DOTALL).group(1).strip().splitlines()
    assert len(first_block) == 2
    assert "ledgermem run" in first_block[0]
    assert "pytest" in first_block[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert first_block[1].strip() in ci
    assert shlex.split(first_block[1])  # a valid shell line


def test_audit_passes_on_a_fresh_run(workdir: Path) -> None:
    result = invoke("audit", "small", "--json", cwd=workdir)
    report = json.loads(result.output)
    assert result.exit_code == 0 and report["ok"] is True
    assert {c["invariant"] for c in report["checks"]} == {
        "I1", "I2", "I3", "I4", "I5", "hash_chain", "contiguity", "scd2", "replay"}
    assert invoke("audit", "small", cwd=workdir).output.rstrip().endswith("audit: all invariants hold")
    i4 = next(c for c in report["checks"] if c["invariant"] == "I4")["detail"]
    assert i4["sources"] == {"exempt": 6, "gold facts": 2} and i4["recall"] == 1.0
    assert all(s["against"].startswith("gold facts (") for s in i4["streams"] if "three_layer" in s["stream"])


def test_audit_says_what_i4_compared_against_and_fails_a_locomo_run_that_captured_nothing(tmp_path: Path) -> None:
    locomo = ROOT / "tests" / "fixtures" / "datasets" / "locomo10_sample.json"
    assert invoke("run", "--dataset", str(locomo), "--systems", "three_layer", "--run-id", "lo",
                  cwd=tmp_path).exit_code == 0
    result = invoke("audit", "lo", cwd=tmp_path)
    assert result.exit_code == 1 and result.output.rstrip().endswith("audit: VIOLATED I4")
    assert "nothing was captured from gold record r0001" in result.output
    assert re.search(r"lo/three_layer/conv-a\s+│\s+gold evidence \(6 records\)\s+│\s+0 of 6\s+│\s+0\.0", result.output)
    assert "recall 1.0" not in result.output


@pytest.mark.parametrize(
    "target, sql, invariant",
    [
        ("ledger.duckdb", "UPDATE events SET payload = replace(payload, 'heuristic', 'heuristiq') "
                          "WHERE seq = (SELECT min(seq) FROM events WHERE event_type = 'llm_called')", "hash_chain"),
        ("ledger.projections.duckdb", "UPDATE raw_records SET user_text = 'forged' WHERE record_id = 'r0003'",
         "replay"),
    ],
)
def test_audit_names_the_violated_invariant_and_exits_1(tmp_path: Path, target: str, sql: str, invariant: str) -> None:
    assert invoke("run", "--episodes", "1", "--turns", "6", "--run-id", "t", cwd=tmp_path).exit_code == 0
    import duckdb

    with duckdb.connect(str(tmp_path / "runs" / "t" / target)) as conn:
        conn.execute(sql)
    proc = subprocess.run([sys.executable, "-m", "ledgermem", "audit", "t", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert [c["invariant"] for c in report["checks"] if not c["ok"]] == [invariant]


def test_replay_with_the_sql_engine_on_a_sealed_run_after_an_erasure(tmp_path: Path) -> None:
    from ledgermem.datasets.model import dataset_to_json
    from ledgermem.datasets.synthetic import generate_synthetic

    data = tmp_path / "d.json"
    dataset = generate_synthetic(n_episodes=2, turns=10)
    data.write_text(json.dumps(dataset_to_json(dataset)), encoding="utf-8")
    assert invoke("run", "--dataset", str(data), "--run-id", "s", cwd=tmp_path).exit_code == 0
    slot = dataset.episodes[0].facts[0][0]  # a slot the user stated in syn-en-000
    erased = invoke("erase", "s", "--episode", "syn-en-000", "--slot", slot, "--legal-basis", "test",
                    "--json", cwd=tmp_path)
    assert erased.exit_code == 0 and json.loads(erased.output)["clean"] is True
    for engine in ("python", "sql"):
        result = invoke("replay", "s", "--engine", engine, "--json", cwd=tmp_path)
        report = json.loads(result.output)
        assert result.exit_code == 0 and report["projections_identical"] and report["erasures"] == 4, engine  # every system's copy


@pytest.mark.parametrize(
    "args, check",
    [
        (["history", "--slot", SLOT], lambda d: d and d[-1]["valid_to_seq"] is None),
        (["as-of", "--turn", "6"], lambda d: set(d) == {"pinned", "window", "registry", "index", "chain", "indexed", "archive"}),
        (["diff", "5", "40"], lambda d: any(v["entered"] for v in d.values())),
        (["blame", "--slot", SLOT], lambda d: d["records"] and d["records"][0]["record_id"].startswith("r")),
        (["manifest"], lambda d: d and all(row["item_ids"] for row in d)),
        (["anomalies"], lambda d: set(d) == {"flip_flop", "stale_live", "slot_alias_suspected"}),
    ],
)
def test_time_travel_commands_answer_in_json(workdir: Path, args: list[str], check) -> None:
    result = invoke(args[0], "small", "--episode", "syn-en-000", *args[1:], "--json", cwd=workdir)
    assert result.exit_code == 0, result.output
    assert check(json.loads(result.output))
    human = invoke(args[0], "small", "--episode", "syn-en-000", *args[1:], cwd=workdir)
    assert human.exit_code == 0 and human.output.strip()


def test_ddl_prints_postgres_tables() -> None:
    result = CliRunner().invoke(cli, ["ddl"])
    assert result.exit_code == 0 and result.output.count("CREATE TABLE IF NOT EXISTS") == 7


def test_audit_of_a_run_with_nothing_to_compare_reports_i4_as_not_applicable(tmp_path: Path) -> None:
    data = tmp_path / "chat.json"
    data.write_text(json.dumps({"episodes": [{"episode_id": "e", "dialogues": [["Nice day.", "Indeed."],
                                                                                ["Thanks!", "You're welcome."]]}]}),
                    encoding="utf-8")
    assert invoke("run", "--dataset", str(data), "--systems", "three_layer", "--run-id", "n",
                  cwd=tmp_path).exit_code == 0
    result = invoke("audit", "n", "--i4-floor", "0.9", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "nothing to compare, recall n/a" in result.output and "recall 1.0" not in result.output
    report = json.loads(invoke("audit", "n", "--json", cwd=tmp_path).output)
    i4 = next(c for c in report["checks"] if c["invariant"] == "I4")["detail"]
    assert i4["recall"] is None and i4["streams"][0]["against"] == "nothing to compare"


HOLD = """
import sys, time, duckdb
conns = [duckdb.connect(p) for p in sys.argv[1:]]  # a writer's lock, as a running `ledgermem run` holds it
print("held", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("held", ["ledger", "key store"])
def test_sql_reads_a_sealed_run_while_its_writer_holds_it(tmp_path: Path, held: str) -> None:
    """DuckDB lets no other process open a file its writer holds: `sql` answers from a snapshot, sealed values
    read as [sealed] (the key store is never copied), and says so."""
    assert invoke("run", "--run-id", "live", "--episodes", "1", "--turns", "8", "--systems", "three_layer",
                  "--personal-data", cwd=tmp_path).exit_code == 0
    run = tmp_path / "runs" / "live"
    query = "SELECT count(*) AS n, min(user_text) AS text FROM raw_records"
    closed = invoke("sql", "live", query, "--json", cwd=tmp_path)
    assert closed.exit_code == 0
    rows = json.loads(closed.stdout)
    assert rows[0]["n"] == 8 and rows[0]["text"] != "[sealed]"
    files = [run / "ledger.duckdb", run / "ledger.keys.duckdb"] if held == "ledger" else [run / "ledger.keys.duckdb"]
    holder = subprocess.Popen([sys.executable, "-c", HOLD, *map(str, files)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        live = invoke("sql", "live", query, "--json", cwd=tmp_path)
        assert live.exit_code == 0, live.output
        assert json.loads(live.stdout) == [{"n": 8, "text": "[sealed]"}]
        assert "is being written; querying a snapshot" in live.stderr
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
