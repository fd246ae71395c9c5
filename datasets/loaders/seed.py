"""Seed files through the loader pipeline: the options, and the keys the seed loader does not read.

The seed loader itself lives in ``datasets.model`` (``parse_seed``);
its behaviour and messages are unchanged here.  Seed facts are indexed by
turn, so ``max_turns`` does not apply to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ledgermem.datasets.model import DatasetError, parse_seed
from ledgermem.datasets.loaders.common import FieldLog, Loaded, LoadOptions, select
from ledgermem.datasets.loaders.structure import check_seed

__all__ = ["EPISODE_FIELDS", "PROBE_FIELDS", "TOP_FIELDS", "TURN_FIELDS", "load"]

TOP_FIELDS = ("meta", "episodes", "attributes")
EPISODE_FIELDS = ("episode_id", "dialogues", "facts", "probes", "lang")
TURN_FIELDS = ("user", "agent", "occurred_at", "timestamp", "source_ids", "attachments", "source", "blocks")
PROBE_FIELDS = ("probe_id", "id", "type", "question", "answer", "fact_key", "evidence", "asked_at", "distractor",
                "poison")


def _walk(document: object, log: FieldLog) -> None:
    if isinstance(document, dict):
        log.check("top", document, TOP_FIELDS)
        episodes = document.get("episodes")
    else:
        episodes = document
    for episode in episodes if isinstance(episodes, list) else ():
        if not isinstance(episode, Mapping):
            continue
        log.check("episode", episode, EPISODE_FIELDS)
        for level, key, used in (("turn", "dialogues", TURN_FIELDS), ("probe", "probes", PROBE_FIELDS)):
            items: Any = episode.get(key)
            for item in items if isinstance(items, list) else ():
                if isinstance(item, Mapping):
                    log.check(level, item, used)


def load(path: str, document: object, options: LoadOptions) -> Loaded:
    dataset = parse_seed(path, document)
    check_seed(path, document, dataset.episodes)
    if options.max_turns is not None:
        raise DatasetError(f"{path}: max_turns applies to session-based files (LoCoMo, LongMemEval); "
                           "this seed file's facts are indexed by turn, so its dialogues cannot be cut")
    log = FieldLog()
    _walk(document, log)
    episodes = tuple(select(path, dataset.episodes, options))
    return Loaded(kind="seed", dataset=replace(dataset, episodes=episodes), unmapped_fields=log.unmapped_fields,
                  ignored_fields=log.ignored_fields)
