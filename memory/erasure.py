"""Erasure receipts and the residue scan.

After the keys are shredded and the projection file rebuilt, the erased
values (held in memory only for this scan, never written anywhere) are
looked for in every place they could survive: the ledger's decrypted
events and the projection rows of the data subject's streams, the rendered
prompt, and the bytes of the ledger, projection and key files (with their
write-ahead logs). A value is matched as `gate.erasure.value_pattern` says
(whole token, case-insensitive, whitespace-normalised); in file bytes as a
substring, ASCII case-insensitive.

Other streams may hold the same value legitimately (another episode where
the same city was named): their events and rows are not residue and are not
scanned. The projection file holds every stream's rows in plaintext, so its
bytes cannot tell them apart: when another stream's rows still show a value,
that value is not looked for in that file's bytes, and the receipt says so
(`shared_elsewhere`); the per-row scan of the subject's streams speaks for it.
The receipt names what was erased by id and slot, never by value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledgermem.gate.erasure import (
    ErasurePlan, PLAINTEXT_COLUMNS, StreamToErase, gold_keys, planted_of, value_pattern, without_shredded,
)
from ledgermem.ledger.events import Event
from ledgermem.projections.events import EpisodeGold, FactErased, KeyShredded, ProbeAsked, TurnRecorded
from ledgermem.ledger.keys import ERASED, FieldKeys
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey
from ledgermem.projections.materialise import LiveProjection, ProjectionStore, last_erasure_seq
from ledgermem.projections.state import EpisodeState

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
    streams: tuple[str, ...] = ()  # the streams whose keys were shredded (every system's copy of the episode)
    #: Files whose bytes were not searched for some value because another stream legitimately still shows it.
    shared_elsewhere: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not any(self.residue.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "request": self.request, "legal_basis": self.legal_basis,
            "facts": [{"summary_id": s, "slot": k, "collateral": c} for s, k, c in self.facts],
            "records": list(self.records), "summaries": list(self.summaries), "indexes": list(self.indexes),
            "keys_shredded": list(self.keys_shredded), "places_scanned": list(self.places_scanned),
            "residue": dict(self.residue), "not_byte_scanned": self.not_byte_scanned,
            "streams": list(self.streams), "shared_elsewhere": list(self.shared_elsewhere), "clean": self.clean,
        }


def answer_keys(ledger: Ledger, stream: StreamKey, prefix: str, answer: str,
                events: Sequence[Event]) -> list[str | FieldKeys]:
    """The keys of one answer's events: `answer`, except each gold value, under the key of the turn that stated it.

    The turn of a probe's gold is read from the episode's `episode_gold` event.
    A key already shredded is never made again: a gold value whose turn was
    erased stays under the answer's key.
    """
    planted: list[tuple[str, str, int]] = []
    shredded: set[str] = set()
    if any(isinstance(e, ProbeAsked) for e in events):
        for r in ledger.read(stream=stream, event_types=["episode_gold", "key_shredded"]):
            if isinstance(r.event, EpisodeGold):
                planted += planted_of(r.event)
            elif isinstance(r.event, KeyShredded):
                shredded |= set(r.event.key_ids)
    own = gold_keys(prefix, answer, events, planted)
    return [without_shredded(own[n], shredded) if n in own else answer for n in range(len(events))]


# -- carrying out an erasure decided by `gate.erasure.plan_erasure` ----------------------


def to_erase(ledger: Ledger, stream: StreamKey, state: EpisodeState) -> StreamToErase:
    """What the decision needs of `stream`: its state, the plaintext of every value sealed in it, and the keys
    that sealed each turn's raw record."""
    values = ledger.sealed_values(stream)
    sealed = tuple((key_id, ledger.unseal(envelope)) for found in values.values() for key_id, envelope in found)
    keys = {seq: {key_id for key_id, _ in found} for seq, found in values.items()}
    return StreamToErase(name=str(stream), state=state, sealed=sealed, raw_keys=raw_keys_of(ledger, stream, keys))


def raw_keys_of(ledger: Ledger, stream: StreamKey,
                sealed: Mapping[int, set[str]] | None = None) -> dict[int, tuple[str, ...]]:
    """Turn -> the keys the ledger records as sealing that turn's raw record (the key id each sealed value of
    its `turn_recorded` names): `#raw:N` as this version writes, `#turn:N` in a ledger written before.
    A record stored in clear has none. `sealed` is `ledger.sealed_keys(stream)` when the caller has it."""
    found = ledger.sealed_keys(stream) if sealed is None else sealed
    return {r.event.turn: tuple(sorted(found[r.seq])) for r in ledger.read(stream=stream, event_types=["turn_recorded"])
            if r.seq in found}


def stream_state(ledger: Ledger, stream: StreamKey, projections: ProjectionStore) -> EpisodeState:
    """A stream's state folded from the ledger (its projection rows caught up if they lag)."""
    return LiveProjection(stream, ledger.read(stream=stream), projections).projector.state


def append_erasure(ledger: Ledger, stream: StreamKey, plan: ErasurePlan) -> tuple[RecordedEvent, ...]:
    """Append the plan's events for `stream` in one transaction (none when it has no part)."""
    events = plan.events_of(str(stream))
    if not events:
        return ()
    return ledger.append(stream, list(events), expected_version=ledger.stream_version(stream))


def shred(ledger: Ledger, projections: ProjectionStore, keys: Sequence[str]) -> bool:
    """Destroy the keys the key store still holds, then rebuild the projection file once, if anything
    was destroyed or an erasure is newer than the file; whether it was rebuilt.

    Idempotent: after a crash between the events and the key file's rewrite,
    or before the rebuild, calling it again finishes the erasure.
    """
    store = ledger.keys
    pending = [k for k in keys if store is not None and k in store]
    if pending:
        assert store is not None
        ledger.commit_group()  # never a key destroyed before the events that record why are durable
        store.shred(pending)
    if pending or last_erasure_seq(ledger) > projections.erasure_mark():
        ledger.commit_group()  # the rebuild reads the ledger as committed
        projections.rebuild_from(ledger)
        return True
    return False


_pattern = functools.lru_cache(maxsize=256)(value_pattern)


@functools.lru_cache(maxsize=256)
def _byte_pattern(value: str) -> re.Pattern[bytes]:
    """A value in raw file bytes: a substring, ASCII case-insensitive, any whitespace between its words."""
    return re.compile(rb"\s+".join(re.escape(w.encode("utf-8")) for w in value.split()), re.IGNORECASE)


def mentions(text: str, values: set[str]) -> bool:
    return any(_pattern(v).search(text) for v in values if v.strip())


def hits(texts: list[str], values: set[str]) -> int:
    return sum(len(_pattern(v).findall(text)) for text in texts for v in values if v.strip())


def byte_hits(data: bytes, values: set[str]) -> int:
    return sum(len(_byte_pattern(v).findall(data)) for v in values if v.strip())


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
        else:  # facts as (slot, value) pairs, a tuple of strings (a pin's anchors), or block references
            out += [t for v in value for t in ([str(x) for x in v.values() if isinstance(x, str)]
                                               if isinstance(v, dict) else [v if isinstance(v, str) else str(v[1])])]
    return out


def _personal_texts(ledger: Ledger, streams: Sequence[StreamKey]) -> list[str]:
    return [t for stream in streams for r in ledger.read(stream=stream) for t in personal_texts(r.event)]




def _cell_texts(cell: Any) -> list[str]:
    if cell is None:
        return []
    if isinstance(cell, list):  # facts: [{slot, value}, ...]
        return [str(f["value"]) for f in cell]
    return [str(cell)]


def _table_texts(store: ProjectionStore, streams: Sequence[StreamKey], *, inside: bool = True) -> list[str]:
    """The text cells of the projection rows of `streams` (or, `inside=False`, of every other stream)."""
    wanted = {(s.run_id, s.system, s.episode_id) for s in streams}
    out = []
    for table, cols in PLAINTEXT_COLUMNS.items():
        rows = store.conn.execute(f"SELECT run_id, system, episode_id, {', '.join(cols)} FROM {table}").fetchall()
        for row in rows:
            if (tuple(row[:3]) in wanted) == inside:
                out += [t for cell in row[3:] for t in _cell_texts(cell)]
    return out


def _file_bytes(path: str) -> bytes:
    blobs = [Path(p).read_bytes() for p in (path, path + ".wal") if Path(p).is_file()]
    return b"".join(blobs)


def scan(ledger: Ledger, stream: StreamKey, store: ProjectionStore, rendered: str | Mapping[StreamKey, str],
         values: set[str], exports: Sequence[Path] = (), *, streams: Sequence[StreamKey] = (),
         ) -> tuple[dict[str, int], tuple[str, ...], int]:
    """Residue per place; the places in order; how many values were too short for the byte scan.

    `streams` are the data subject's streams (default: `stream` alone); only
    their events and projection rows are read.
    """
    residue, _, short = scan_detail(ledger, stream, store, rendered, values, exports, streams=streams)
    return residue, tuple(residue), short


def keys_left(ledger: Ledger, streams: Sequence[StreamKey]) -> int:
    """Keys that the `key_shredded` events of `streams` name and the key store still holds.

    Needs no value: an erasure interrupted before its key rewrite shows here
    whatever a repeated call no longer knows to look for.
    """
    if ledger.keys is None:
        return 0
    named = {k for s in streams for r in ledger.read(stream=s, event_types=["key_shredded"])
             if isinstance(r.event, KeyShredded) for k in r.event.key_ids}
    return sum(k in ledger.keys for k in named)


def readable_erased_blobs(ledger: Ledger, stream: StreamKey) -> int:
    """Blocks of the stream's erased records whose bytes the blob table still gives back (should be none)."""
    sealed = ledger.sealed_keys(stream)
    found = 0
    for r in ledger.read(stream=stream, event_types=["turn_recorded"]):
        if not isinstance(r.event, TurnRecorded) or r.event.text != ERASED:
            continue
        for ref in r.event.blocks:
            sha = ref.get("sha256")
            if isinstance(sha, str) and ledger.get_blob(sha, key_ids=sealed.get(r.seq, set())).state == "ok":
                found += 1
    return found


def scan_detail(ledger: Ledger, stream: StreamKey, store: ProjectionStore, rendered: str | Mapping[StreamKey, str],
                values: set[str], exports: Sequence[Path] = (), *, streams: Sequence[StreamKey] = (),
                ) -> tuple[dict[str, int], tuple[str, ...], int]:
    """`scan`, and the files whose bytes could not be attributed (another stream shows the value).

    Each stream is a place of its own (its decrypted events, its projection
    rows, its rendered prompt: `rendered` is the text of `stream`, or the
    text per stream), so the receipt names every stream it read.
    """
    subject = tuple(streams) or (stream,)
    prompts = {stream: rendered} if isinstance(rendered, str) else dict(rendered)
    residue: dict[str, int] = {}
    for s in subject:
        residue[f"events of {s} (decrypted)"] = hits(_personal_texts(ledger, (s,)), values)
        residue[f"projection rows of {s}"] = hits(_table_texts(store, (s,)), values)
        if s in prompts:
            residue[f"rendered prompt of {s}"] = hits([prompts[s]], values)
    residue["key store (keys named by the erasures of these streams)"] = keys_left(ledger, subject)
    for s in subject:
        residue[f"blob table of {s} (bytes of erased records)"] = readable_erased_blobs(ledger, s)
    if exports:  # Parquet (pyarrow.parquet and its file systems) is loaded only when an export is scanned
        from ledgermem.ledger.parquet import ParquetLedger
    for folder in exports:
        # Parquet pages are compressed: look at the decoded rows, opened with the (now shredded) keys.
        exported = ParquetLedger(folder, keys=ledger.keys, run_id=stream.run_id)
        try:
            residue[f"export {folder}"] = hits(_personal_texts(exported, subject), values)
        finally:
            exported.conn.close()  # not close(): the key store is the memory's own
    long_values = {v for v in values if len(v.encode("utf-8")) >= MIN_BYTES_SCANNED}
    key_file = ledger.keys.path if ledger.keys is not None else ":memory:"
    files = [p for p in (ledger.path, store.path, key_file) if p != ":memory:"]
    others = _table_texts(store, subject, inside=False)
    held_elsewhere = {v for v in long_values if any(mentions(t, {v}) for t in others)}
    shared: list[str] = []
    for path in files:
        data = _file_bytes(path)
        looked_for = long_values - held_elsewhere if path == store.path else long_values
        if looked_for != long_values:
            shared.append(Path(path).name)
        residue[f"file {Path(path).name}"] = byte_hits(data, looked_for)
    return residue, tuple(shared), len(values) - len(long_values)


def receipt(events: tuple[Any, ...], residue: dict[str, int], places: tuple[str, ...],
            short: int) -> ErasureReceipt:
    shredded = next(e for e in events if isinstance(e, KeyShredded))
    facts = tuple((e.summary_id, e.slot, e.collateral) for e in events if isinstance(e, FactErased))
    return ErasureReceipt(
        request=shredded.request, legal_basis=shredded.legal_basis, facts=facts, records=shredded.records,
        summaries=shredded.summaries, indexes=shredded.indexes, keys_shredded=shredded.key_ids,
        places_scanned=places, residue=residue, not_byte_scanned=short,
    )
