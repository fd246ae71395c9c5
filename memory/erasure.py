"""Erasure receipts and the residue scan.

After the keys are shredded and the projection file rebuilt, the erased
values (held in memory only for this scan, never written anywhere) are
looked for in every place they could survive: the ledger's decrypted
events, the projection tables, the rendered prompt, and the bytes of the
ledger, projection and key files (with their write-ahead logs). The receipt
names what was erased by id and slot, never by value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.events import FactErased, KeyShredded
from ledger.parquet import ParquetLedger
from ledger.store import Ledger, StreamKey
from projections.materialise import ProjectionStore

#: Shorter values are not looked for in raw file bytes: ciphertext would match them by chance.
MIN_BYTES_SCANNED = 8


@dataclass(frozen=True, slots=True)
class ErasureReceipt:
    request: str
    legal_basis: str
    facts: tuple[tuple[str, str, bool], ...]  # (summary_id, slot, collateral)
    records: tuple[str, ...]
    summaries: tuple[str, ...]
    indexes: tuple[str, ...]
    keys_shredded: tuple[str, ...]
    places_scanned: tuple[str, ...]
    residue: dict[str, int] = field(default_factory=dict)  # place -> hits
    not_byte_scanned: int = 0  # values too short to look for in file bytes

    @property
    def clean(self) -> bool:
        return not any(self.residue.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "request": self.request, "legal_basis": self.legal_basis,
            "facts": [{"summary_id": s, "slot": k, "collateral": c} for s, k, c in self.facts],
            "records": list(self.records), "summaries": list(self.summaries), "indexes": list(self.indexes),
            "keys_shredded": list(self.keys_shredded), "places_scanned": list(self.places_scanned),
            "residue": dict(self.residue), "not_byte_scanned": self.not_byte_scanned, "clean": self.clean,
        }


def _pattern(value: str) -> re.Pattern[str]:
    """A value as a whole token: `29` is found in `team size=29`, not in `s0029` or `129`."""
    edge_l = r"(?<![0-9A-Za-z])" if value[:1].isascii() and value[:1].isalnum() else ""
    edge_r = r"(?![0-9A-Za-z])" if value[-1:].isascii() and value[-1:].isalnum() else ""
    return re.compile(edge_l + re.escape(value) + edge_r)


def mentions(text: str, values: set[str]) -> bool:
    return any(_pattern(v).search(text) for v in values if v)


def _hits(texts: list[str], values: set[str]) -> int:
    return sum(len(_pattern(v).findall(text)) for text in texts for v in values if v)


def personal_texts(event: Any) -> list[str]:
    """The personal fields of an event as text (facts and dicts by their values)."""
    out: list[str] = []
    for name in type(event).PERSONAL:
        value = getattr(event, name)
        if value is None:  # an optional personal field left empty (a probe without a planted value)
            continue
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            out += [str(v) for v in value.values()]
        else:  # facts as (slot, value) pairs, or a tuple of strings (a pin's anchors)
            out += [str(v) if isinstance(v, str) else str(v[1]) for v in value]
    return out


def _personal_texts(ledger: Ledger, stream: StreamKey) -> list[str]:
    return [t for r in ledger.read(stream=stream) for t in personal_texts(r.event)]


_TEXT_COLUMNS = {
    "summary_versions": "text, facts, inferences",
    "fact_versions": "value",
    "index_versions": "title",
    "raw_records": "user_text, agent_text",
    "pin_versions": "text",
}


def _cell_texts(cell: Any) -> list[str]:
    if cell is None:
        return []
    if isinstance(cell, list):  # facts: [{slot, value}, ...]
        return [str(f["value"]) for f in cell]
    return [str(cell)]


def _table_texts(store: ProjectionStore) -> list[str]:
    out = []
    for table, cols in _TEXT_COLUMNS.items():
        for row in store.conn.execute(f"SELECT {cols} FROM {table}").fetchall():
            out += [t for cell in row for t in _cell_texts(cell)]
    return out


def _file_bytes(path: str) -> bytes:
    blobs = [Path(p).read_bytes() for p in (path, path + ".wal") if Path(p).is_file()]
    return b"".join(blobs)


def scan(ledger: Ledger, stream: StreamKey, store: ProjectionStore, rendered: str,
         values: set[str], exports: Sequence[Path] = ()) -> tuple[dict[str, int], tuple[str, ...], int]:
    residue = {
        "ledger events (decrypted)": _hits(_personal_texts(ledger, stream), values),
        "projection tables": _hits(_table_texts(store), values),
        "rendered prompt": _hits([rendered], values),
    }
    for folder in exports:
        # Parquet pages are compressed: look at the decoded rows, opened with the (now shredded) keys.
        exported = ParquetLedger(folder, keys=ledger.keys, run_id=stream.run_id)
        try:
            residue[f"export {folder}"] = _hits(_personal_texts(exported, stream), values)
        finally:
            exported.conn.close()  # not close(): the key store is the memory's own
    long_values = {v for v in values if len(v.encode("utf-8")) >= MIN_BYTES_SCANNED}
    key_file = ledger.keys.path if ledger.keys is not None else ":memory:"
    files = [p for p in (ledger.path, store.path, key_file) if p != ":memory:"]
    for path in files:
        data = _file_bytes(path)
        residue[f"file {Path(path).name}"] = sum(data.count(v.encode("utf-8")) for v in long_values)
    return residue, tuple(residue), len(values) - len(long_values)


def receipt(events: tuple[Any, ...], residue: dict[str, int], places: tuple[str, ...],
            short: int) -> ErasureReceipt:
    shredded = next(e for e in events if isinstance(e, KeyShredded))
    facts = tuple((e.summary_id, e.slot, e.collateral) for e in events if isinstance(e, FactErased))
    return ErasureReceipt(
        request=shredded.request, legal_basis=shredded.legal_basis, facts=facts, records=shredded.records,
        summaries=shredded.summaries, indexes=shredded.indexes, keys_shredded=shredded.key_ids,
        places_scanned=places, residue=residue, not_byte_scanned=short,
    )
