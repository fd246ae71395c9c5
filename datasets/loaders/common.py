"""What the dataset loaders share: options, the field log, timestamps, and episode assembly.

A session-based file (LoCoMo, LongMemEval) is first read into *drafts*: an
episode's sessions in order (``Block``), each turn carrying the dataset's own
ids of the utterances it holds, and probes whose evidence is still given as
those ids.  ``assemble`` then applies ``max_turns`` to whole sessions, numbers
the turns the way the memory records them (``r0001``, ``r0002``, ...) and maps
the evidence onto these record ids; an id that names no turn is kept as it
is and reported, never dropped.  Truncation happens before the numbering, so
the mapping always describes the turns that are actually run.

Every loader writes into a ``FieldLog`` the keys it met and did not use, so
that ``inspect_file`` can say which parts of a file were not understood.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from ledgermem.datasets.model import (
    Dataset,
    DatasetError,
    Episode,
    Probe,
    Turn,
    _kind,
    _scalar_text,
    _show,
    _Where,
)
from ledgermem.datasets.loaders.structure import check_episode, check_id, check_unique

# The seed loader's error vocabulary, so that every format's messages read alike.
Where = _Where
kind_of = _kind
scalar_text = _scalar_text
show = _show

__all__ = [
    "Block",
    "Draft",
    "FieldLog",
    "LoadOptions",
    "Loaded",
    "Where",
    "assemble",
    "check_drafts",
    "check_episode",
    "check_unique",
    "finish",
    "kind_of",
    "optional_str",
    "parse_timestamp",
    "require_list",
    "require_str",
    "scalar_text",
    "select",
    "show",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadOptions:
    """What to keep of a file: probe types (applied first), then episodes, then turns per episode."""

    limit: int | None = None
    question_types: frozenset[str] | None = None
    max_turns: int | None = None

    @classmethod
    def of(
        cls,
        *,
        limit: int | None = None,
        question_types: Collection[str] | None = None,
        max_turns: int | None = None,
    ) -> LoadOptions:
        for name, value in (("limit", limit), ("max_turns", max_turns)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
        if isinstance(question_types, str):
            raise TypeError(f"question_types must be a collection of type names, not the string {question_types!r}")
        types = None if question_types is None else frozenset(question_types)
        if types is not None and not types:
            raise ValueError("question_types is empty; pass None to keep every type")
        return cls(limit=limit, question_types=types, max_turns=max_turns)


class FieldLog:
    """Keys met while loading: those no loader maps, and those known but deliberately not loaded.

    Keys are recorded as ``<level>.<key>``; ``generic`` turns numbered
    families such as ``session_12`` into one name (``session_N``).
    """

    def __init__(self) -> None:
        self._unmapped: dict[str, None] = {}
        self._ignored: dict[str, None] = {}
        self.unmapped_evidence: list[str] = []
        self.notes: list[str] = []

    def check(
        self,
        level: str,
        item: Mapping[str, Any],
        used: Collection[str],
        ignored: Collection[str] = (),
        *,
        generic: Callable[[str], str] | None = None,
    ) -> None:
        for key in item:
            name = generic(key) if generic else key
            if name in used:
                continue
            target = self._ignored if name in ignored else self._unmapped
            target.setdefault(f"{level}.{name}", None)

    @property
    def unmapped_fields(self) -> tuple[str, ...]:
        return tuple(sorted(self._unmapped))

    @property
    def ignored_fields(self) -> tuple[str, ...]:
        return tuple(sorted(self._ignored))


@dataclass(frozen=True, slots=True, kw_only=True)
class Loaded:
    """A loaded dataset and what the loader could not use."""

    kind: str
    dataset: Dataset
    unmapped_fields: tuple[str, ...] = ()
    ignored_fields: tuple[str, ...] = ()
    unmapped_evidence: tuple[str, ...] = ()  # "<probe id>: <dataset id>"


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """One session of a session-based file, before its turns are numbered."""

    block_id: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Draft:
    """An episode before truncation and numbering; probe evidence holds dataset ids."""

    episode_id: str
    blocks: tuple[Block, ...]
    probes: tuple[Probe, ...]
    lang: str | None = None


# --------------------------------------------------------------------------
# Field access
# --------------------------------------------------------------------------


def require_str(where: Where, item: Mapping[str, Any], name: str) -> str:
    if name not in item:
        raise where.error(f"missing field '{name}'")
    value = item[name]
    if not isinstance(value, str):
        raise where.error(f"field '{name}' is not a string (got {kind_of(value)})")
    return value


def optional_str(where: Where, item: Mapping[str, Any], name: str) -> str | None:
    value = item.get(name)
    if value is None or isinstance(value, str):
        return value
    raise where.error(f"field '{name}' is not a string (got {kind_of(value)})")


def require_list(where: Where, item: Mapping[str, Any], name: str) -> list[Any]:
    if name not in item:
        raise where.error(f"missing field '{name}'")
    value = item[name]
    if not isinstance(value, list):
        raise where.error(f"field '{name}' is not a list (got {kind_of(value)})")
    return value


# --------------------------------------------------------------------------
# Timestamps
# --------------------------------------------------------------------------

_WEEKDAY = re.compile(r"\s*\([A-Za-z]{2,9}\.?\)\s*")
_FORMATS = (
    "%I:%M %p on %d %B, %Y",  # LoCoMo: "1:56 pm on 8 May, 2023"
    "%I:%M %p on %d %b, %Y",
    "%I:%M %p on %B %d, %Y",
    "%Y/%m/%d %H:%M",  # LongMemEval, weekday removed: "2023/05/20 (Sat) 02:21"
    "%Y/%m/%d %H:%M:%S",
    "%Y/%m/%d",
    "%Y-%m-%d %H:%M",
    "%d %B %Y",
    "%B %d, %Y",
)


def parse_timestamp(text: str) -> str:
    """ISO 8601 for the date formats of the public datasets; anything else unchanged.

    A string that is already ISO 8601 is kept exactly as written.
    """
    stripped = text.strip()
    try:
        datetime.fromisoformat(stripped)
        return text
    except ValueError:
        pass
    plain = _WEEKDAY.sub(" ", stripped).strip()
    for pattern in _FORMATS:
        try:
            return datetime.strptime(plain, pattern).isoformat()
        except ValueError:
            continue
    return text


# --------------------------------------------------------------------------
# Selection, truncation and numbering
# --------------------------------------------------------------------------


_Selectable = TypeVar("_Selectable", Draft, Episode)


def select(
    path: str,
    items: Sequence[_Selectable],
    options: LoadOptions,
    names: Callable[[Probe], Iterable[str]] = lambda probe: (probe.type,),
) -> list[_Selectable]:
    """Keep the probes whose type is asked for (dropping episodes left without any), then ``limit`` episodes.

    ``names`` gives the names a probe answers to; a probe is kept when one of
    them is in ``question_types``.
    """
    kept = list(items)
    wanted = options.question_types
    if wanted is not None:
        kept = [replace(item, probes=tuple(p for p in item.probes if wanted & set(names(p)))) for item in kept]
        kept = [item for item in kept if item.probes]
        if not kept:
            present = sorted({p.type for item in items for p in item.probes})
            raise DatasetError(f"{path}: no probe has a type in {sorted(wanted)}; types in the file: {present}")
    return kept[: options.limit] if options.limit else kept


def _truncate(draft: Draft, pinned: Collection[str], max_turns: int) -> tuple[tuple[Block, ...], str | None]:
    """Drop the oldest sessions that hold no evidence until the episode fits in ``max_turns``."""
    total = sum(len(block.turns) for block in draft.blocks)
    if total <= max_turns:
        return draft.blocks, None
    dropped: list[int] = []
    for index, block in enumerate(draft.blocks):
        if total <= max_turns:
            break
        if block.block_id not in pinned and block.turns:
            dropped.append(index)
            total -= len(block.turns)
    kept = tuple(block for index, block in enumerate(draft.blocks) if index not in dropped)
    gone = [draft.blocks[index] for index in dropped]
    names = ", ".join(block.block_id for block in gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
    note = (f"{draft.episode_id}: max_turns={max_turns} dropped {len(gone)} of {len(draft.blocks)} sessions "
            f"({sum(len(block.turns) for block in gone)} turns), oldest without evidence first"
            + (f": {names}" if gone else ""))
    if total > max_turns:
        note += f"; the {len(pinned)} evidence sessions kept hold {total} turns, more than max_turns"
    return kept, note


def assemble(draft: Draft, options: LoadOptions, log: FieldLog) -> Episode:
    """Truncate, number the turns and map each probe's evidence onto record ids."""
    cited = {source for probe in draft.probes for source in probe.evidence}
    pinned = {block.block_id for block in draft.blocks
              if any(source in cited for turn in block.turns for source in turn.source_ids)}
    blocks = draft.blocks
    if options.max_turns is not None:
        blocks, note = _truncate(draft, pinned, options.max_turns)
        if note:
            log.notes.append(note)
    turns = tuple(turn for block in blocks for turn in block.turns)
    episode = Episode(episode_id=draft.episode_id, turns=turns, facts=(), probes=(), lang=draft.lang)
    mapping = episode.record_ids()
    probes = []
    for probe in draft.probes:
        evidence: dict[str, None] = {}
        for source in probe.evidence:
            record = mapping.get(source)
            if record is None:
                log.unmapped_evidence.append(f"{probe.probe_id}: {source}")
                log.notes.append(f"{probe.probe_id}: evidence {source!r} names no turn of the dialogue; kept as given")
            evidence.setdefault(record or source, None)
        probes.append(replace(probe, evidence=tuple(evidence)))
    return replace(episode, probes=tuple(probes))


def check_drafts(path: str, labelled: Sequence[tuple[str, Draft]]) -> None:
    """Session-based records (``samples[0] (sample_id 'x')``, ...): ids unique and non-empty, some turns each."""
    for label, draft in labelled:
        where = Where(path=path, record=label)
        check_id(where, "id", draft.episode_id)
        if not any(block.turns for block in draft.blocks):
            raise where.error("the dialogue is empty: no session holds a turn")
        check_unique(f"{path}: {label}", [(f"probes[{index}]", probe.probe_id)
                                          for index, probe in enumerate(draft.probes)], "probe id")
    check_unique(path, [(label, draft.episode_id) for label, draft in labelled], "episode id")


def finish(kind: str, name: str, path: str, episodes: Iterable[Episode], log: FieldLog,
           notes: Iterable[str] = ()) -> Loaded:
    """The loaded dataset; every episode checked once more as it will run (after ``max_turns``)."""
    episodes = tuple(episodes)
    for episode in episodes:
        where = Where(path=path, record=f"episode {episode.episode_id!r}")
        if not episode.turns:
            raise where.error("no turn is left to run (max_turns dropped every session; raise it)")
        check_episode(where, episode)
    check_unique(path, [(f"episode {index}", episode.episode_id) for index, episode in enumerate(episodes)],
                 "episode id")
    dataset = Dataset(name=name, source=path, episodes=episodes, notes=(*notes, *log.notes))
    return Loaded(kind=kind, dataset=dataset, unmapped_fields=log.unmapped_fields,
                  ignored_fields=log.ignored_fields, unmapped_evidence=tuple(log.unmapped_evidence))

