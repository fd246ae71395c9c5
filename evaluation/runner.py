"""The runner: a dataset through one or more memory systems into one ledger.

Layout of a run: `<runs_dir>/<run_id>/ledger.duckdb` holds everything; the
CSV files beside it are derived from the ledger and can be rebuilt from it.
Nothing is created before the inputs have been checked, and an existing run
is never touched unless `force` is given.
"""

from __future__ import annotations

import platform
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any

from evaluation.datasets import Dataset, Episode, Probe
from evaluation.errors import RunExists, RunNotFound, UnknownSystem
from evaluation.judge import judge_string
from evaluation.metrics import EpisodeOutcome, ProbeOutcome, compute_metrics, turn_stats
from ledger.events import ProbeAnswered, ProbeAsked, ProbeJudged, RunFinished, RunStarted, ToolCalled
from ledger.keys import KeyStore, is_sealed
from ledger.parquet import MANIFEST, ParquetLedger
from ledger.store import Ledger, StreamKey
from memory.backends import make_backend
from memory.erasure import ErasureReceipt
from memory.memory import Memory
from projections.config import MemoryConfig
from projections.materialise import ProjectionStore, projection_path
from projections.tokens import default_tokenizer

SYSTEMS = ("three_layer",)
LEDGER_FILE = "ledger.duckdb"

Progress = Callable[[str, int], None]  # (what, how many units done since the last call)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    run_id: str
    runs_dir: Path = Path("runs")
    systems: tuple[str, ...] = ("three_layer",)
    backend: str = "heuristic"
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    limit: int | None = None
    force: bool = False
    strict: bool = False


@dataclass(frozen=True, slots=True)
class RunResult:
    run_id: str
    ledger_path: Path
    metrics: dict[str, dict[str, Any]]
    outcomes: list[EpisodeOutcome]


def ledger_path(runs_dir: Path, run_id: str) -> Path:
    return Path(runs_dir) / run_id / LEDGER_FILE


def resolve_run(run: str, runs_dir: Path = Path("runs")) -> Path:
    """A run id (under `runs_dir`), a ledger file, or a Parquet export directory, as an existing path."""
    direct = Path(run)
    if direct.is_file() or (direct / MANIFEST).is_file():
        return direct
    if direct.is_dir() and (direct / LEDGER_FILE).is_file():
        return direct / LEDGER_FILE
    candidate = ledger_path(runs_dir, run)
    if candidate.is_file():
        return candidate
    known = sorted(p.parent.name for p in Path(runs_dir).glob(f"*/{LEDGER_FILE}"))
    hint = f"known runs in {runs_dir}: {', '.join(known)}" if known else f"no runs in {runs_dir}"
    raise RunNotFound(f"unknown run {run!r}: no ledger at {candidate} ({hint})")


@contextmanager
def open_run(path: Path, *, keys: Path | None = None) -> Iterator[tuple[Ledger, ProjectionStore]]:
    """A run's ledger and projections, read-only; the ledger's connection also sees the projection tables.

    `path` is a ledger file (its projection file beside it) or a Parquet
    export directory (its projections are folded from the events into
    memory, decrypted with `keys` if given: an export carries no keys).
    """
    if Path(path).is_dir():
        with ParquetLedger(path, keys=KeyStore(keys, read_only=True) if keys else None) as ledger:
            proj = ProjectionStore.over(ledger.conn)
            proj.fill(ledger)
            ledger.conn.create_function("decrypt", _decrypt_with(ledger), ["VARCHAR"], "VARCHAR")
            yield ledger, proj
        return
    with Ledger(path, read_only=True) as ledger, ProjectionStore(projection_path(path), read_only=True) as proj:
        quoted = proj.path.replace("'", "''")  # ATTACH takes no parameters on every DuckDB version
        ledger.conn.execute(f"ATTACH '{quoted}' AS projections (READ_ONLY)")
        ledger.conn.execute("SET search_path = 'main,projections'")
        ledger.conn.create_function("decrypt", _decrypt_with(ledger), ["VARCHAR"], "VARCHAR")
        yield ledger, proj


def erase_in_run(path: Path, *, system: str, episode: str, legal_basis: str, **target: Any) -> ErasureReceipt:
    """Open a finished run for writing and erase from one of its episodes."""
    with Ledger(path, create=False) as ledger, ProjectionStore(projection_path(path)) as projections:
        run_id = next((r.stream.run_id for r in ledger.read(event_types=["run_started"])), None)
        stream = StreamKey(run_id or "", system, episode)
        if stream not in dict(ledger.streams()):
            known = sorted(s.episode_id for s, _ in ledger.streams() if s.system == system and s.episode_id)
            raise RunNotFound(f"{path}: no episode {episode!r} of system {system!r}; episodes: {', '.join(known[:10])}")
        memory = Memory(ledger, stream, "heuristic", projections=projections)
        return memory.erase(legal_basis=legal_basis, **target)


def _decrypt_with(ledger: Ledger) -> Callable[[str], str]:
    """`decrypt(column)` in SQL: sealed values opened with the run's keys (`[erased]` once shredded)."""

    def decrypt(value: str) -> str:
        return ledger.unseal(value) if is_sealed(value) else value

    return decrypt


def _versions(tokenizer: str) -> dict[str, Any]:
    out: dict[str, Any] = {"python": platform.python_version(), "tokenizer": tokenizer}
    for dist in ("ledgermem", "duckdb", "pyarrow", "tiktoken"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _prepare(opts: RunOptions) -> Path:
    unknown = [s for s in opts.systems if s not in SYSTEMS]
    if unknown:
        raise UnknownSystem(f"unknown system(s) {', '.join(unknown)}; this version has: {', '.join(SYSTEMS)}")
    opts.memory.validate()
    path = ledger_path(opts.runs_dir, opts.run_id)
    if path.exists():
        if not opts.force:
            raise RunExists(f"run {opts.run_id!r} already exists at {path}; pass --force to replace it "
                            "or choose another --run-id")
        shutil.rmtree(path.parent)
    return path


def run(dataset: Dataset, opts: RunOptions, progress: Progress | None = None) -> RunResult:
    """Run every system over the dataset's episodes; everything goes into the run's ledger."""
    if opts.memory.tokenizer == "auto":
        opts = replace(opts, memory=replace(opts.memory, tokenizer=default_tokenizer()))
    path = _prepare(opts)
    episodes = dataset.episodes[: opts.limit] if opts.limit else dataset.episodes
    backend = make_backend(opts.backend, tokenizer=opts.memory.tokenizer)
    tick = progress or (lambda what, n: None)
    with Ledger(path) as ledger, ProjectionStore(projection_path(path)) as projections:
        run_stream = StreamKey(opts.run_id)
        ledger.append(run_stream, [RunStarted(
            systems=opts.systems,
            config={"backend": opts.backend, "memory": opts.memory.to_dict(), "limit": opts.limit,
                    "strict": opts.strict, "personal_data": opts.memory.personal_data},
            versions=_versions(opts.memory.tokenizer),
            dataset={"name": dataset.name, "source": dataset.source, "hash": dataset.content_hash(),
                     "episodes": len(episodes)},
        )], expected_version=0)
        outcomes = []
        for system in opts.systems:
            for ep in episodes:
                memory = Memory(ledger, StreamKey(opts.run_id, system, ep.episode_id), backend,
                                config=opts.memory, lang=ep.lang, projections=projections, strict=opts.strict)
                outcomes.append(run_episode(memory, system, ep, tick))
        metrics = compute_metrics(outcomes)
        ledger.append(run_stream, [RunFinished(metrics=metrics)], expected_version=1)
    return RunResult(opts.run_id, path, metrics, outcomes)


def run_episode(memory: Memory, system: str, episode: Episode, tick: Progress) -> EpisodeOutcome:
    out = EpisodeOutcome(system, episode.episode_id)
    for t in episode.turns:
        out.count(r.event for r in memory.add_turn(t.user, t.agent, occurred_at=t.occurred_at))
        out.turns.append(turn_stats(memory.state))
        tick("turn", 1)
    for probe in episode.probes:
        outcome, events = ask_probe(memory, probe)
        out.count(r.event for r in memory.commit(events))
        out.probes.append(outcome)
        tick("probe", 1)
    return out


def ask_probe(memory: Memory, probe: Probe) -> tuple[ProbeOutcome, list[Any]]:
    """Ask one probe; returns its outcome and all its events, to be committed together."""
    turn = memory.state.turn
    answer = memory.answer(probe.question, probe_id=probe.probe_id)
    correct = judge_string(probe.answer, answer.text)
    tools = [e for e in answer.events if isinstance(e, ToolCalled)]
    events = [
        ProbeAsked(turn=turn, probe_id=probe.probe_id, probe_type=probe.type, slot=probe.fact_key,
                   text=probe.question, gold=probe.answer),
        *answer.events,
        ProbeAnswered(turn=turn, probe_id=probe.probe_id, text=answer.text, tool_calls=answer.tool_calls,
                      llm_calls=answer.llm_calls),
        ProbeJudged(turn=turn, probe_id=probe.probe_id, correct=correct, method="string", value=probe.answer),
    ]
    outcome = ProbeOutcome(
        probe_id=probe.probe_id, probe_type=probe.type, slot=probe.fact_key, question=probe.question,
        gold=probe.answer, answer=answer.text, correct=correct, tool_calls=len(tools),
        tool_ok=sum(e.ok for e in tools),
    )
    return outcome, events
