"""A Redis hot cache of an episode's live projections, always rebuildable from the ledger.

What a live agent reads on every turn — the rendered window, registry,
index titles and active chain, plus the registry as data — is kept in
Redis under one namespace per stream::

    {prefix}:{run}:{system}:{episode}:meta     hash: seq, hash, budget, tokenizer, parts, renderer, digest
    {prefix}:{run}:{system}:{episode}:values   hash: slot -> [value, summary_id] (the registry as data)
    {prefix}:{run}:{system}:{episode}:{part}   list: [item_id, text, tokens] per rendered item, one list
                                               per part (window, registry, index, chain, ...)

(each component percent-encoded, so ids holding `:` or glob characters
cannot collide or match a pattern). The ledger stays the only source of
truth: a write goes to the ledger first and to the cache after the commit;
every entry records the seq and hash of the last event it reflects, and a
digest of its content. A read that finds the entry missing (flushed,
evicted), behind or ahead of the ledger, or failing its digest (a key
overwritten, truncated or of the wrong type) rebuilds it from the state
folded from the ledger and counts why. Every write replaces the whole
entry in one MULTI/EXEC, so a rewritten row never duplicates a list.

Redis down, unreachable or not installed costs nothing but speed: the
memory answers from its own state (folded from the ledger), the fallback
is counted, and Redis is tried again after `retry_after` seconds. Cleanup
walks the namespace with SCAN and removes with UNLINK; KEYS is never used.
The server should run without persistence (`--save '' --appendonly no`):
an erasure rewrites the cache, but a Redis dump or append-only file on
disk would keep old values, so the erasure receipt reports persistence as
residue it cannot clear.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from functools import cache
from pathlib import Path
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey
from ledgermem.memory.erasure import mentions
from ledgermem.memory.errors import ConfigError
from ledgermem.projections import render as render_module
from ledgermem.projections import state as state_module
from ledgermem.projections import tokens as tokens_module
from ledgermem.projections.render import PART_ORDER, Item, Part, Rendered, render
from ledgermem.projections.scd2 import Projector
from ledgermem.projections.state import EpisodeState

class Memory(Protocol):
    """What the cache reads of a memory (`memory.Memory` is one): its stream, version, ledger and state."""

    @property
    def stream(self) -> StreamKey: ...

    @property
    def version(self) -> int: ...

    @property
    def ledger(self) -> Ledger: ...

    @property
    def state(self) -> EpisodeState: ...

FORMAT = "1"


@cache
def renderer() -> str:
    """A fingerprint of the code that renders: an entry written by another version of it is rebuilt."""
    digest = hashlib.sha256()
    for module in (render_module, state_module, tokens_module):
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()[:16]
DEFAULT_PREFIX = "ledgermem"
_PAGED_IN = "paged_in"  # the part of paged-in items, present in a render only while something is paged in
_PARTS = (*PART_ORDER, _PAGED_IN)
_DROPPED = "paged_in_dropped"  # meta field: the paged-in ids the budget left out
Position = tuple[int, str]  # (seq, hash) of the last event an entry reflects


@dataclass(slots=True)
class CacheStats:
    """What the cache did: counters for the run's report, never part of its metrics."""

    writes: int = 0
    hits: int = 0
    rebuilds: Counter[str] = field(default_factory=Counter)  # reason -> count
    fallbacks: int = 0
    skipped_writes: int = 0  # a rebuild that found a newer entry written meanwhile
    last_error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"writes": self.writes, "hits": self.hits, "rebuilds": dict(sorted(self.rebuilds.items())),
                "fallbacks": self.fallbacks, "skipped_writes": self.skipped_writes, "last_error": self.last_error}

    def line(self) -> str:
        rebuilt = ", ".join(f"{k} {v}" for k, v in sorted(self.rebuilds.items())) or "none"
        text = (f"cache: {self.writes} writes, {self.hits} hits, rebuilds: {rebuilt}, "
                f"{self.fallbacks} fallbacks to the ledger")
        return text + (f" (last error: {self.last_error})" if self.last_error else "")


@dataclass(frozen=True, slots=True)
class Entry:
    """One stream's cached projections, as read back and checked."""

    position: Position
    rendered: Rendered
    registry: dict[str, tuple[str, str]]


class _Corrupt(Exception):
    """A cached entry that is present but cannot be trusted (internal: always rebuilt, never raised out)."""

    reason = "corrupt"


class _OtherFormat(_Corrupt):
    """An intact entry written by another version of the format or of the renderer."""

    reason = "format"


def _encode(part: str) -> str:
    return quote(part, safe="")


def _digest(position: Position, rendered: Rendered, registry: dict[str, tuple[str, str]]) -> str:
    body = {
        "seq": position[0], "hash": position[1], "budget": rendered.budget, "tokenizer": rendered.tokenizer,
        "parts": [[p.name, [[i.item_id, i.text, i.tokens] for i in p.items], *([list(p.dropped)] if p.dropped else [])]
                  for p in rendered.parts],
        "registry": sorted([k, v, s] for k, (v, s) in registry.items()),
    }
    return hashlib.sha256(json.dumps(body, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()


class HotCache:
    """The cache of every stream a process writes or reads, over one Redis client.

    `client` is a `redis.Redis` made with `decode_responses=True` (or None:
    Redis is not available, every call falls back). Use `connect(url)`.
    """

    def __init__(self, client: Any | None, *, prefix: str = DEFAULT_PREFIX, retry_after: float = 1.0,
                 unavailable: str = "") -> None:
        if not prefix or any(c in prefix for c in "*?[]"):
            raise ConfigError(f"cache prefix {prefix!r} must be non-empty and free of glob characters")
        self.client: Any = client  # redis.Redis, typed loosely: the package is an optional extra
        self.prefix, self.retry_after = prefix, retry_after
        self.stats = CacheStats(last_error=unavailable)
        self._errors: tuple[type[BaseException], ...] = (OSError,)
        self._response_error: type[BaseException] = _Corrupt
        self._watch_error: type[BaseException] = _Corrupt
        if client is not None:
            import redis.exceptions as rex

            # Any failure of Redis itself (down, timing out, read-only replica, out of memory, refusing a
            # command) is a fallback: the cache must never stop the memory.
            self._errors = (rex.RedisError, OSError)
            self._response_error, self._watch_error = rex.ResponseError, rex.WatchError
        self._down_until = 0.0
        # The position each stream's last stored commit left, with the stream version it was at: a
        # Memory whose version moved without a store (a failed projection write) asks the ledger again.
        self._positions: dict[StreamKey, tuple[int, Position]] = {}

    @classmethod
    def connect(cls, url: str, *, prefix: str = DEFAULT_PREFIX, timeout: float = 0.5,
                retry_after: float = 1.0) -> HotCache:
        """A cache on the Redis at `url` (redis://host:port/db). Without the `redis` package: always falls back.

        Nothing is sent until the first write: a server that is down is a
        fallback, not an error.
        """
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:
            return cls(None, prefix=prefix, retry_after=retry_after,
                       unavailable="the redis package is not installed (pip install -e '.[redis]')")
        try:
            client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=timeout,
                                          socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0))
        except ValueError as exc:
            raise ConfigError(f"--redis {url!r}: not a Redis URL ({exc}); e.g. redis://127.0.0.1:6379/0") from exc
        return cls(client, prefix=prefix, retry_after=retry_after)

    @property
    def available(self) -> bool:
        return self.client is not None

    # -- keys --------------------------------------------------------------------------

    def namespace(self, stream: StreamKey) -> str:
        return ":".join([self.prefix, *(_encode(p) for p in stream.as_tuple())])

    def keys(self, stream: StreamKey) -> dict[str, str]:
        ns = self.namespace(stream)
        return {**{p: f"{ns}:{p}" for p in _PARTS}, "meta": f"{ns}:meta", "values": f"{ns}:values"}

    # -- the Memory's side: write after each commit, read for each render ---------------

    def store(self, stream: StreamKey, state: EpisodeState, last: RecordedEvent) -> None:
        """After a ledger commit: replace the stream's entry with the state it left (`last`: its last event)."""
        position = (last.seq, last.hash)
        self._positions[stream] = (last.stream_version, position)
        self._guarded(lambda: self._write(stream, position, render(state), state.current_values()))

    def rendered(self, memory: Memory) -> Rendered:
        """The memory rendered at its configured budget: from the cache when it matches the ledger."""
        version, position = self._positions.get(memory.stream, (-1, (0, "")))
        if version != memory.version:
            position = _last_position(memory.ledger, memory.stream)
            self._positions[memory.stream] = (memory.version, position)
        entry = self._fetch(memory.stream, position)
        if entry is not None:
            return entry.rendered
        fresh = render(memory.state)
        self._guarded(lambda: self._rebuild(memory.stream, position, fresh, memory.state.current_values()))
        return fresh

    # -- a reader without the state: another process of a live agent ---------------------

    def read(self, ledger: Ledger, stream: StreamKey) -> Entry:
        """A stream's cached projections, checked against the ledger; folded from the ledger when they are not."""
        position = _last_position(ledger, stream)
        entry = self._fetch(stream, position)
        if entry is not None:
            return entry
        projector = Projector(stream.as_tuple())
        projector.apply_all(ledger.read(stream=stream))
        state = projector.state
        entry = Entry(position, render(state), state.current_values())
        self._guarded(lambda: self._rebuild(stream, position, entry.rendered, entry.registry))
        return entry

    # -- erasure and cleanup -----------------------------------------------------------

    def residue(self, stream: StreamKey, values: set[str]) -> dict[str, int]:
        """Where erased values could still be read from the cache: its keys, and Redis's own files."""
        found: dict[str, int] = {}

        def scan() -> None:
            hits = 0
            for key in self._scan(self.namespace(stream) + ":*"):
                kind = self.client.type(key)
                texts = (self.client.lrange(key, 0, -1) if kind == "list" else
                         [f"{k}={v}" for k, v in self.client.hgetall(key).items()] if kind == "hash" else
                         [self.client.get(key) or ""] if kind == "string" else [])
                hits += sum(mentions(t, values) for t in texts)
            found[f"cache {self.namespace(stream)}"] = hits
            found["cache persistence (RDB/AOF files)"] = int(self._persistent())

        if not self._guarded(scan):
            found[f"cache {self.namespace(stream)} (unreachable, not verified)"] = 1
        return found

    def clear(self, run_id: str | None = None, system: str | None = None, episode_id: str | None = None) -> int:
        """Remove the cached entries of a run (or of one system or episode of it), or all of this prefix."""
        parts = [self.prefix]
        for given in (run_id, system, episode_id):
            if given is None:
                break
            parts.append(_encode(given))
        pattern = ":".join(parts) + ":*"
        removed = [0]

        def unlink() -> None:
            batch: list[str] = []
            for key in self._scan(pattern):
                batch.append(key)
                if len(batch) >= 500:
                    removed[0] += int(self.client.unlink(*batch))
                    batch = []
            if batch:
                removed[0] += int(self.client.unlink(*batch))

        self._guarded(unlink)
        return removed[0]

    # -- internals ---------------------------------------------------------------------

    def _scan(self, pattern: str) -> Iterator[str]:
        # Collect first: unlinking while a SCAN cursor walks the keyspace may skip keys.
        yield from list(self.client.scan_iter(match=pattern, count=500))

    def _persistent(self) -> bool:
        try:
            config = self.client.config_get("save")
            config.update(self.client.config_get("appendonly"))
        except self._response_error:  # CONFIG disabled (managed Redis): assume the worst
            return True
        return bool(config.get("save", "").strip()) or config.get("appendonly") == "yes"

    def _guarded(self, op: Any) -> bool:
        """Run a Redis operation; on an outage count a fallback and rest until `retry_after` has passed."""
        if self.client is None or time.monotonic() < self._down_until:
            self.stats.fallbacks += 1
            return False
        try:
            op()
        except self._errors as exc:
            self.stats.fallbacks += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            self._down_until = time.monotonic() + self.retry_after
            return False
        return True

    def _fetch(self, stream: StreamKey, position: Position) -> Entry | None:
        """The entry if it is present, intact and at `position`; else None, with the reason counted."""
        found: list[Entry | None] = [None]

        def get() -> None:
            try:
                entry = self._read(stream)
            except (_Corrupt, self._response_error, ValueError, KeyError, TypeError) as exc:
                self.stats.rebuilds[exc.reason if isinstance(exc, _Corrupt) else "corrupt"] += 1
                return
            if entry is None:
                self.stats.rebuilds["missing"] += 1
            elif entry.position != position:
                self.stats.rebuilds["behind" if entry.position[0] < position[0] else "foreign"] += 1
            else:
                self.stats.hits += 1
                found[0] = entry

        self._guarded(get)
        return found[0]

    def _read(self, stream: StreamKey) -> Entry | None:
        keys = self.keys(stream)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.hgetall(keys["meta"])
            pipe.hgetall(keys["values"])
            for name in _PARTS:
                pipe.lrange(keys[name], 0, -1)
            meta, registry_raw, *lists = pipe.execute()
        if not meta:
            if registry_raw or any(lists):
                raise _Corrupt("items without their meta")
            return None
        written_by = (meta.get("format"), meta.get("renderer"), meta.get("parts"))
        if written_by != (FORMAT, renderer(), json.dumps(list(PART_ORDER))):
            raise _OtherFormat(f"written by format {written_by[0]}, renderer {written_by[1]}")
        parts = [Part(name, tuple(_item(raw) for raw in items)) for name, items in zip(PART_ORDER, lists)]
        paged, dropped = tuple(_item(raw) for raw in lists[-1]), tuple(json.loads(meta.get(_DROPPED, "[]")))
        if paged or dropped:  # a render holds the paged-in part only while something is paged in
            parts.insert(PART_ORDER.index("window") + 1, Part(_PAGED_IN, paged, dropped))
        rendered = Rendered(parts=tuple(parts), budget=int(meta["budget"]), tokenizer=meta["tokenizer"])
        registry = {slot: _pair(raw) for slot, raw in registry_raw.items()}
        position = (int(meta["seq"]), meta["hash"])
        if _digest(position, rendered, registry) != meta["digest"]:
            raise _Corrupt("digest mismatch")
        return Entry(position, rendered, registry)

    def _write(self, stream: StreamKey, position: Position, rendered: Rendered,
               registry: dict[str, tuple[str, str]]) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            self._queue_write(pipe, stream, position, rendered, registry)
            pipe.execute()
        self.stats.writes += 1

    def _queue_write(self, pipe: Any, stream: StreamKey, position: Position, rendered: Rendered,
                     registry: dict[str, tuple[str, str]]) -> None:
        """The commands that replace a stream's whole entry, queued in a MULTI/EXEC pipeline."""
        keys = self.keys(stream)
        pipe.delete(*keys.values())
        for part in rendered.parts:
            if part.items:
                pipe.rpush(keys[part.name], *(json.dumps([i.item_id, i.text, i.tokens], ensure_ascii=False)
                                              for i in part.items))
        if registry:
            pipe.hset(keys["values"], mapping={k: json.dumps([v, s], ensure_ascii=False)
                                               for k, (v, s) in registry.items()})
        pipe.hset(keys["meta"], mapping={
            "format": FORMAT, "renderer": renderer(), "parts": json.dumps(list(PART_ORDER)),
            "seq": position[0], "hash": position[1], "budget": rendered.budget, "tokenizer": rendered.tokenizer,
            "digest": _digest(position, rendered, registry),
            **{_DROPPED: json.dumps(list(p.dropped), ensure_ascii=False) for p in rendered.parts if p.dropped},
        })

    def _rebuild(self, stream: StreamKey, position: Position, rendered: Rendered,
                 registry: dict[str, tuple[str, str]]) -> None:
        """Write back what was folded from the ledger, unless a newer entry was written meanwhile."""
        keys = self.keys(stream)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.watch(*keys.values())
            try:
                stored = self._read(stream)
            except (_Corrupt, self._response_error, ValueError, KeyError, TypeError):
                stored = None  # a corrupt entry is overwritten, whatever seq it claims
            if stored is not None and stored.position[0] > position[0]:
                self.stats.skipped_writes += 1
                return
            pipe.multi()
            self._queue_write(pipe, stream, position, rendered, registry)
            try:
                pipe.execute()
            except self._watch_error:
                self.stats.skipped_writes += 1
                return
        self.stats.writes += 1


def _item(raw: str) -> Item:
    item_id, text, tokens = json.loads(raw)
    if not (isinstance(item_id, str) and isinstance(text, str) and isinstance(tokens, int)):
        raise _Corrupt("malformed item")
    return Item(item_id, text, tokens)


def _pair(raw: str) -> tuple[str, str]:
    value, summary_id = json.loads(raw)
    if not (isinstance(value, str) and isinstance(summary_id, str)):
        raise _Corrupt("malformed registry entry")
    return value, summary_id


def _last_position(ledger: Ledger, stream: StreamKey) -> Position:
    version = ledger.stream_version(stream)
    last = list(ledger.read(stream=stream, from_version=version)) if version else []
    return (last[-1].seq, last[-1].hash) if last else (0, "")

