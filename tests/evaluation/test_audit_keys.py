"""An audit whose sealed values cannot be opened says so: I1-I3, I5 and replay are not checked, and it fails.

With the key store gone every sealed value reads `[sealed]`, and I1–I5
compared those placeholders with each other and said "ok". The control in
each case is the same run with its keys, which the audit passes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import Result

from tests.invoke import invoke_in
from ledgermem.gate.invariants import NEEDS_VALUES
from ledgermem.ledger.store import Ledger


def invoke(*args: str, cwd: Path) -> Result:
    return invoke_in(cwd, *args)


@pytest.fixture(scope="module")
def sealed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("keys")
    result = invoke("run", "--episodes", "2", "--turns", "8", "--systems", "three_layer,naive_chain",
                    "--personal-data", "--run-id", "p", cwd=cwd)
    assert result.exit_code == 0, result.output
    return cwd / "runs" / "p"


@pytest.fixture
def run(sealed_run: Path, tmp_path: Path) -> Path:
    shutil.copytree(sealed_run, tmp_path / "runs" / "p")
    return tmp_path / "runs" / "p"


def _checks(result: Result) -> dict[str, dict[str, object]]:
    return {c["invariant"]: c for c in json.loads(result.output)["checks"]}


def test_with_its_keys_the_run_audits_clean(run: Path) -> None:
    result = invoke("audit", "p", "--json", cwd=run.parents[1])
    assert result.exit_code == 0 and all(c["ok"] and c["checked"] for c in _checks(result).values())


def test_a_deleted_key_store_leaves_the_checks_of_values_not_checked(run: Path) -> None:
    (run / "ledger.keys.duckdb").unlink()
    result = invoke("audit", "p", "--json", cwd=run.parents[1])
    checks = _checks(result)
    assert result.exit_code == 1 and json.loads(result.output)["ok"] is False
    assert {name for name, c in checks.items() if not c["checked"]} == set(NEEDS_VALUES)
    assert all(c["ok"] is False and c["violations"] == [] for name, c in checks.items() if name in NEEDS_VALUES)
    assert "runs/p/ledger.keys.duckdb is missing" in str(checks["I1"]["not_checked"])
    assert checks["hash_chain"]["ok"] and checks["contiguity"]["ok"]
    assert checks["I4"]["checked"] and checks["I4"]["detail"]["compared"] > 0  # unreadable gold counts as evidence
    shown = invoke("audit", "p", cwd=run.parents[1])
    assert shown.exit_code == 1 and "NOT CHECKED" in shown.output and "all invariants hold" not in shown.output
    assert "audit: NOT CHECKED I1, I2, I3, I5, replay: no key store" in shown.output


def test_a_key_removed_from_the_store_without_an_erasure_is_named(run: Path) -> None:
    with Ledger(run / "ledger.duckdb", read_only=True) as ledger:  # a key a sealed value really names
        named = min(k for stream, _ in ledger.streams() for ids in ledger.sealed_keys(stream).values() for k in ids)
    with duckdb.connect(str(run / "ledger.keys.duckdb")) as conn:
        conn.execute("DELETE FROM keys WHERE key_id = ?", [named])
        assert conn.execute("SELECT count(*) FROM keys WHERE key_id = ?", [named]).fetchone() == (0,)
    result = invoke("audit", "p", "--json", cwd=run.parents[1])
    reason = str(_checks(result)["I1"]["not_checked"])
    assert result.exit_code == 1 and "the key store" in reason and "1 key(s) named by sealed values" in reason


def test_keys_destroyed_by_an_erasure_are_not_missing(run: Path) -> None:
    erased = invoke("erase", "p", "--episode", "syn-en-000", "--subject", "--legal-basis", "test #1",
                    cwd=run.parents[1])
    assert erased.exit_code == 0, erased.output
    result = invoke("audit", "p", "--json", cwd=run.parents[1])
    assert result.exit_code == 0 and all(c["checked"] for c in _checks(result).values()), result.output


def test_an_export_audited_without_keys_is_not_checked_and_with_them_is(run: Path, tmp_path: Path) -> None:
    assert invoke("export", "p", "--to", str(tmp_path / "x"), cwd=run.parents[1]).exit_code == 0
    bare = invoke("audit", str(tmp_path / "x"), "--json", cwd=run.parents[1])
    assert bare.exit_code == 1 and "pass --keys" in str(_checks(bare)["I3"]["not_checked"])
    keyed = invoke("audit", str(tmp_path / "x"), "--json", "--keys", str(run / "ledger.keys.duckdb"),
                   cwd=run.parents[1])
    assert all(c["checked"] for c in _checks(keyed).values())


def test_a_run_without_personal_data_needs_no_key_store(tmp_path: Path) -> None:
    assert invoke("run", "--episodes", "1", "--turns", "6", "--systems", "three_layer", "--no-personal-data",
                  "--run-id", "n", cwd=tmp_path).exit_code == 0
    assert not (tmp_path / "runs" / "n" / "ledger.keys.duckdb").exists()
    assert invoke("audit", "n", cwd=tmp_path).exit_code == 0
