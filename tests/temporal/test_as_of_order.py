"""`as_of` puts each layer's flat rows in the order of that layer's own query, whatever order the file holds them in."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from ledgermem.projections.materialise import ProjectionStore
from ledgermem.projections.scd2 import TABLES, arrow_schema
from ledgermem.temporal import Episode, as_of, install
from ledgermem.temporal import queries as Q

EP = Episode("run", "three_layer", "ep-2")
OTHER = Episode("run", "three_layer", "ep-1")
# Keys whose insertion order is not their sorted order: mixed scripts, digits that sort as text, a prefix of another.
KEYS = ["zebra", "Ämter", "住址", "apple", "10", "9", "app", "Zürich", "办公室", "a b", "éclair", "B2"]
LAYER_QUERIES = (("pinned", "pins"), ("window", "window"), ("registry", "registry"), ("index", "index"),
                 ("summaries", "summaries"))


def _row(spec_name: str, ep: Episode, key: str, n: int, *, closed: bool) -> dict[str, Any]:
    spec = next(s for s in TABLES if s.name == spec_name)
    row: dict[str, Any] = {f.name: None for f in arrow_schema(spec)}
    row.update(run_id=ep.run_id, system=ep.system, episode_id=ep.episode_id, version_id=f"{spec_name}-{key}-{n}",
               valid_from_seq=1 + n, valid_to_seq=50 + n if closed else None,
               valid_from_turn=1 + n % 4, valid_to_turn=9 if closed else None)
    row[spec.key[0][0]] = key
    if spec_name in ("raw_records", "window_versions"):
        row["turn"] = (7 * n) % len(KEYS)  # one record a turn, in an order neither the keys' nor the insertion's
    if spec_name == "raw_records":
        row.update(user_text=f"u {key}", agent_text=f"a {key}")
    if spec_name == "summary_versions":
        row.update(status=("active", "indexed", "archived")[n % 3], facts=[{"slot": key, "value": str(n)}],
                   raw_ids=[key], superseded_by=[], merged_from=[], inferences=[], overrides=[], created_turn=n,
                   text=key, index_id=f"i{n % 2}")
    if spec_name == "index_versions":
        row.update(members=[key], live_members=1, level=1, created_turn=n, title=key)
    if spec_name == "fact_versions":
        row.update(value=f"v{n}", summary_id=f"s{n}", erased=n % 5 == 0)
    if spec_name == "pin_versions":
        row.update(kind="constraint", text=key, origin="user", shown=True, reinjected=n, created_turn=n)
    return row


@pytest.fixture
def shuffled() -> ProjectionStore:
    """Every table filled in a shuffled order, two episodes interleaved, some versions closed before seq 60."""
    store = ProjectionStore(":memory:")
    rng = random.Random(7)
    for spec in TABLES:
        rows = [_row(spec.name, ep, key, n, closed=n % 4 == 1)
                for ep in (EP, OTHER) for n, key in enumerate(KEYS)]
        rng.shuffle(rows)
        store.conn.register("_rows", pa.Table.from_pylist(rows, schema=arrow_schema(spec)))
        store.conn.execute(f"INSERT INTO {spec.name} SELECT * FROM _rows")
        store.conn.unregister("_rows")
    return store


def _each_layer_alone(store: ProjectionStore, axis: str, at: int) -> dict[str, list[dict[str, Any]]]:
    conn = store.conn.cursor()
    install(conn)
    alone = {name: Q._rows(conn, Q.queries()[f"{query}_as_of"].format(asof=f"as_of_{axis}"), {**EP.params(), "at": at})
             for name, query in LAYER_QUERIES}
    summaries = alone.pop("summaries")
    return {**alone, **{layer: [s for s in summaries if s["status"] == status]
                        for layer, status in (("chain", "active"), ("indexed", "indexed"), ("archive", "archived"))}}


@pytest.mark.parametrize(("axis", "at"), [("seq", 5), ("seq", 60), ("seq", 1000), ("turn", 2), ("turn", 12)])
def test_as_of_orders_every_layer_as_its_own_query_does(shuffled: ProjectionStore, axis: str, at: int) -> None:
    expected = _each_layer_alone(shuffled, axis, at)
    got = as_of(shuffled.conn, EP, **{axis: at})
    assert got == expected
    assert sum(len(rows) for rows in got.values()) >= 5 * 3  # the point holds rows in every table
    assert all(r["record_id"] for r in got["window"])


def test_control_unordered_flat_rows_fail_the_order_check(shuffled: ProjectionStore,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Must-fail control: the same rows, left in the order the file holds them, are caught by the comparison."""
    monkeypatch.setattr(Q, "_AS_OF_ORDER", {layer: () for layer in Q._AS_OF_ORDER})
    expected = _each_layer_alone(shuffled, "seq", 1000)
    got = as_of(shuffled.conn, EP, seq=1000)
    assert got != expected
    assert {k: sorted(map(repr, v)) for k, v in got.items()} == {k: sorted(map(repr, v)) for k, v in expected.items()}


def test_as_of_columns_are_read_off_the_statement() -> None:
    """Each layer's columns as the `as_of` block names them, in the order of that layer's own query."""
    columns = Q._as_of_columns()
    assert set(columns) == set(Q._AS_OF_ORDER)
    assert columns["window"] == ("record_id", "turn", "user_text", "agent_text")
    assert columns["registry"] == ("slot", "value", "summary_id", "erased")
    for layer, keys in Q._AS_OF_ORDER.items():
        assert set(keys) <= set(columns[layer])
