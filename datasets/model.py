"""Evaluation dataset model and the loader for seed JSON files.

A dataset is a list of episodes; each episode is a dialogue (user/agent
turns), the facts planted in it (slot -> ((turn, value), ...)) and probes with
exact gold answers.  Seed files come from several hand-written sources, so the
loader accepts the few shapes they use and rejects everything else with a
one-line ``DatasetError`` that names the file, the record and the field: a
malformed seed should be fixable from the error message alone.

``load_dataset`` recognises the public benchmark formats (LoCoMo,
LongMemEval, MEME) by their structure and hands them to
``datasets.loaders``; everything else is read here as a seed file.

``dataset_to_json`` is the inverse of ``load_dataset``; generated datasets are
written with it so they can be reloaded bit-for-bit.  Fields that only the
benchmark formats fill (a turn's ``source_ids`` and ``attachments``, a
probe's ``evidence``, ``asked_at`` and ``distractor``, the dataset's
``notes``) are written only when set, so seed and synthetic files, and
their content hashes, are what they were before these fields existed.  The
same holds for a turn's ``source`` (the channel a turn came from, e.g.
``"web"``: the runner passes it to ``Memory.add_turn(source=...)``, where a
source policy may apply) and a probe's ``poison`` (the false value a
``poisoning`` probe's dialogue planted).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledgermem.ledger.blocks import Block
from ledgermem.datasets.errors import DatasetError
from ledgermem.projections.config import alias_problems
from ledgermem.projections.state import record_id_for

__all__ = [
    "DatasetError",
    "Dataset",
    "Episode",
    "Probe",
    "Turn",
    "dataset_to_json",
    "parse_seed",
    "read_dataset_json",
]

FactHistory = tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One user utterance and the agent reply that followed it.

    ``source_ids`` are the dataset's own ids of the utterances this turn
    holds (LoCoMo ``dia_id``, LongMemEval ``<session id>:<message index>``);
    evidence given as such ids is mapped onto the turn's record id.
    ``attachments`` are the URLs of images shown in the turn; their
    captions are in the text.  ``source`` names the channel the turn came
    from when it is not the user (a tool, a web page); None is the user.
    """

    user: str
    agent: str
    occurred_at: str | None = None
    source_ids: tuple[str, ...] = ()
    attachments: tuple[str, ...] = ()
    source: str | None = None
    #: Images and other typed content shown in the turn (``ledger.blocks.Block``), kept as blocks, not text.
    blocks: tuple[Block, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe:
    """A question asked after the dialogue, with its exact gold answer."""

    probe_id: str
    type: str
    question: str
    answer: str
    fact_key: str | None = None
    evidence: tuple[str, ...] = ()  # record ids holding the answer, when the dataset names them
    asked_at: str | None = None  # when the dataset says the question is asked (LongMemEval question_date)
    distractor: str | None = None  # the tempting wrong answer of an adversarial question (LoCoMo category 5)
    poison: str | None = None  # a poisoning probe's planted false value: surfacing it is the failure measured


@dataclass(frozen=True, slots=True, kw_only=True)
class Episode:
    """A dialogue with its planted facts and probes.

    ``facts`` is a tuple of ``(slot, ((turn, value), ...))`` rather than a
    dict so that the episode stays hashable and immutable.
    """

    episode_id: str
    turns: tuple[Turn, ...]
    facts: tuple[tuple[str, FactHistory], ...]
    probes: tuple[Probe, ...]
    lang: str | None = None

    def fact_dict(self) -> dict[str, list[tuple[int, str]]]:
        """Facts as a fresh, mutable ``{slot: [(turn, value), ...]}``."""
        return {slot: list(history) for slot, history in self.facts}

    def record_ids(self) -> dict[str, str]:
        """The dataset's utterance ids -> the record id the memory gives their turn.

        Turns are recorded as ``r0001``, ``r0002``, ... in dialogue order
        (``projections.state.record_id_for`` of the turn counted from 1);
        an id held by two turns maps to the first.
        """
        mapping: dict[str, str] = {}
        for number, turn in enumerate(self.turns, start=1):
            for source_id in turn.source_ids:
                mapping.setdefault(source_id, record_id_for(number))
        return mapping

    def language(self) -> str:
        """``lang`` when the dataset gives it; else ``zh`` when Chinese characters make up at least a third
        of the letters the user side says (a seed or MEME file without ``lang``), ``en`` otherwise."""
        if self.lang is not None:
            return self.lang
        text = "".join(t.user for t in self.turns)
        han = len(_HAN.findall(text))
        latin = sum(c.isascii() and c.isalpha() for c in text)
        return "zh" if han and 3 * han >= han + latin else "en"


_HAN = re.compile(r"[\u3400-\u9fff]")


@dataclass(frozen=True, slots=True, kw_only=True)
class Dataset:
    """A named collection of episodes.

    ``notes`` say what loading changed or could not resolve (sessions
    dropped by ``max_turns``, evidence ids that name no turn); they are not
    part of the content hash.
    """

    name: str
    source: str
    episodes: tuple[Episode, ...]
    notes: tuple[str, ...] = ()
    #: The dataset's attribute names, {canonical slot: (other names, ...)}: the gate stores a summary slot
    #: written under any of them as the canonical one (seed files: a top-level `attributes` object).
    attributes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def content_hash(self) -> str:
        """SHA-256 of the canonical JSON of the episodes (name/source/notes excluded)."""
        payload = json.dumps(
            dataset_to_json(self)["episodes"],
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------
# Serialisation
# --------------------------------------------------------------------------


def _turn_to_json(turn: Turn) -> dict[str, Any]:
    item: dict[str, Any] = {"user": turn.user, "agent": turn.agent}
    if turn.occurred_at is not None:
        item["occurred_at"] = turn.occurred_at
    if turn.source_ids:
        item["source_ids"] = list(turn.source_ids)
    if turn.attachments:
        item["attachments"] = list(turn.attachments)
    if turn.source is not None:
        item["source"] = turn.source
    if turn.blocks:
        item["blocks"] = [_block_to_json(b) for b in turn.blocks]
    return item


def _block_to_json(block: Block) -> dict[str, Any]:
    item: dict[str, Any] = {"mime": block.mime, "caption": block.caption}
    if block.source is not None:
        item["source"] = block.source
    if block.data is not None:
        item["data_base64"] = base64.b64encode(block.data).decode("ascii")
    if block.side != "user":
        item["side"] = block.side
    return item


def _probe_to_json(probe: Probe) -> dict[str, Any]:
    item: dict[str, Any] = {
        "probe_id": probe.probe_id,
        "type": probe.type,
        "question": probe.question,
        "answer": probe.answer,
    }
    if probe.fact_key is not None:
        item["fact_key"] = probe.fact_key
    if probe.evidence:
        item["evidence"] = list(probe.evidence)
    if probe.asked_at is not None:
        item["asked_at"] = probe.asked_at
    if probe.distractor is not None:
        item["distractor"] = probe.distractor
    if probe.poison is not None:
        item["poison"] = probe.poison
    return item


def _episode_to_json(episode: Episode) -> dict[str, Any]:
    item: dict[str, Any] = {"episode_id": episode.episode_id}
    if episode.lang is not None:
        item["lang"] = episode.lang
    item["dialogues"] = [_turn_to_json(turn) for turn in episode.turns]
    item["facts"] = {
        slot: [[turn, value] for turn, value in history]
        for slot, history in episode.facts
    }
    item["probes"] = [_probe_to_json(probe) for probe in episode.probes]
    return item


def dataset_to_json(ds: Dataset) -> dict[str, Any]:
    """Seed-format JSON object for ``ds``; ``load_dataset`` reads it back equal."""
    meta: dict[str, Any] = {"name": ds.name, "source": ds.source}
    if ds.notes:
        meta["notes"] = list(ds.notes)
    out: dict[str, Any] = {"meta": meta, "episodes": [_episode_to_json(episode) for episode in ds.episodes]}
    if ds.attributes:
        out["attributes"] = {slot: list(names) for slot, names in ds.attributes.items()}
    return out


# --------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _Where:
    """Location of a record inside a file, for error messages."""

    path: str
    record: str

    def error(self, message: str) -> DatasetError:
        return DatasetError(_one_line(f"{self.path}: {self.record}: {message}"))

    def child(self, suffix: str) -> _Where:
        return _Where(path=self.path, record=f"{self.record}{suffix}")


def _one_line(text: str) -> str:
    return re.sub(r"\s*[\r\n]+\s*", " ", text)


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: object) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean"}
    if value is None:
        return "null"
    return names.get(type(value), type(value).__name__)


def _require_str(where: _Where, item: Mapping[str, Any], field: str) -> str:
    if field not in item:
        raise where.error(f"missing field '{field}'")
    value = item[field]
    if not isinstance(value, str):
        raise where.error(f"field '{field}' is not a string (got {_kind(value)})")
    return value


def _scalar_text(where: _Where, field: str, value: object) -> str:
    """Strings pass through; numbers become their decimal text."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise where.error(f"field '{field}' is not a string or number (got {_kind(value)})")


def _optional_str(where: _Where, item: Mapping[str, Any], *fields: str) -> str | None:
    for field in fields:
        value = item.get(field)
        if value is None:
            continue
        if not isinstance(value, str):
            raise where.error(f"field '{field}' is not a string (got {_kind(value)})")
        return value
    return None


def _optional_str_tuple(where: _Where, item: Mapping[str, Any], field: str) -> tuple[str, ...]:
    value = item.get(field)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(entry, str) for entry in value):
        raise where.error(f"field '{field}' is not a list of strings (got {_show(value)})")
    return tuple(value)


def _parse_turn(where: _Where, item: object) -> Turn:
    if isinstance(item, list):
        if len(item) != 2:
            raise where.error(f"expected a [user, agent] pair, got a list of {len(item)} items")
        for field, value in zip(("user", "agent"), item):
            if not isinstance(value, str):
                raise where.error(f"field '{field}' is not a string (got {_kind(value)})")
        return Turn(user=item[0], agent=item[1])
    if not isinstance(item, dict):
        raise where.error(f"expected an object or a [user, agent] pair, got {_kind(item)}")
    return Turn(
        user=_require_str(where, item, "user"),
        agent=_require_str(where, item, "agent"),
        occurred_at=_optional_str(where, item, "occurred_at", "timestamp"),
        source_ids=_optional_str_tuple(where, item, "source_ids"),
        attachments=_optional_str_tuple(where, item, "attachments"),
        source=_optional_str(where, item, "source"),
        blocks=_parse_blocks(where, item),
    )


#: The largest block a seed file may carry, inline or by path.
MAX_BLOCK_BYTES = 16 * 1024 * 1024
_BLOCK_FIELDS = frozenset({"mime", "data_base64", "path", "source", "caption", "side"})


def _parse_blocks(where: _Where, item: Mapping[str, Any]) -> tuple[Block, ...]:
    """A turn's ``blocks``: ``{mime, data_base64 | path, source?, caption?, side?}`` each.

    A ``path`` is read relative to the dataset file's folder and may not
    leave it; without bytes a block needs a ``source`` (a URL) or a caption.
    """
    value = item.get("blocks")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise where.error(f"field 'blocks' is not a list (got {_kind(value)})")
    out = []
    for index, raw in enumerate(value):
        at = where.child(f".blocks[{index}]")
        if not isinstance(raw, dict):
            raise at.error(f"expected a block object, got {_kind(raw)}")
        unknown = sorted(set(raw) - _BLOCK_FIELDS)
        if unknown:
            raise at.error(f"unknown field(s) {', '.join(unknown)}; a block has {', '.join(sorted(_BLOCK_FIELDS))}")
        mime = _require_str(at, raw, "mime")
        if "data_base64" in raw and "path" in raw:
            raise at.error("give 'data_base64' or 'path', not both")
        data = _block_bytes(at, raw)
        try:
            out.append(Block(mime=mime, source=_optional_str(at, raw, "source"),
                             caption=_optional_str(at, raw, "caption") or "", data=data,
                             side=_optional_str(at, raw, "side") or "user"))
        except ValueError as exc:
            raise at.error(str(exc).removeprefix("block: ")) from None
    return tuple(out)


def read_block_file(at: _Where, name: str) -> bytes | None:
    """A block's bytes from `name`, relative to the dataset file's folder; None when there is no such file.

    A name that leaves the folder (``..``, an absolute path, a link out of it) is refused.
    """
    folder = Path(at.path).resolve().parent
    target = (folder / name).resolve()
    if Path(name).is_absolute() or not target.is_relative_to(folder):
        raise at.error(f"path {name!r} leaves the dataset's folder; a block's path is relative to it")
    if not target.is_file():
        return None
    if target.stat().st_size > MAX_BLOCK_BYTES:
        raise at.error(f"path {name!r} is larger than {MAX_BLOCK_BYTES} bytes")
    return target.read_bytes()


def _block_bytes(at: _Where, raw: Mapping[str, Any]) -> bytes | None:
    if "data_base64" in raw:
        text = raw["data_base64"]
        if not isinstance(text, str):
            raise at.error(f"field 'data_base64' is not a string (got {_kind(text)})")
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise at.error("field 'data_base64' is not valid base64") from None
    elif "path" in raw:
        name = raw["path"]
        if not isinstance(name, str) or not name:
            raise at.error(f"field 'path' is not a non-empty string (got {_show(name)})")
        data = read_block_file(at, name)
        if data is None:
            raise at.error(f"path {name!r}: no such file beside the dataset")
    else:
        return None
    if len(data) > MAX_BLOCK_BYTES:
        raise at.error(f"block is larger than {MAX_BLOCK_BYTES} bytes")
    return data


def _parse_turns(where: _Where, episode: Mapping[str, Any]) -> tuple[Turn, ...]:
    if "dialogues" not in episode:
        raise where.error("missing field 'dialogues'")
    dialogues = episode["dialogues"]
    if not isinstance(dialogues, list):
        raise where.error(f"field 'dialogues' is not a list (got {_kind(dialogues)})")
    return tuple(
        _parse_turn(where.child(f".dialogues[{index}]"), item)
        for index, item in enumerate(dialogues)
    )


_INT_TEXT = re.compile(r"\s*[+-]?\d+\s*")


def _parse_fact_turn(where: _Where, raw: object) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        turn = raw
    elif isinstance(raw, str) and _INT_TEXT.fullmatch(raw):
        turn = int(raw)
    else:
        raise where.error(f"turn {_show(raw)} is not an integer")
    if turn < 0:
        raise where.error(f"turn {turn} is negative")
    return turn


def _parse_fact_entry(where: _Where, entry: object) -> tuple[int, str]:
    if not isinstance(entry, list) or len(entry) != 2:
        raise where.error(f"expected a [turn, value] pair, got {_show(entry)}")
    turn = _parse_fact_turn(where, entry[0])
    if isinstance(entry[1], (str, int, float)) and not isinstance(entry[1], bool):
        return turn, str(entry[1])
    raise where.error(f"value {_show(entry[1])} is not a string or number")


def _parse_facts(where: _Where, episode: Mapping[str, Any]) -> tuple[tuple[str, FactHistory], ...]:
    facts = episode.get("facts")
    if facts is None:
        return ()
    if not isinstance(facts, dict):
        raise where.error(f"field 'facts' is not an object (got {_kind(facts)})")
    parsed: list[tuple[str, FactHistory]] = []
    for slot, entries in facts.items():
        slot_where = where.child(f".facts[{slot!r}]")
        if not isinstance(entries, list):
            raise slot_where.error(f"expected a list of [turn, value] pairs, got {_kind(entries)}")
        history = [
            _parse_fact_entry(slot_where.child(f"[{index}]"), entry)
            for index, entry in enumerate(entries)
        ]
        # Stable sort keeps same-turn entries in file order.
        parsed.append((slot, tuple(sorted(history, key=lambda pair: pair[0]))))
    return tuple(parsed)


def _parse_probe(where: _Where, item: object, default_id: str) -> Probe:
    if not isinstance(item, dict):
        raise where.error(f"expected an object, got {_kind(item)}")
    for field in ("type", "question", "answer"):
        if field not in item:
            raise where.error(f"missing field '{field}'")
    raw_id = item.get("probe_id", item.get("id"))
    return Probe(
        probe_id=default_id if raw_id is None else _scalar_text(where, "probe_id", raw_id),
        type=_require_str(where, item, "type"),
        question=_require_str(where, item, "question"),
        answer=_scalar_text(where, "answer", item["answer"]),
        fact_key=_optional_str(where, item, "fact_key"),
        evidence=_optional_str_tuple(where, item, "evidence"),
        asked_at=_optional_str(where, item, "asked_at"),
        distractor=_optional_str(where, item, "distractor"),
        poison=_optional_str(where, item, "poison"),
    )


def _parse_probes(where: _Where, episode: Mapping[str, Any], episode_id: str) -> tuple[Probe, ...]:
    probes = episode.get("probes")
    if probes is None:
        return ()
    if not isinstance(probes, list):
        raise where.error(f"field 'probes' is not a list (got {_kind(probes)})")
    return tuple(
        _parse_probe(where.child(f".probes[{index}]"), item, f"{episode_id}:p{index}")
        for index, item in enumerate(probes)
    )


def _parse_episode_id(where: _Where, episode: Mapping[str, Any], index: int) -> str:
    raw = episode.get("episode_id")
    if raw is None:
        return f"ep{index}"
    if isinstance(raw, str) or (isinstance(raw, int) and not isinstance(raw, bool)):
        return str(raw)
    raise where.error(f"field 'episode_id' is not a string or integer (got {_kind(raw)})")


def _parse_episode(where: _Where, item: object, index: int) -> Episode:
    if not isinstance(item, dict):
        raise where.error(f"expected an object, got {_kind(item)}")
    episode_id = _parse_episode_id(where, item, index)
    return Episode(
        episode_id=episode_id,
        turns=_parse_turns(where, item),
        facts=_parse_facts(where, item),
        probes=_parse_probes(where, item, episode_id),
        lang=_optional_str(where, item, "lang"),
    )


def read_dataset_json(path: str) -> object:
    """The parsed JSON of a dataset file; ``DatasetError`` if it cannot be read or parsed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such dataset file") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: is a directory, not a dataset file") from None
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not valid UTF-8 at byte {exc.start}") from None
    except OSError as exc:
        raise DatasetError(_one_line(f"{path}: cannot read dataset file: {exc.strerror}")) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None


def _episode_list(path: str, document: object) -> list[object]:
    top = _Where(path=path, record="top level")
    if isinstance(document, list):
        episodes: list[object] = document
    elif isinstance(document, dict):
        if "episodes" not in document:
            raise top.error("missing field 'episodes'")
        value = document["episodes"]
        if not isinstance(value, list):
            raise top.error(f"field 'episodes' is not a list (got {_kind(value)})")
        episodes = value
    else:
        raise top.error(f"expected an object or a list of episodes, got {_kind(document)}")
    if not episodes:
        raise DatasetError(f"{path}: episodes: contains no episodes")
    return episodes


def _meta_text(document: object, field: str, default: str) -> str:
    meta = document.get("meta") if isinstance(document, dict) else None
    value = meta.get(field) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else default


def _meta_notes(document: object) -> tuple[str, ...]:
    meta = document.get("meta") if isinstance(document, dict) else None
    notes = meta.get("notes") if isinstance(meta, dict) else None
    if isinstance(notes, list) and all(isinstance(note, str) for note in notes):
        return tuple(notes)
    return ()


def parse_seed(path: str, document: object) -> Dataset:
    """The seed loader proper, for ``document`` already read from ``path``."""
    episodes = tuple(
        _parse_episode(_Where(path=path, record=f"episodes[{index}]"), item, index)
        for index, item in enumerate(_episode_list(path, document))
    )
    return Dataset(
        name=_meta_text(document, "name", Path(path).stem),
        source=_meta_text(document, "source", path),
        episodes=episodes,
        notes=_meta_notes(document),
        attributes=_attributes(path, document),
    )


def _attributes(path: str, document: object) -> dict[str, tuple[str, ...]]:
    """A seed file's top-level `attributes`: {canonical slot: [other names]}; absent means none."""
    if not isinstance(document, dict) or document.get("attributes") is None:
        return {}
    raw = document["attributes"]
    problems = alias_problems(raw, where="attributes")
    if problems:
        raise DatasetError(f"{path}: {problems[0]}")
    return {" ".join(slot.split()): tuple(" ".join(n.split()) for n in names) for slot, names in raw.items()}
