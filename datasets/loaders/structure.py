"""What every loader checks once a file's records are parsed: the structure a run relies on.

Episodes are the streams of a run's ledger, keyed by their id, and probes
are skipped on resume by theirs: two episodes with one id would be run as
one (the first one's turns plus the second one's tail, the second's probes
lost), so ids must be unique, and every fault names the file and both
positions. An episode needs a dialogue, its facts must lie within it, and
an id is a non-empty line (it is printed in one-line messages). The
benchmark loaders keep evidence that names no turn and note it; the seed
format, the project's own, refuses it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from ledgermem.datasets.model import DatasetError, Episode, _one_line, _show, _Where
from ledgermem.projections.state import record_id_for

__all__ = ["check_episode", "check_id", "check_seed", "check_unique"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RECORD_ID = re.compile(r"r(\d{4,})")


def check_unique(path: str, labelled: Collection[tuple[str, str]], field: str) -> None:
    """Refuse two records with one id, naming both positions (``episodes[0] and episodes[3] both have ...``).

    Episodes are streams of the run's ledger keyed by their id, so two with one id would be run as one.
    """
    first: dict[str, str] = {}
    for label, value in labelled:
        if value in first:
            raise DatasetError(_one_line(f"{path}: {first[value]} and {label} both have {field} {value!r}; "
                                         f"every {field} must be unique in the file"))
        first[value] = label


def check_id(where: _Where, field: str, value: str) -> None:
    """An id is a non-empty line: it keys a ledger stream or a probe and is printed in one-line messages."""
    if not value.strip():
        raise where.error(f"field '{field}' is empty")
    if _CONTROL.search(value):
        raise where.error(f"field '{field}' {_show(value)} holds a control character (a newline, a tab, ...)")


def check_episode(where: _Where, episode: Episode, probe_labels: Collection[str] | None = None) -> None:
    """One episode's structure: a dialogue of at least one turn, facts within it, probes with distinct ids.

    ``probe_labels`` are the probes' positions in the file (``.probes[2]``), in the order of
    ``episode.probes``; a probe id of the form ``<episode id>:mp<n>`` is refused, being the id the runner
    gives its generated memory_point probes.
    """
    check_id(where, "episode_id", episode.episode_id)
    if not episode.turns:
        raise where.error("the dialogue is empty: an episode needs at least one turn")
    last = len(episode.turns) - 1
    for slot, history in episode.facts:
        for turn, value in history:
            if turn > last:
                raise where.child(f".facts[{slot!r}]").error(
                    f"turn {turn} (value {_show(value)}) is past the dialogue's last turn {last} (turns count from 0)")
    labels = list(probe_labels) if probe_labels is not None else [f".probes[{i}]" for i in range(len(episode.probes))]
    reserved = re.compile(re.escape(episode.episode_id) + r":mp\d+")
    for label, probe in zip(labels, episode.probes):
        probe_where = where.child(label)
        check_id(probe_where, "probe_id", probe.probe_id)
        if reserved.fullmatch(probe.probe_id):
            raise probe_where.error(f"probe_id {probe.probe_id!r} is the form of a generated memory_point probe "
                                    f"({episode.episode_id}:mp<n>); choose another id")
    check_unique(f"{where.path}: {where.record}", [(label.lstrip("."), probe.probe_id)
                                                   for label, probe in zip(labels, episode.probes)], "probe_id")


def _check_seed_evidence(where: _Where, episode: Episode) -> None:
    """A seed probe's evidence given as a record id (``r0007``) must name a turn of the dialogue."""
    for index, probe in enumerate(episode.probes):
        for record in probe.evidence:
            match = _RECORD_ID.fullmatch(record)
            if match and not 1 <= int(match.group(1)) <= len(episode.turns):
                raise where.child(f".probes[{index}]").error(
                    f"evidence {record!r} names no turn: the dialogue has {len(episode.turns)} turns "
                    f"(r{1:04d} to {record_id_for(len(episode.turns))})")


def check_seed(path: str, document: object, episodes: tuple[Episode, ...]) -> None:
    """A parsed seed file's structure: every episode, and ids unique across the file (a default id named so)."""
    records = document.get("episodes") if isinstance(document, Mapping) else document
    items = list(records) if isinstance(records, list) else []
    labels = []
    for index, episode in enumerate(episodes):
        where = _Where(path=path, record=f"episodes[{index}]")
        check_episode(where, episode)
        _check_seed_evidence(where, episode)
        item = items[index] if index < len(items) else None
        given = isinstance(item, Mapping) and item.get("episode_id") is not None
        labels.append(where.record + ("" if given else f" (no episode_id, so {episode.episode_id!r})"))
    check_unique(path, list(zip(labels, (episode.episode_id for episode in episodes))), "episode_id")
