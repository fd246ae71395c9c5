"""`KeyStore.adopt`: keys of other stores (merged shard ledgers) copied in durably; clashing material refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledgermem.ledger.errors import LedgerCorrupt
from ledgermem.ledger.keys import KeyStore


def test_adopted_keys_open_what_the_other_store_sealed_and_survive_a_reopen(tmp_path: Path) -> None:
    shard = KeyStore(tmp_path / "shard.keys.duckdb")
    shard.ensure(["a/t1"])
    sealed = shard.seal("a/t1", "my rent is 1200")
    merged = KeyStore(tmp_path / "merged.keys.duckdb")
    assert merged.adopt(shard.material()) == ["a/t1"]
    assert merged.adopt(shard.material()) == []  # the same material again is no change
    merged.close()
    reopened = KeyStore(tmp_path / "merged.keys.duckdb", read_only=True)
    assert reopened.open(sealed) == "my rent is 1200"


def test_a_key_id_held_with_other_material_is_refused(tmp_path: Path) -> None:
    one, other = KeyStore(tmp_path / "one.keys.duckdb"), KeyStore(tmp_path / "other.keys.duckdb")
    one.ensure(["a/t1"])
    other.ensure(["a/t1"])  # same id, fresh random key
    with pytest.raises(LedgerCorrupt, match=r"a/t1 are held here with other material"):
        one.adopt(other.material())
