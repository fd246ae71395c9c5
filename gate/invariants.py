"""Invariants I1–I5 and the structural invariants, checked against any seq.

Each check is a function of the ledger's events and the state folded from
them (optionally as of a seq), plus, where it matters, the materialised
projections and the key store. A check returns every violation it finds,
each naming the invariant, the seq and the ids involved, so a report says
exactly what broke where. `audit` runs them all over a run.

    I1  fact conservation         every fact observation in the ledger still resolves to its summary,
                                  with its value and its full text (or erased by an event)
    I2  top-level reachability    the newest surviving value of every slot is in the rendered prompt's
                                  top level (registry, chain, or a live index title), save the slots the
                                  registry's own limits leave out (`projections.render.registry_plan`)
    I3  provenance                every surviving fact's evidence resolves to a raw record
    I4  extraction completeness   the dataset's gold facts and evidence records (recorded in the stream's
                                  `episode_gold`) were captured by summaries; without gold, the facts the
                                  lexical detector finds in the user's own words (`gate.extraction`)
    I5  deletion verifiability    shredded keys are gone; erased items read as erased in the state and in
                                  every version of the projections; their evidence is unreachable
    hash_chain, contiguity        the ledger's hash chain, seq and stream versions
    scd2                          per key: no overlap, no gap, at most one open version, valid_to > valid_from
    replay                        the materialised projections equal a fold of the ledger from scratch

I1, I2, I3, I5 and replay compare values. A sealed value whose key is
neither in the key store nor destroyed by a `key_shredded` event (the key
store was lost or deleted) reads as `[sealed]` everywhere, and comparing
placeholders proves nothing: those checks are then reported as not checked,
with the reason, and the audit fails. I4 says itself what it compared: a
gold fact it cannot read counts as evidence of its record (`gate.extraction`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledgermem.gate.erasure import raw_text_expired
from ledgermem.gate.extraction import Gold, gold_of, measure_extraction
from ledgermem.projections.events import FactErased, KeyShredded, SummaryCreated
from ledgermem.ledger.keys import ERASED, KeyStore, key_path
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey
from ledgermem.projections.materialise import History, ProjectionStore, rebuild
from ledgermem.projections.render import Rendered, registry_plan, render
from ledgermem.projections.scd2 import TABLES
from ledgermem.projections.state import EpisodeState, evolve

INVARIANTS = ("I1", "I2", "I3", "I4", "I5", "hash_chain", "contiguity", "scd2", "replay")
NEEDS_VALUES = ("I1", "I2", "I3", "I5", "replay")  # cannot be made over unreadable sealed values
MAX_SEQ = 2**63 - 1
EXEMPT = "exempt (baseline)"


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str
    stream: str
    seq: int | None
    ids: tuple[str, ...]
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "stream": self.stream, "seq": self.seq, "ids": list(self.ids),
                "message": self.message}


@dataclass(frozen=True, slots=True)
class CheckResult:
    invariant: str
    violations: tuple[Violation, ...]
    detail: dict[str, Any] = field(default_factory=dict)
    not_checked: str = ""  # why the check could not be made (then it is not ok either)

    @property
    def ok(self) -> bool:
        return not self.violations and not self.not_checked


@dataclass(frozen=True, slots=True)
class AuditReport:
    run_id: str | None
    at_seq: int | None
    results: tuple[CheckResult, ...]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def failed(self) -> list[str]:
        return [r.invariant for r in self.results if not r.ok]

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "at_seq": self.at_seq, "ok": self.ok,
            "checks": [{"invariant": r.invariant, "ok": r.ok, "checked": not r.not_checked,
                        "not_checked": r.not_checked or None, "detail": r.detail,
                        "violations": [v.as_dict() for v in r.violations]} for r in self.results],
        }


# --- per-stream checks over a folded state ---------------------------------------------


def check_i1(stream: str, events: Sequence[RecordedEvent], state: EpisodeState) -> list[Violation]:
    erased = {(e.event.summary_id, e.event.slot) for e in events if isinstance(e.event, FactErased)}
    redacted = {s for e in events if isinstance(e.event, KeyShredded) for s in e.event.summaries}
    out = []
    for r in events:
        e = r.event
        if not isinstance(e, SummaryCreated):
            continue
        found = state.summaries.get(e.summary_id)
        if found is None:
            out.append(Violation("I1", stream, r.seq, (e.summary_id,), "summary of a recorded fact no longer exists"))
            continue
        if found.text != e.text and not (e.summary_id in redacted and found.text == ERASED):
            out.append(Violation("I1", stream, r.seq, (e.summary_id,),
                                 f"summary text changed: {len(e.text)} characters recorded, {len(found.text)} kept"))
        held = dict(found.facts)
        for slot, value in e.facts:
            kept = held.get(slot)
            if kept != value and not (kept == ERASED and ((e.summary_id, slot) in erased or value == ERASED)):
                out.append(Violation("I1", stream, r.seq, (e.summary_id, slot),
                                     f"fact {slot!r} is {'missing' if kept is None else 'altered'} in its summary"))
    return out


def check_i2(stream: str, seq: int, state: EpisodeState, rendered: Rendered) -> list[Violation]:
    top = "\n".join(i.text for name in ("registry", "chain", "index") for i in rendered.part(name).items)
    capped = set(registry_plan(state, rendered.budget).left_out)
    return [
        Violation("I2", stream, seq, (slot, sid), f"current value of {slot!r} is not at the top level of the prompt")
        for slot, (value, sid) in state.current_values().items()
        if f"{slot}={value}" not in top and f"slot:{slot}" not in capped
    ]


def check_i3(stream: str, seq: int, state: EpisodeState) -> list[Violation]:
    """Every surviving fact's evidence resolves to a raw record that is readable, or whose raw text alone a
    retention policy expired (its raw key shredded, the turn's key, and so the fact, kept)."""
    out = []
    expired = raw_text_expired(state)
    for s in state.summaries.values():
        if all(v == ERASED for _, v in s.facts):
            continue
        for rid in s.raw_ids:
            rec = state.raw.get(rid)
            if rec is None or (rec.user == ERASED and rid not in expired):
                why = "does not exist" if rec is None else "was erased while a surviving fact cites it"
                out.append(Violation("I3", stream, seq, (s.summary_id, rid), f"evidence {rid} {why}"))
    return out


def check_i4(stream: str, seq: int, state: EpisodeState, floor: float | None,
             gold: Gold | None = None) -> tuple[list[Violation], dict[str, Any]]:
    """I4 for one stream (see `gate.extraction` for what is compared and what counts as captured)."""
    found = measure_extraction(state, gold)
    empty = "; the stream holds no summary at all" if not state.summaries else ""
    out = [
        Violation("I4", stream, seq, (rid, *slots),
                  f"nothing was captured from gold record {rid} "
                  f"({'gold ' + ', '.join(map(repr, slots)) if slots else 'gold evidence'}{empty})")
        for rid, slots in found.missed
    ]
    recall = found.recall
    if floor is not None and recall is not None and recall < floor:
        out.append(Violation("I4", stream, seq, found.gaps,
                             f"extraction recall {recall} against {found.label()} is under the floor {floor}"))
    return out, found.as_dict()


def check_i5(stream: str, seq: int, state: EpisodeState, keys: KeyStore | None,
             tables: History | None = None) -> list[Violation]:
    out = [
        Violation("I5", stream, seq, (k,), "key still exists after key_shredded: the erasure only flipped a flag")
        for k in state.shredded_keys
        if keys is not None and k in keys
    ]
    erased_summaries = {s.summary_id for s in state.summaries.values() if s.facts and all(v == ERASED for _, v in s.facts)}
    needed = {r for s in state.summaries.values() if any(v != ERASED for _, v in s.facts) for r in s.raw_ids}
    for sid in sorted(erased_summaries):
        s = state.summaries[sid]
        if s.text != ERASED:
            out.append(Violation("I5", stream, seq, (sid,), "every fact of the summary is erased but its text is readable"))
        for rid in s.raw_ids:
            rec = state.raw.get(rid)
            if rec is not None and rec.user != ERASED and rid not in needed:
                out.append(Violation("I5", stream, seq, (sid, rid), f"evidence {rid} of an erased fact is still readable"))
    if tables is not None:
        out += _i5_tables(stream, seq, state, tables)
    return out


def _i5_tables(stream: str, seq: int, state: EpisodeState, tables: History) -> list[Violation]:
    redacted = {s.summary_id for s in state.summaries.values() if s.text == ERASED}
    gone = {r.record_id for r in state.raw.values() if r.user == ERASED}
    out = []
    for row in tables["summary_versions"]:
        if _stream(row) == stream and row["summary_id"] in redacted and (
                row["text"] != ERASED or any(f["value"] != ERASED for f in row.get("inferences") or [])):
            out.append(Violation("I5", stream, row["valid_from_seq"], (row["summary_id"],),
                                 "a projection version still holds the text of an erased summary"))
    for row in tables["raw_records"]:
        if _stream(row) == stream and row["record_id"] in gone and row["user_text"] != ERASED:
            out.append(Violation("I5", stream, row["valid_from_seq"], (row["record_id"],),
                                 "a projection version still holds an erased raw record"))
    unpinned = {p.pin_id for p in state.pins.values() if p.redacted}
    for row in tables.get("pin_versions", []):
        if _stream(row) == stream and row["pin_id"] in unpinned and row["text"] != ERASED:
            out.append(Violation("I5", stream, row["valid_from_seq"], (row["pin_id"],),
                                 "a projection version still holds the text of an erased pin"))
    return out


def _stream(row: dict[str, Any]) -> str:
    return str(StreamKey(row["run_id"], row["system"], row["episode_id"]))


# --- structural checks ----------------------------------------------------------------------


def check_chain(ledger: Ledger) -> list[Violation]:
    report = ledger.verify()
    if report.ok:
        return []
    kind = "hash_chain" if "hash" in report.reason else "contiguity"
    return [Violation(kind, "", report.first_broken_seq, (), report.reason)]


def _as_of(rows: Iterable[dict[str, Any]], seq: int | None) -> list[dict[str, Any]]:
    if seq is None:
        return list(rows)
    out = []
    for r in rows:
        if r["valid_from_seq"] <= seq:
            closed = r["valid_to_seq"] is not None and r["valid_to_seq"] <= seq
            out.append(r if closed else {**r, "valid_to_seq": None, "valid_to_turn": None})
    return out


def check_scd2(tables: History, seq: int | None = None) -> list[Violation]:
    out = []
    for spec in TABLES:
        by_key: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
        for row in _as_of(tables[spec.name], seq):
            by_key[(_stream(row),) + tuple(row[n] for n, _ in spec.key)].append(row)
        for (stream, *key), rows in by_key.items():
            out += _scd2_key(spec.name, stream, tuple(map(str, key)), sorted(rows, key=lambda r: r["valid_from_seq"]))
    return out


def _scd2_key(table: str, stream: str, key: tuple[str, ...], rows: list[dict[str, Any]]) -> list[Violation]:
    out = []
    if sum(r["valid_to_seq"] is None for r in rows) > 1:
        out.append(Violation("scd2", stream, rows[-1]["valid_from_seq"], key, f"{table}: more than one open version"))
    for r in rows:
        if r["valid_to_seq"] is not None and r["valid_to_seq"] <= r["valid_from_seq"]:
            out.append(Violation("scd2", stream, r["valid_from_seq"], key, f"{table}: valid_to_seq <= valid_from_seq"))
    for a, b in zip(rows, rows[1:]):
        end = MAX_SEQ if a["valid_to_seq"] is None else a["valid_to_seq"]
        if end > b["valid_from_seq"]:
            out.append(Violation("scd2", stream, b["valid_from_seq"], key, f"{table}: versions overlap"))
        elif end < b["valid_from_seq"] and table != "window_versions":
            out.append(Violation("scd2", stream, b["valid_from_seq"], key, f"{table}: gap between versions"))
    return out


def check_replay(live: History, replayed: History, seq: int | None = None) -> list[Violation]:
    out = []
    for name, rows in replayed.items():
        mine, theirs = _as_of(live.get(name, []), seq), _as_of(rows, seq)
        if mine != theirs:
            i = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
            ids = (str(mine[i].get("version_id")),) if i < len(mine) else ()
            out.append(Violation("replay", "", None, ids,
                                 f"{name}: live table differs from the replay at row {i} "
                                 f"({len(mine)} live rows, {len(theirs)} replayed)"))
    return out


# --- the audit ------------------------------------------------------------------------------


def stream_checks(stream: StreamKey, events: Sequence[RecordedEvent], keys: KeyStore | None,
                  tables: History | None, i4_floor: float | None) -> dict[str, tuple[list[Violation], dict[str, Any]]]:
    state = EpisodeState()
    for r in events:
        state = evolve(state, r.event)
    name, seq = str(stream), (events[-1].seq if events else 0)
    if state.config.system != "three_layer":
        # A baseline kept for comparison promises none of I1-I4 (it deletes by design); what it held of a
        # data subject must still be erasable.
        return {
            "I1": ([], {}), "I2": ([], {}), "I3": ([], {}),
            "I4": ([], {"against": EXEMPT, "source": "exempt", "compared": 0, "captured": 0, "recall": None,
                        "skipped": 0, "gaps": [], "missed_records": []}),
            "I5": (check_i5(name, seq, state, keys, tables), {"shredded_keys": len(state.shredded_keys)}),
        }
    i4, i4_detail = check_i4(name, seq, state, i4_floor, gold_of(r.event for r in events))
    return {
        "I1": (check_i1(name, events, state), {}),
        "I2": (check_i2(name, seq, state, render(state)), {}),
        "I3": (check_i3(name, seq, state), {}),
        "I4": (i4, i4_detail),
        "I5": (check_i5(name, seq, state, keys, tables), {"shredded_keys": len(state.shredded_keys)}),
    }


def _i4_totals(streams: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's I4 detail: totals over the streams that promise I4, and every stream's own line."""
    checked = [s for s in streams if s["source"] != "exempt"]
    compared, captured = sum(s["compared"] for s in checked), sum(s["captured"] for s in checked)
    against: dict[str, int] = {}
    for s in streams:
        against[s["source"]] = against.get(s["source"], 0) + 1
    return {"compared": compared, "captured": captured,
            "recall": round(captured / compared, 4) if compared else None,
            "gaps": sum(len(s["gaps"]) for s in checked), "sources": against, "streams": streams}


def audit(ledger: Ledger, projections: ProjectionStore, *, run_id: str | None = None,
          at_seq: int | None = None, i4_floor: float | None = None) -> AuditReport:
    """Every invariant over a run (or the whole ledger), as of `at_seq` (default: now)."""
    live = projections.read_tables(run_id)
    found: dict[str, list[Violation]] = {name: [] for name in INVARIANTS}
    i4_streams: list[dict[str, Any]] = []
    unreadable: dict[str, int] = {}
    shredded = {k for r in ledger.read(run_id=run_id, event_types=["key_shredded"])
                if isinstance(r.event, KeyShredded) for k in r.event.key_ids}
    for stream, _ in ledger.streams(run_id):
        if not stream.episode_id:
            continue
        events = list(ledger.read(stream=stream, to_seq=at_seq))
        if lost := missing_keys(ledger, stream, shredded, at_seq):
            unreadable[str(stream)] = len(lost)
        for name, (violations, detail) in stream_checks(stream, events, ledger.keys, live, i4_floor).items():
            found[name] += violations
            if name == "I4":
                i4_streams.append({"stream": str(stream), **detail})
    for v in check_chain(ledger):
        found[v.invariant].append(v)
    found["scd2"] += check_scd2(live, at_seq)
    found["replay"] += check_replay(live, rebuild(ledger, run_id), at_seq)
    why = _unreadable_reason(ledger, unreadable) if unreadable else ""
    results = tuple(
        CheckResult(name, (), {}, why) if why and name in NEEDS_VALUES  # a comparison of placeholders: no verdict
        else CheckResult(name, tuple(found[name]), _i4_totals(i4_streams) if name == "I4" else {})
        for name in INVARIANTS
    )
    return AuditReport(run_id, at_seq, results)


def missing_keys(ledger: Ledger, stream: StreamKey, shredded: set[str], at_seq: int | None = None) -> set[str]:
    """Keys the stream's sealed values name (up to `at_seq`) that the key store lacks and were not `shredded`.

    `shredded`: the keys key_shredded events destroyed, at any seq (a key
    shredded after `at_seq` is gone from the store too).
    """
    named = {k for seq, ids in ledger.sealed_keys(stream).items() if at_seq is None or seq <= at_seq for k in ids}
    keys = ledger.keys
    return {k for k in named - shredded if keys is None or k not in keys}


def _unreadable_reason(ledger: Ledger, unreadable: dict[str, int]) -> str:
    first = min(unreadable)
    store = (f"the key store {ledger.keys.path}" if ledger.keys is not None
             else "no key store (a Parquet export holds none: pass --keys)" if Path(ledger.path).is_dir()
             else f"no key store ({key_path(ledger.path)} is missing)")
    return (f"{store}: {sum(unreadable.values())} key(s) named by sealed values of {len(unreadable)} stream(s) "
            f"(first {first}) are not there and no key_shredded event destroyed them; those values read as "
            "[sealed], so this check cannot be made: restore the key store")
