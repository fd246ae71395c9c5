"""The runner: a dataset through one or more memory systems into one ledger.

Layout of a run: `<runs_dir>/<run_id>/ledger.duckdb` holds everything; the
CSV files beside it are derived from the ledger and can be rebuilt from it.
Nothing is created before the inputs have been checked, and an existing run
is never touched unless `force` is given.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

import duckdb

from ledgermem.evaluation.baselines import BASELINES, BaselineMemory
from ledgermem.datasets.model import Dataset, Episode, Probe
from ledgermem.evaluation.errors import EvaluationError, UnknownSystem
from ledgermem.memory.errors import RunExists, RunNotFound
from ledgermem.memory.names import remove_run, validate_run_id
from ledgermem.memory.runs import LEDGER_FILE, ledger_path
from ledgermem.evaluation.failures import MAX_FAILED_CALLS, FailureGuard, GuardedBackend, LlmCallFailed, RunStopped
from ledgermem.evaluation.workers import WorkerPool
from ledgermem.evaluation.judge import JUDGES, LlmJudge, StringJudge
from ledgermem.evaluation.metrics import EpisodeOutcome, compute_metrics, outcomes_from_ledger, without_timing
from ledgermem.ledger.checkpoint import sign_finished_run
from ledgermem.ledger.events import Event
from ledgermem.projections.events import EpisodeGold, LlmCalled, ProbeAsked, ProbeJudged
from ledgermem.evaluation.events import ProbeAnswered, RunFinished, RunStarted
from ledgermem.ledger.keys import key_path
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.ledger.schema import canonical_json
from ledgermem.memory.backends import Backend, RoutedBackend
from ledgermem.memory.factory import make_backend
from ledgermem.memory.ratelimit import RateLimiter
from ledgermem.memory.prompts import today_line
from ledgermem.memory.replay_backend import ReplayBackend
from ledgermem.memory.cache import HotCache
from ledgermem.memory.memory import Memory
from ledgermem.memory.shell import MemorySystem
from ledgermem.gate.attributes import table_for
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore, projection_path
from ledgermem.projections.state import record_id_for
from ledgermem.projections.tokens import default_tokenizer

SYSTEMS = ("three_layer", *BASELINES)
MEMORY_POINTS_PER_EPISODE = 2

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
    judge: str = "string"
    judge_backend: str | None = None  # default: the answering backend
    max_tool_iterations: int = 4
    memory_points: int = MEMORY_POINTS_PER_EPISODE
    # The LLM backends: per purpose a backend name (heuristic or a preset), a model and a base URL; what is
    # not given comes from the environment, then from the .env file, then from the preset.
    summarize_backend: str | None = None  # default: the answering backend
    model: str | None = None
    summarize_model: str | None = None
    judge_model: str | None = None
    base_url: str | None = None
    summarize_base_url: str | None = None
    judge_base_url: str | None = None
    timeout: float | None = None
    max_retries: int | None = None
    # Every other backend setting by field name (memory.settings.FIELDS): under "all" for every purpose,
    # under a purpose's name for that purpose only (which wins).
    llm_flags: dict[str, dict[str, Any]] = field(default_factory=dict)
    max_failed_calls: int = MAX_FAILED_CALLS  # failed LLM calls in a row that stop the run
    env_file: Path | None = Path(".env")
    replay_llm: Path | None = None  # answer every call from this recorded run's llm_called events
    # One shard of a run (evaluation.cluster): only these episodes run; `run_started` records the whole dataset.
    episode_ids: tuple[str, ...] | None = None
    # A Redis hot cache for three_layer's rendered layers; never recorded: it must not change any result.
    cache: HotCache | None = field(default=None, compare=False)
    # How the run is executed, never recorded either: episodes on `workers` threads, and per HTTP endpoint
    # (base URL) at most `rpm` requests and `tpm` prompt tokens a minute, shared by all workers and purposes.
    workers: int = 1
    rpm: int | None = None
    tpm: int | None = None

    def recorded(self, backends: dict[str, Any] | None = None) -> dict[str, Any]:
        """What `run_started` records, and what a resumed run must match (never an API key)."""
        return {"backend": self.backend, "memory": self.memory.to_dict(), "limit": self.limit,
                "strict": self.strict, "personal_data": self.memory.personal_data, "judge": self.judge,
                "judge_backend": self.judge_backend or self.backend, "max_tool_iterations": self.max_tool_iterations,
                "memory_points": self.memory_points, "backends": backends if backends is not None else {},
                "replay_llm": str(self.replay_llm) if self.replay_llm else None}


@dataclass(frozen=True, slots=True)
class Backends:
    """The run's LLM backends: the memory's (routed by purpose), the judge's, and their redacted settings."""

    memory: Backend
    judge: Backend
    described: dict[str, Any]
    recorded: dict[str, Any] | None = None  # a replay: the configuration the recorded run started with


def _flags(opts: RunOptions, purpose: str) -> dict[str, Any]:
    """The flags of one purpose: its own (`--summarize-opt`, `--summarize-model`, ...) over the common ones."""
    own = {"summarize": {"model": opts.summarize_model, "base_url": opts.summarize_base_url},
           "judge": {"model": opts.judge_model, "base_url": opts.judge_base_url}}.get(purpose, {})
    common = {"model": opts.model, "base_url": opts.base_url, "timeout_s": opts.timeout,
              "max_retries": opts.max_retries, **opts.llm_flags.get("all", {})}
    given = {k: v for k, v in {**own, **opts.llm_flags.get(purpose, {})}.items() if v is not None}
    return {**common, **given}


def build_backends(opts: RunOptions, tokenizer: str) -> Backends:
    """Answer, respond, summarize and judge backends, each field by flag > environment > .env > preset > default.

    Every purpose is resolved on its own, so `LEDGERMEM_SUMMARIZE_MODEL` alone
    gives summarising its own model; purposes whose settings come out the
    same share one client.
    """
    if opts.replay_llm is not None:
        replayed, config = replay_source(opts.replay_llm)
        described = {**config.get("backends", {}),
                     "replay_llm": {"source": str(opts.replay_llm), "recorded_calls": replayed.recorded}}
        return Backends(replayed, replayed, described, config)
    from ledgermem.memory.http_backend import OpenAICompatibleBackend
    from ledgermem.memory.settings import resolve_http_settings

    names = {"answer": opts.backend, "respond": opts.backend, "summarize": opts.summarize_backend or opts.backend,
             "judge": opts.judge_backend or opts.backend}
    purposes = ("answer", "respond", "summarize", *(("judge",) if opts.judge == "llm" else ()))
    described: dict[str, Any] = {}
    made: dict[str, Backend] = {}
    shared: dict[str, Backend] = {}  # one client per distinct settings
    limiters: dict[str, RateLimiter] = {}
    for purpose in purposes:
        name = names[purpose]
        if name == "heuristic":
            made[purpose] = shared.setdefault(name, make_backend(name, tokenizer=tokenizer))
            described[purpose] = {"backend": name, "model": made[purpose].model}
            continue
        settings, sources = resolve_http_settings(purpose, name, flags=_flags(opts, purpose), dotenv=opts.env_file)
        key = canonical_json(settings.redacted()) + str(hash(settings.api_key))
        limiter = None
        if opts.rpm is not None or opts.tpm is not None:  # one limiter per endpoint, whichever purposes use it
            limiter = limiters.setdefault(settings.base_url, RateLimiter(rpm=opts.rpm, tpm=opts.tpm))
        made[purpose] = shared.setdefault(key, OpenAICompatibleBackend(settings, tokenizer=tokenizer, limiter=limiter))
        described[purpose] = {"backend": name, **settings.redacted(), "sources": dict(sources)}
    routed = RoutedBackend(made["answer"], {p: made[p] for p in ("answer", "respond", "summarize")})
    return Backends(routed, made.get("judge", made["answer"]), described)


def replay_backend(run: Path) -> ReplayBackend:
    """Every `llm_called` event of a recorded run (a ledger file or a run folder), in recorded order."""
    return replay_source(run)[0]


def replay_source(run: Path) -> tuple[ReplayBackend, dict[str, Any]]:
    """The recorded run's calls as a backend, and the configuration its `run_started` recorded."""
    path = Path(run) / LEDGER_FILE if Path(run).is_dir() else Path(run)
    if not path.is_file():
        raise RunNotFound(f"--replay-llm {run}: no ledger file at {path}")
    with Ledger(path, read_only=True) as ledger:
        if Path(key_path(path)).exists():
            ledger.open_keys()
        calls = [r.event for r in ledger.read(event_types=["llm_called"]) if isinstance(r.event, LlmCalled)]
        started = next((r.event for r in ledger.read(event_types=["run_started"])), None)
    if not calls:
        raise EvaluationError(f"--replay-llm {run}: the run at {path} recorded no LLM calls")
    config = dict(started.config) if isinstance(started, RunStarted) else {}
    return ReplayBackend(calls, source=str(path)), config


def backend_label(config: dict[str, Any]) -> str:
    """"backend NAME, model MODEL" of a run's recorded configuration (the recorded run's, for a replay)."""
    answer = config.get("backends", {}).get("answer", {})
    label = f"backend {config.get('backend', '?')}"
    if isinstance(answer, dict) and answer.get("model") and config.get("backend") != "heuristic":
        label += f", model {answer['model']}"
    if config.get("replay_llm"):
        label += f", replayed from {Path(str(config['replay_llm'])).parent.name or config['replay_llm']}"
    return label


@dataclass(frozen=True, slots=True)
class RunResult:
    run_id: str
    ledger_path: Path
    metrics: dict[str, dict[str, Any]]
    outcomes: list[EpisodeOutcome]
    label: str = ""  # the backend and model that answered, for titles (the recorded run's, for a replay)
    incomplete: tuple[str, ...] = ()  # "system/episode" stopped at a failed LLM call, redone by a re-run
    last_error: str | None = None
    checkpoint: str = ""  # what the run-end signed checkpoint (ledger.checkpoint) did


def _versions(tokenizer: str) -> dict[str, Any]:
    out: dict[str, Any] = {"python": platform.python_version(), "tokenizer": tokenizer}
    for dist in ("ledgermem", "duckdb", "pyarrow", "tiktoken"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def parse_systems(text: str) -> tuple[str, ...]:
    """`all` or a comma-separated list, in the order given, without duplicates."""
    names = SYSTEMS if text.strip() == "all" else tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    unknown = [s for s in names if s not in SYSTEMS]
    if unknown or not names:
        raise UnknownSystem(f"unknown system(s) {', '.join(unknown) or '(none given)'}; "
                            f"this version has: {', '.join(SYSTEMS)} (or 'all')")
    return names


def _prepare(opts: RunOptions, dataset: dict[str, Any], backends: dict[str, Any]) -> tuple[Path, bool]:
    """The run's ledger path, and whether an interrupted run of the same arguments is resumed."""
    parse_systems(",".join(opts.systems))
    opts.memory.validate()
    if opts.judge not in JUDGES:
        raise EvaluationError(f"unknown judge {opts.judge!r}; judges: {', '.join(JUDGES)}")
    path = ledger_path(opts.runs_dir, opts.run_id)
    if not path.exists():
        return path, False
    if opts.force:
        remove_run(opts.runs_dir, opts.run_id)
        return path, False
    with Ledger(path, read_only=True) as ledger:
        started = next((r.event for r in ledger.read(event_types=["run_started"])), None)
        finished = any(True for _ in ledger.read(event_types=["run_finished"]))
    if started is not None:
        assert isinstance(started, RunStarted)
        mine = {"systems": list(opts.systems), "config": _comparable(opts.recorded(backends)),
                "dataset": dataset["hash"]}
        theirs = {"systems": list(started.systems), "config": _comparable(started.config),
                  "dataset": started.dataset.get("hash")}
        differ = sorted(k for k in mine if canonical_json(mine[k]) != canonical_json(theirs[k]))
        if differ:
            state = "complete" if finished else "incomplete"
            raise RunExists(f"run {opts.run_id!r} already exists at {path} ({state}) and was started with different "
                            f"{', '.join(differ)}; pass --force to replace it, or choose another --run-id")
    return path, True


#: RunOptions' counts and their least allowed values (the CLI's IntRange/FloatRange say the same).
COUNT_MINIMUMS = {"limit": 1, "max_tool_iterations": 0, "memory_points": 0, "workers": 1, "max_failed_calls": 1,
                  "max_retries": 0, "rpm": 1, "tpm": 1}


def check_counts(opts: RunOptions) -> None:
    """Refuse a count below its minimum (`limit=-1` would silently drop the last episode) or a timeout <= 0."""
    for name, least in COUNT_MINIMUMS.items():
        value = getattr(opts, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least):
            raise EvaluationError(f"{name} must be an integer of at least {least}, got {value!r}")
    if opts.timeout is not None and not opts.timeout > 0:
        raise EvaluationError(f"timeout must be a number of seconds above 0, got {opts.timeout!r}")


#: How a call is delivered, not what it asks: a resumed run may change them (a longer timeout, more retries).
TRANSPORT_FIELDS = frozenset({"timeout_s", "max_retries", "backoff_base_s", "backoff_max_s"})


def _comparable(config: dict[str, Any]) -> dict[str, Any]:
    """A run's configuration without the transport settings of its backends, for the resume check."""
    backends = {purpose: {k: v for k, v in described.items() if k not in TRANSPORT_FIELDS and k != "sources"}
                | ({"sources": {k: v for k, v in described["sources"].items() if k not in TRANSPORT_FIELDS}}
                   if isinstance(described.get("sources"), dict) else {})
                if isinstance(described, dict) else described
                for purpose, described in config.get("backends", {}).items()}
    return {**config, "backends": backends}


def _judge(opts: RunOptions, backend: Backend) -> StringJudge | LlmJudge:
    return StringJudge() if opts.judge == "string" else LlmJudge(backend)


def open_memory(ledger: Ledger, projections: ProjectionStore, opts: RunOptions, system: str, ep: Episode,
                backend: Backend) -> MemorySystem:
    stream = StreamKey(opts.run_id, system, ep.episode_id)
    if system == "three_layer":
        return Memory(ledger, stream, backend, config=opts.memory, lang=ep.lang, projections=projections,
                      strict=opts.strict, max_tool_iterations=opts.max_tool_iterations, cache=opts.cache)
    return BaselineMemory(ledger, stream, backend, kind=system, config=opts.memory, lang=ep.lang,
                          projections=projections, max_tool_iterations=opts.max_tool_iterations)


def with_dataset_attributes(opts: RunOptions, dataset: Dataset) -> RunOptions:
    """The options with the dataset's attribute names added to the memory's `slot_aliases` (recorded with the
    configuration, so a resumed or replayed run names slots as this one did). A slot the dataset's facts or
    probes name that the attribute table would store under another name is declared canonical too: the
    registry then holds the slot its gold and its questions name."""
    aliases = {**opts.memory.slot_aliases, **{k: list(v) for k, v in dataset.attributes.items()}}
    named = [s for ep in dataset.episodes for s in (*(slot for slot, _ in ep.facts), *(p.fact_key for p in ep.probes))]
    for slot in dict.fromkeys(s for s in named if s):
        if table_for(opts.memory.attribute_table, aliases).canonical(slot) not in (None, slot):
            aliases.setdefault(slot, [])
    if aliases == opts.memory.slot_aliases:
        return opts
    return replace(opts, memory=replace(opts.memory, slot_aliases=aliases))


def run(dataset: Dataset, opts: RunOptions, progress: Progress | None = None) -> RunResult:
    """Run every system over the dataset's episodes; everything goes into the run's ledger.

    A run id that exists with the same arguments is resumed from its
    ledger: finished turns and probes are skipped, an episode continues from
    its last committed turn, nothing is written twice; a run that already
    finished is left as it is and its metrics are read back from the ledger.
    """
    validate_run_id(opts.run_id)
    check_counts(opts)
    if opts.memory.tokenizer == "auto":
        opts = replace(opts, memory=replace(opts.memory, tokenizer=default_tokenizer()))
    opts = with_dataset_attributes(opts, dataset)
    episodes = dataset.episodes[: opts.limit] if opts.limit else dataset.episodes
    data = {"name": dataset.name, "source": dataset.source, "hash": dataset.content_hash(), "episodes": len(episodes)}
    if opts.episode_ids is not None:
        episodes = tuple(ep for ep in episodes if ep.episode_id in set(opts.episode_ids))
    backends = build_backends(opts, opts.memory.tokenizer)
    if backends.recorded is not None:  # a replay is labelled with the recorded run's backends
        opts = replace(opts, backend=str(backends.recorded.get("backend", opts.backend)),
                       judge_backend=backends.recorded.get("judge_backend", opts.judge_backend))
    path, _ = _prepare(opts, data, backends.described)
    path.parent.mkdir(parents=True, exist_ok=True)
    guard = FailureGuard(opts.max_failed_calls)
    tick = progress or (lambda what, n: None)
    label = backend_label(opts.recorded(backends.described))
    incomplete: list[str] = []
    with Ledger(path) as ledger, ProjectionStore(projection_path(path)) as projections:
        single_threaded(ledger.conn, projections.conn)
        projections.catch_up(ledger)  # what a killed run left behind in its projections is finished first
        run_stream = StreamKey(opts.run_id)
        if ledger.stream_version(run_stream) == 0:
            ledger.append(run_stream, [RunStarted(
                systems=opts.systems, config=opts.recorded(backends.described),
                versions=_versions(opts.memory.tokenizer),
                dataset=data,
            )], expected_version=0)
        if isinstance(backends.memory, ReplayBackend):  # a resumed replay: what this run already made is served
            backends.memory.skip([r.event for r in ledger.read(run_id=opts.run_id, event_types=["llm_called"])
                                  if isinstance(r.event, LlmCalled)])
        incomplete = _run_streams(ledger, projections, opts, episodes, backends, tick, guard)
        outcomes = outcomes_from_ledger(ledger, opts.run_id)
        metrics = compute_metrics(outcomes)
        if incomplete or any(True for _ in ledger.read(stream=run_stream, event_types=["run_finished"])):
            return RunResult(opts.run_id, path, metrics, outcomes, label, tuple(incomplete), guard.last_error)
        # Wall times are derived from the commits' recorded_at; the recorded metrics describe the memory only.
        ledger.append(run_stream, [RunFinished(metrics=without_timing(metrics))],
                      expected_version=ledger.stream_version(run_stream))
        signed = sign_finished_run(ledger)
    return RunResult(opts.run_id, path, metrics, outcomes, label, checkpoint=signed)


def single_threaded(*conns: duckdb.DuckDBPyConnection) -> None:
    """Run DuckDB on the calling thread only. A run's statements are small (one commit's rows, one stream's
    reads), so DuckDB's worker threads have nothing to share out, while each keeps allocator caches of its own:
    one thread fewer per database is about 3 MiB less peak memory for the default run (more on wider machines).
    Results do not depend on the thread count."""
    for conn in conns:
        conn.execute("SET threads = 1")


def _run_or_keep_failure(memory: MemorySystem, system: str, ep: Episode, tick: Progress,
                         judge: StringJudge | LlmJudge, opts: RunOptions) -> bool:
    """Run one episode; False when it stopped at a failed LLM call (kept in the ledger, redone on resume)."""
    try:
        run_episode(memory, system, ep, tick, judge=judge, memory_points=opts.memory_points)
    except LlmCallFailed as exc:
        memory.commit(list(exc.events))  # the unit's calls, the failed one last; the unit itself is not committed
        if exc.stop is not None:
            raise RunStopped(f"run {opts.run_id!r} stopped at {system}/{ep.episode_id}: {exc.stop}. Last error: "
                             f"{exc} -- the failed calls are in the ledger; once the cause is fixed, the same "
                             "command resumes the run and redoes them") from None
        return False
    return True


def _run_streams(ledger: Ledger, projections: ProjectionStore, opts: RunOptions, episodes: Sequence[Episode],
                 backends: Backends, tick: Progress, guard: FailureGuard) -> list[str]:
    """Every system's stream of every episode, one after another or on `opts.workers` threads.

    Returns the streams that stopped at a failed LLM call (kept in the ledger, redone on resume). A replay
    (`replay_llm`) runs on one thread whatever `workers` says: it makes no requests to wait for, and
    recorded responses to one prompt from several episodes are served in the order they were recorded.
    """
    pool = WorkerPool(opts.workers) if opts.workers > 1 and opts.replay_llm is None else None
    guarded, guarded_judge = guard.wrap(backends.memory), guard.wrap(backends.judge)
    backend = pool.unlocked(guarded) if pool else guarded
    judge = _judge(opts, pool.unlocked(guarded_judge) if pool else guarded_judge)
    incomplete: list[str] = []

    def one(system: str, ep: Episode, ticked: Progress) -> None:
        memory = open_memory(ledger, projections, opts, system, ep, backend)
        if not _run_or_keep_failure(memory, system, ep, ticked, judge, opts):
            incomplete.append(f"{system}/{ep.episode_id}")

    streams = [(system, ep) for system in opts.systems for ep in episodes]
    if pool is None:
        for system, ep in streams:
            one(system, ep, tick)
    else:
        pool.run([partial(one, system, ep) for system, ep in streams], tick)
    return sorted(incomplete)


def _gold_event(episode: Episode) -> EpisodeGold:
    planted = sorted(((turn, slot, value) for slot, history in episode.facts for turn, value in history),
                     key=lambda x: x[0])
    # Dataset turns are 0-based dialogue indices; the memory numbers turns from 1.
    records = [record_id_for(n) for n in range(1, len(episode.turns) + 1)]
    # Evidence that names no turn of the dialogue (the loader kept it as written and noted it) has nothing to check.
    cited = {rid for probe in episode.probes for rid in probe.evidence}
    return EpisodeGold(facts=tuple((slot, value) for _, slot, value in planted),
                       fact_turns=tuple(turn + 1 for turn, _, _ in planted),
                       evidence=tuple(rid for rid in records if rid in cited))


def run_episode(memory: MemorySystem, system: str, episode: Episode, tick: Progress, *,
                judge: StringJudge | LlmJudge | None = None, memory_points: int = MEMORY_POINTS_PER_EPISODE) -> None:
    """Ingest the episode's turns, then ask its probes; continues where the ledger stops."""
    judge = judge or StringJudge()
    history = list(memory.ledger.read(stream=memory.stream, event_types=["episode_gold", "probe_judged"]))
    if not any(r.event.event_type == "episode_gold" for r in history):
        memory.commit([_gold_event(episode)])
    done = {r.event.probe_id for r in history if isinstance(r.event, ProbeJudged)}
    skipped = min(memory.state.turn, len(episode.turns))
    if skipped:
        tick("turn", skipped)
    guard = _guard_of(memory.backend)
    for t in episode.turns[memory.state.turn:]:
        if guard is not None:
            guard.begin(memory.state.turn + 1)
        # Baselines record the source and ignore it: none of them has a per-source policy by design.
        memory.add_turn(t.user, t.agent, occurred_at=t.occurred_at, source=t.source, blocks=t.blocks)
        tick("turn", 1)
    for probe in (*episode.probes, *memory_point_probes(memory, system, episode, memory_points)):
        if probe.probe_id not in done:
            if guard is not None:
                guard.begin(memory.state.turn, probe.probe_id)
            memory.commit(ask_probe(memory, probe, judge, lang=episode.lang))
        tick("probe", 1)


def _guard_of(backend: object) -> FailureGuard | None:
    while not isinstance(backend, GuardedBackend) and hasattr(backend, "inner"):
        backend = backend.inner  # a worker's backend wraps the guarded one
    return backend.guard if isinstance(backend, GuardedBackend) else None


def memory_point_probes(memory: MemorySystem, system: str, episode: Episode, count: int) -> list[Probe]:
    """Probes generated after ingestion, naming an item that has left the system's working memory.

    The same planted facts for every system: values stated at least a window
    before the end and changed later. `three_layer` is asked by the id of
    the summary that has left its chain (its tools must fetch it); a
    baseline is asked by the raw record id, which a destructive baseline has
    deleted.
    """
    if count <= 0:
        return []
    last = len(episode.turns)
    window = memory.state.config.window_turns
    candidates = sorted(
        (turn + 1, slot, value)
        for slot, history in episode.facts
        for (turn, value), (_, later) in zip(history, history[1:])
        if later != value and turn + 1 <= last - window
    )
    picks = [candidates[round(i * (len(candidates) - 1) / max(count - 1, 1))] for i in range(count)] if candidates else []
    zh = episode.language().lower().startswith("zh")  # Chinese dialogue, Chinese question, with or without `lang`
    out = []
    for n, (turn, slot, value) in enumerate(dict.fromkeys(picks)):
        rid = record_id_for(turn)
        sid = memory.departed_summary(rid, slot)
        if sid is not None:
            question = f"记忆{sid}（第{turn}轮）记录的{slot}是什么？" if zh else \
                f"Which {slot} did memory {sid} (turn {turn}) record?"
        else:
            question = f"我在第{turn}轮（记录{rid}）说的{slot}是什么？" if zh else \
                f"Which {slot} did I state in turn {turn} (record {rid})?"
        out.append(Probe(probe_id=f"{episode.episode_id}:mp{n}", type="memory_point", question=question,
                         answer=value, fact_key=slot, evidence=(rid,)))
    return out


def ask_probe(memory: MemorySystem, probe: Probe, judge: StringJudge | LlmJudge | None = None, *,
              lang: str | None = None) -> list[Event]:
    """Ask one probe; all its events, to be committed together. A dated probe is asked on its date."""
    judge = judge or StringJudge()
    turn = memory.state.turn
    today = today_line(probe.asked_at, lang) if probe.asked_at else None
    answer = memory.answer(probe.question, probe_id=probe.probe_id, today=today)
    verdict = judge.judge(question=probe.question, gold=probe.answer, answer=answer.text, turn=turn,
                          probe_id=probe.probe_id, probe_type=probe.type, distractor=probe.distractor)
    return [
        ProbeAsked(turn=turn, probe_id=probe.probe_id, probe_type=probe.type, slot=probe.fact_key,
                   text=probe.question, gold=probe.answer, evidence=probe.evidence, poison=probe.poison,
                   asked_at=probe.asked_at),
        *answer.events,
        ProbeAnswered(turn=turn, probe_id=probe.probe_id, text=answer.text, tool_calls=answer.tool_calls,
                      llm_calls=answer.llm_calls),
        *verdict.events,
        ProbeJudged(turn=turn, probe_id=probe.probe_id, correct=verdict.correct, method=verdict.method,
                    value=probe.answer),
    ]
