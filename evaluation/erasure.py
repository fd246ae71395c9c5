"""Erasure in a finished run: every system's copy of the episode, then every file of the run.

The data subject of an erasure is one episode of one run. Its values live in
every system's stream of that episode (`three_layer` and the baselines, each
a copy of the same dialogue, gold and probes), and in the files derived from
the ledger (`probe_predictions.csv`, `episode_logs.jsonl`, `report.md`, ...).
`erase_in_run`:

1. decides once, for every system's stream of the episode, what goes
   (`gate.erasure.plan_erasure`: `fact_erased` / `key_shredded` per stream,
   lineage), appends each stream's events, destroys the keys and rebuilds
   the projection file once;
2. scans the subject's decrypted events and projection rows, every
   system's rendered prompt, the Redis entry and the Parquet exports named,
   and the bytes of the three DuckDB files;
3. rewrites the derived files from the ledger (erased values read
   `[erased]`) and scans every file of the run folder: the rows of this
   episode in CSV and JSON Lines files, the table rows of other files that
   name no other episode, and the bytes of any file that is not text.

Other episodes may hold the same value (two people who live in the same
city): their streams, rows and table lines are neither erased nor scanned.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ledgermem.evaluation import baselines
from ledgermem.evaluation.errors import EvaluationError
from ledgermem.memory.errors import RunNotFound
from ledgermem.evaluation.outputs import FILES, write_outputs
from ledgermem.gate.erasure import Erase, gold_to_erase, names_its_target, plan_erasure, planted_of
from ledgermem.projections.events import EpisodeGold, FactErased, KeyShredded
from ledgermem.ledger.keys import key_path
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.erasure import (
    MIN_BYTES_SCANNED,
    ErasureReceipt,
    byte_hits,
    hits,
    receipt,
    scan_detail,
    stream_state,
    to_erase,
)
from ledgermem.memory.memory import Memory
from ledgermem.projections.materialise import ProjectionStore, projection_path

REPORT = "report.md"


def erase_in_run(path: Path, *, system: str, episode: str, legal_basis: str, **target: Any) -> ErasureReceipt:
    """Open a finished run for writing and erase from one of its episodes; returns the run's receipt.

    `target` is what `Memory.erase` takes (`slot`, `value`, `record_id`,
    `subject`), plus `exports` (Parquet folders to scan) and `cache` (the
    run's Redis hot cache). A `value` without a `slot` that nothing readable
    holds any more is a no-op whose receipt is the scan; so is a request an
    earlier call already carried out (a repeated or interrupted erasure is
    finished, and its receipt reports the whole state).
    """
    if system != "three_layer":
        raise EvaluationError(f"erase names the three_layer stream of an episode (the baselines' copies of it "
                              f"are erased with it); got system {system!r}")
    cache = target.pop("cache", None)
    exports = target.pop("exports", ())
    path = Path(path)
    with Ledger(path, create=False) as ledger, ProjectionStore(projection_path(path)) as projections:
        run_id = next((r.stream.run_id for r in ledger.read(event_types=["run_started"])), None)
        stream = StreamKey(run_id or "", system, episode)
        streams = [s for s, _ in ledger.streams()]
        if stream not in streams:
            known = sorted(s.episode_id for s in streams if s.system == system and s.episode_id)
            raise RunNotFound(f"{path}: no episode {episode!r} of system {system!r}; episodes: {', '.join(known[:10])}")
        subject = subject_streams(streams, stream)
        memory = Memory(ledger, stream, "heuristic", projections=projections, cache=cache)
        request = Erase(legal_basis=legal_basis, key_prefix=memory.key_prefix, **target)
        gold = gold_to_erase(_planted(ledger, subject), request)  # read before any copy is erased
        receipts, values = _erase_streams(ledger, projections, memory, request, _copies(subject, stream), gold)
        if names_its_target(request):
            receipts = erased_so_far(ledger, subject, request)  # earlier calls of the same request too
        rendered = {s: _rendered(ledger, memory, s) for s in subject}
        residue, shared, short = scan_detail(ledger, stream, projections, rendered, values, exports, streams=subject)
        if cache is not None:
            residue |= cache.residue(stream, values)
    rebuild_run_files(path, run_id)
    others = {s.episode_id for s in streams if s.episode_id and s.episode_id != episode and s.run_id == run_id}
    own = {path, Path(projection_path(path)), Path(key_path(path))}
    residue |= scan_run_files(path.parent, episode, others, values, skip=own | {Path(f"{p}.wal") for p in own})
    residue |= stale_rows(path, run_id, episode)
    return _run_receipt(request, str(stream), receipts, residue, shared, short)


def subject_streams(streams: Sequence[StreamKey], stream: StreamKey) -> list[StreamKey]:
    """Every system's stream of the episode, `stream` first: what the scan reads."""
    same = sorted(s for s in streams if s.run_id == stream.run_id and s.episode_id == stream.episode_id
                  and s != stream)
    return [stream, *same]


def _copies(subject: Sequence[StreamKey], stream: StreamKey) -> list[StreamKey]:
    """The baselines' copies of the episode, erased with its three_layer stream."""
    return [s for s in subject if s != stream]


def _planted(ledger: Ledger, subject: Sequence[StreamKey]) -> list[tuple[str, str, int]]:
    """The dataset's gold (slot, value, turn) as every copy of the episode still shows it."""
    out: list[tuple[str, str, int]] = []
    for s in subject:
        for r in ledger.read(stream=s, event_types=["episode_gold"]):
            if isinstance(r.event, EpisodeGold):
                out += planted_of(r.event)
    return list(dict.fromkeys(out))


def _erase_streams(ledger: Ledger, projections: ProjectionStore, memory: Memory, request: Erase,
                   copies: Sequence[StreamKey], gold: set[str]) -> tuple[list[ErasureReceipt], set[str]]:
    """Erase from the three_layer stream and the baselines' copies; the receipts, and the values to scan for.

    One decision covers every stream: each stream's state and sealed values
    are read before anything is appended, then the copies' events go in
    and the three_layer stream's last (its facts name the values: a call
    interrupted half-way leaves them readable for the call that finishes it).
    """
    streams = [to_erase(ledger, memory.stream, memory.state),
               *(to_erase(ledger, s, stream_state(ledger, s, projections)) for s in copies)]
    plan = plan_erasure(request, streams, gold=gold, in_run=True)
    memory.carry_out(plan, copies)
    receipts = [replace(receipt(part.events, {}, (), 0), streams=(part.name,)) for part in plan.parts]
    return receipts, set(plan.values)


def erased_so_far(ledger: Ledger, subject: Sequence[StreamKey], request: Erase) -> list[ErasureReceipt]:
    """Every erasure of the same request (description and legal basis) in the subject's streams, from the ledger.

    A receipt built from these reports the state the streams are in, not
    what one call happened to append: a repeated call reports the first
    call's facts and keys as well.
    """
    out = []
    for s in subject:
        facts: list[tuple[str, str, bool]] = []
        for r in ledger.read(stream=s, event_types=["fact_erased", "key_shredded"]):
            e = r.event
            if isinstance(e, FactErased):
                facts.append((e.summary_id, e.slot, e.collateral))
            elif isinstance(e, KeyShredded):
                if e.request == request.describe() and e.legal_basis == request.legal_basis:
                    out.append(ErasureReceipt(request=e.request, legal_basis=e.legal_basis, facts=tuple(facts),
                                              records=e.records, summaries=e.summaries, indexes=e.indexes,
                                              keys_shredded=e.key_ids, places_scanned=(), streams=(str(s),)))
                facts = []
    return out


def _rendered(ledger: Ledger, memory: Memory, stream: StreamKey) -> str:
    """What the system of `stream` shows the model now."""
    if stream == memory.stream:
        return memory.render().text
    if stream.system in baselines.BASELINES:
        return baselines.render(baselines.fold(r.event for r in ledger.read(stream=stream))).text
    return ""


def _run_receipt(request: Erase, main: str, receipts: list[ErasureReceipt], residue: dict[str, int],
                 shared: tuple[str, ...], short: int) -> ErasureReceipt:
    """One receipt for the run: ids of the three_layer stream, keys and streams of every copy."""
    own = [r for r in receipts if r.streams == (main,)]
    facts: dict[tuple[str, str], tuple[str, str, bool]] = {}
    for r in own:
        for sid, slot, collateral in r.facts:
            facts.setdefault((sid, slot), (sid, slot, collateral))
    return ErasureReceipt(
        request=request.describe(), legal_basis=request.legal_basis, facts=tuple(facts.values()),
        records=tuple(sorted({x for r in own for x in r.records})),
        summaries=tuple(sorted({x for r in own for x in r.summaries})),
        indexes=tuple(sorted({x for r in own for x in r.indexes})),
        keys_shredded=tuple(sorted({k for r in receipts for k in r.keys_shredded})),
        places_scanned=tuple(residue), residue=residue, not_byte_scanned=short,
        streams=tuple(dict.fromkeys(s for r in receipts for s in r.streams)), shared_elsewhere=shared,
    )


# -- the run's files ----------------------------------------------------------------


def rebuild_run_files(path: Path, run_id: str | None) -> list[Path]:
    """Rewrite the derived files the run folder holds (and `report.md` if there is one) from the ledger."""
    folder = path.parent
    written: list[Path] = []
    if any((folder / name).exists() for name in (*FILES, REPORT)):
        written += write_outputs(path, run_id)
    if (folder / REPORT).exists():
        from ledgermem.evaluation.report import write_report  # plotting is heavy: only when there is a report

        written += write_report(folder)
    return written


def stale_rows(path: Path, run_id: str | None, episode: str) -> dict[str, int]:
    """Per derived file with rows per episode, the rows of `episode` that the ledger would not write now.

    Needs no value: a repeated call, which can no longer read what an
    earlier one erased, still sees a derived row that outlived the erasure.
    """
    folder = path.parent
    out: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="ledgermem-erase-") as tmp:
        for fresh in write_outputs(path, run_id, folder=Path(tmp)):
            actual = folder / fresh.name
            want, have = _episode_rows(fresh, episode), _episode_rows(actual, episode) if actual.exists() else None
            if want is not None and have is not None:
                out[f"file {fresh.name} (rows of episode {episode} the ledger does not hold)"] = sum(
                    (Counter(have) - Counter(want)).values())
    return out


def _episode_rows(file: Path, episode: str) -> list[str] | None:
    """The rows of `episode` in a CSV or JSON Lines file with an `episode_id`; None for any other file."""
    text = file.read_text(encoding="utf-8", errors="replace")
    if file.suffix == ".csv":
        rows = list(csv.reader(io.StringIO(text)))
        if not rows or "episode_id" not in rows[0]:
            return None
        col = rows[0].index("episode_id")
        return [json.dumps(row) for row in rows[1:] if len(row) > col and row[col] == episode]
    if file.suffix == ".jsonl":
        return [ln for ln in text.splitlines() if _episode_of(ln) == episode]
    return None


def _episode_of(line: str) -> Any:
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj.get("episode_id") if isinstance(obj, dict) else None


def scan_run_files(folder: Path, episode: str, others: set[str], values: set[str],
                   skip: Collection[Path] = ()) -> dict[str, int]:
    """Residue per file of the run folder (recursively), outside `skip`, for the rows of `episode`."""
    residue: dict[str, int] = {}
    long_values = {v for v in values if len(v.encode("utf-8")) >= MIN_BYTES_SCANNED}
    for file in sorted(p for p in folder.rglob("*") if p.is_file() and p not in skip):
        name = file.relative_to(folder).as_posix()
        data = file.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            residue[f"file {name} (bytes)"] = byte_hits(data, long_values)
            continue
        scoped, texts = _texts_of(file.suffix.lower(), text, episode, others)
        residue[f"file {name}" + (f" (rows of episode {episode})" if scoped else "")] = hits(texts, values)
    return residue


def _texts_of(suffix: str, text: str, episode: str, others: set[str]) -> tuple[bool, list[str]]:
    """(whether only this episode's rows were read, the texts read)."""
    if suffix == ".csv":
        rows = list(csv.reader(io.StringIO(text)))
        if rows and "episode_id" in rows[0]:
            col = rows[0].index("episode_id")
            return True, [c for row in rows[1:] if len(row) > col and row[col] == episode for c in row]
        return False, [c for row in rows for c in row]
    if suffix == ".jsonl":
        out: list[str] = []
        scoped = False
        for line in text.splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                out.append(line)
                continue
            if isinstance(obj, dict) and "episode_id" in obj:
                scoped = True
                if obj["episode_id"] != episode:
                    continue
            out += list(_strings(obj))
        return scoped, out
    if suffix == ".json":
        try:
            return False, list(_strings(json.loads(text)))
        except ValueError:
            return False, [text]
    # Markdown and other text: a table row that names another episode (and not this one) is that episode's.
    lines = text.splitlines()
    kept = [ln for ln in lines if not _other_episodes_row(ln, episode, others)]
    return len(kept) != len(lines), kept


def _other_episodes_row(line: str, episode: str, others: set[str]) -> bool:
    if not line.lstrip().startswith("|"):
        return False
    cells = {c.strip().strip("`") for c in line.strip().strip("|").split("|")}
    return bool(cells & others) and episode not in cells


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)
    elif obj is not None:
        yield str(obj)
