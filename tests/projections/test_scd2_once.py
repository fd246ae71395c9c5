"""The SCD-2 versioning is written once: the SQL rebuild's files leave it to two macros rendered from the specs.

Every table's SQL computes the table's state after each event that touches a
key; when a version opens and closes, its `version_id`, its validity
interval and the rows' order are spelled only by `scd2_versions` and
`scd2_rows` in `projections/sql_rebuild.py`, from the same `TableSpec`s
(key columns, attribute columns) the fold in `projections/scd2.py` versions by.
"""

from __future__ import annotations

import re
from dataclasses import fields
from importlib import resources
from pathlib import Path

import pytest

from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.projections import sql_rebuild
from ledgermem.projections.scd2 import STREAM_COLS, TABLES, TableSpec, arrow_schema, order_keys
from ledgermem.projections.sql_rebuild import rebuild_sql_ledger, scd2_rows, scd2_versions

ROOT = Path(__file__).resolve().parents[2]
PROJECTIONS = ROOT / "projections"

#: What only the versioning writes: a change of a key's state (`a`) opening a version, the turn a
#: version closes at, and the SCD-2 columns (`scd2.SCD_COLS`).
MARKERS = re.compile(
    r"is\s+distinct\s+from\s+lag\(\s*a\s*\)|lead\(\s*turn\s*\)|valid_(?:from|to)_(?:seq|turn)|version_id",
    re.IGNORECASE,
)


def spellings(folder: Path) -> list[str]:
    """`file:line` of every SCD-2 marker in the rebuild SQL files of `folder`."""
    found = []
    for path in sorted(folder.glob("rebuild_*.sql")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.lstrip().startswith("--") and MARKERS.search(line):
                found.append(f"{path.name}:{number}")
    return found


def test_no_rebuild_file_spells_the_versioning() -> None:
    assert sorted(p.name for p in PROJECTIONS.glob("rebuild_*.sql"))  # the scan sees the files
    assert spellings(PROJECTIONS) == []


def test_a_copy_in_a_rebuild_file_is_reported(tmp_path: Path) -> None:
    # Must-fail control: the versioning pasted back into one file, as it was written before.
    for path in PROJECTIONS.glob("rebuild_*.sql"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    assert spellings(tmp_path) == []
    pins = tmp_path / "rebuild_pins.sql"
    pasted = scd2_versions(TABLES[-1], "states") + "\n" + scd2_rows(TABLES[-1], "versions")
    pins.write_text(pins.read_text(encoding="utf-8") + "\n" + pasted + ";\n", encoding="utf-8")
    found = spellings(tmp_path)
    assert found and all(f.startswith("rebuild_pins.sql:") for f in found)


def test_the_interval_is_spelled_once_in_python() -> None:
    # The closing of a version by the next one or the epoch's end, and the change test, in one function each.
    texts = {p.name: p.read_text(encoding="utf-8") for p in PROJECTIONS.glob("*.py")}
    texts.update({p.name: p.read_text(encoding="utf-8") for p in (ROOT / "temporal").glob("*.sql")})
    closing = {name: t.count("ELSE v.next_seq") for name, t in texts.items() if "ELSE v.next_seq" in t}
    change = {name: t.count("IS DISTINCT FROM {before}") for name, t in texts.items() if "IS DISTINCT FROM {before}" in t}
    assert closing == {"sql_rebuild.py": 1}
    assert change == {"sql_rebuild.py": 1}


@pytest.mark.parametrize("spec", TABLES, ids=lambda s: s.name)
def test_the_macros_follow_the_spec(spec: TableSpec) -> None:
    keys = ", ".join(n for n, _ in spec.key)
    assert f"PARTITION BY sk, epoch, {keys} ORDER BY seq" in scd2_versions(spec, "states")
    rows = scd2_rows(spec, "versions")
    assert rows.rstrip().endswith("ORDER BY " + ", ".join(order_keys(spec)))
    for name, _ in spec.attrs:
        assert f"v.a.{name} AS {name}" in rows
    # Control: a spec with another key renders another partition, so SQL and fold cannot disagree on keys.
    other = TableSpec(spec.name, (("other_key", spec.key[0][1]),), spec.attrs)
    assert f"PARTITION BY sk, epoch, {keys} ORDER BY" not in scd2_versions(other, "states")


def test_rebuilt_tables_have_the_specs_columns(tmp_path: Path) -> None:
    # Empty ledger: the result's tables still come from the rendered queries, with the specs' columns.
    ledger = Ledger(str(tmp_path / "l.duckdb"))
    try:
        with rebuild_sql_ledger(ledger) as history:
            for spec in TABLES:
                names = [d[0] for d in history.conn.execute(f'SELECT * FROM "{spec.name}"').description or ()]
                assert names == arrow_schema(spec).names, spec.name
    finally:
        ledger.close()


def test_an_unknown_macro_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A macro the renderer does not know would otherwise reach DuckDB as text.
    sql = "-- name: broken\nSELECT 1 FROM x\n{{ version(pin_versions, states) }};\n"
    (tmp_path / "rebuild_broken.sql").write_text(sql, encoding="utf-8")

    class Files:
        def joinpath(self, name: str) -> Path:
            return tmp_path / name

    monkeypatch.setattr(resources, "files", lambda package: Files())
    sql_rebuild._blocks.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"rebuild_broken\.sql: block broken"):
            sql_rebuild._blocks("rebuild_broken.sql")
    finally:
        monkeypatch.undo()
        sql_rebuild._blocks.cache_clear()
    # the module's own SQL still renders once the cache is cleared
    assert "lead(turn)" in sql_rebuild._blocks("rebuild_pins.sql")["pin_versions"]


def test_stream_columns_are_the_stream_keys_fields() -> None:
    # One spelling of a stream's identity: the columns every table and query uses are StreamKey's fields.
    assert StreamKey.COLUMNS == tuple(f.name for f in fields(StreamKey))
    assert tuple(n for n, _ in STREAM_COLS) == StreamKey.COLUMNS
    for spec in TABLES:
        assert arrow_schema(spec).names[:3] == list(StreamKey.COLUMNS)
        assert scd2_rows(spec, "versions").startswith("SELECT " + ", ".join(f"st.{c}" for c in StreamKey.COLUMNS))


def test_the_settled_versions_need_the_state_before_each_touch() -> None:
    # `following=` ends a version at the next touch by comparing states; without `previous=` naming the
    # state before the touch there would be nothing to tell where a version opens.
    for macro in ("{{ versions(window_versions, running, following=after_next) }}",
                  "{{ versions(window_versions, running, previous=NULL, following=after_next) }}"):
        with pytest.raises(ValueError, match="following= needs previous="):
            sql_rebuild._MACRO.sub(sql_rebuild._render, macro)
    rendered = sql_rebuild._MACRO.sub(
        sql_rebuild._render, "{{ versions(window_versions, running, previous=was, following=after_next) }}")
    assert "a IS DISTINCT FROM was" in rendered and "after_next IS DISTINCT FROM a" in rendered
