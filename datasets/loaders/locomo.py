"""LoCoMo conversations (snap-research/locomo) as evaluation episodes.

Two published shapes are read unchanged:

* ``locomo10.json``: a list of samples ``{sample_id, conversation, qa,
  event_summary?, observation?, session_summary?}`` (``locomo-list``);
* one conversation per file (``locomo-single``): an object holding the
  conversation's keys (``speaker_a``, ``session_N``, ...), ``events_session_N``
  and ``qa`` at the top level, or one sample object with ``conversation``
  nested.

A conversation holds ``session_N`` (a list of ``{speaker, dia_id, text,
img_url?, blip_caption?, query?}``) and ``session_N_date_time`` ("1:56 pm on
8 May, 2023").  Sessions run in numeric order of N (session_10 after
session_9).  Within a session consecutive utterances are paired into one
turn, the first as the user side and the next as the agent side, whoever
speaks; an odd last utterance becomes a turn with an empty agent side, so no
utterance is lost.  Both sides are people and the questions name them, so
each side reads ``<speaker>: <text>``; an image shared with it becomes a
block of the turn (``Turn.blocks``, ``ledger.blocks``) on that side: MIME type
guessed from the URL (``image/*`` when the URL does not say), ``source`` the
URL, caption the ``blip_caption`` (on the first URL of an utterance), no bytes
(the file holds only the URL), unless the URL is a relative path naming a file
beside the dataset (never outside its folder): then its bytes are loaded. The window and the summarizer see the caption
as ``[image: <blip_caption>]``; the URLs are also kept in ``Turn.attachments``.
Each turn's ``occurred_at`` is its session's date in ISO 8601, or the string
as written when it cannot be parsed.  Every ``dia_id`` is kept in its turn's
``source_ids``, so ``Episode.record_ids()`` maps it to the turn's record id.

``qa`` items ``{question, answer | adversarial_answer, evidence [dia_id],
category}`` become probes of type ``locomo_cat<category>`` (1 multi-hop, 2
temporal, 3 open-domain, 4 single-hop, 5 adversarial, as the dataset's own
evaluation code uses them); answers are kept as text (some are integers).
Adversarial questions (category 5) rest on a false premise, and the file's
``adversarial_answer`` is the tempting wrong option the benchmark offers next
to "Not mentioned in the conversation".  Their gold is therefore
``ADVERSARIAL_GOLD`` and the adversarial answer is kept as the probe's
``distractor``.  Evidence strings holding several ids ("D8:6; D9:17") are
split, zero-padded ids ("D30:05") match their plain form, and an id that still
names no utterance is kept as written and reported in the dataset's notes.

The summaries and observations the authors generated (``event_summary``,
``observation``, ``session_summary``, ``events_session_N``, ...) and the image
search ``query`` are known and deliberately not loaded.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledgermem.datasets.model import Probe, Turn, read_block_file
from ledgermem.ledger.blocks import Block as MediaBlock
from ledgermem.datasets.loaders.common import (
    Block,
    Draft,
    check_drafts,
    FieldLog,
    Loaded,
    LoadOptions,
    Where,
    assemble,
    finish,
    kind_of,
    optional_str,
    parse_timestamp,
    require_str,
    scalar_text,
    select,
)

__all__ = ["ADVERSARIAL_CATEGORY", "ADVERSARIAL_GOLD", "SESSION_KEY", "load_list", "load_single", "looks_like_sample"]

ADVERSARIAL_CATEGORY = 5
ADVERSARIAL_GOLD = "Not mentioned in the conversation"

SESSION_KEY = re.compile(r"session_(\d+)")
_NUMBER = re.compile(r"\d+")
_DIA_ID = re.compile(r"\s*D(\d+)\s*:\s*(\d+)\s*")
_EVIDENCE_SEPARATOR = re.compile(r"[;,\s]+")
_INT_TEXT = re.compile(r"\s*\d+\s*")

SAMPLE_FIELDS = ("sample_id", "conversation", "qa")
GENERATED_FIELDS = ("event_summary", "observation", "session_summary",
                    "events_session_N", "session_N_observation", "session_N_summary")
CONVERSATION_FIELDS = ("speaker_a", "speaker_b", "session_N", "session_N_date_time")
UTTERANCE_FIELDS = ("speaker", "dia_id", "text", "img_url", "blip_caption")
UTTERANCE_IGNORED = ("query",)
QA_FIELDS = ("question", "answer", "adversarial_answer", "evidence", "category")


def _generic(key: str) -> str:
    return _NUMBER.sub("N", key)


def looks_like_sample(record: Mapping[str, Any]) -> bool:
    """A LoCoMo sample: a ``conversation`` object, or ``qa`` with LoCoMo's own sample keys."""
    if isinstance(record.get("conversation"), dict):
        return True
    own = {"sample_id", "event_summary", "observation", "session_summary"}
    return "qa" in record and bool(own & record.keys())


@dataclass(frozen=True, slots=True)
class _Utterance:
    dia_id: str
    text: str
    urls: tuple[str, ...]
    caption: str | None = None
    data: tuple[bytes | None, ...] = ()  # per URL: the bytes of a local file it names

    def blocks(self, side: str) -> tuple[MediaBlock, ...]:
        """The utterance's images as blocks: one per URL, the caption on the first (one image without a URL
        when only a caption is given)."""
        if not self.urls:
            return (MediaBlock(mime="image/*", caption=self.caption, side=side),) if self.caption else ()
        data = self.data or (None,) * len(self.urls)
        return tuple(MediaBlock(mime=image_mime(url), source=url, caption=(self.caption or "") if i == 0 else "",
                                side=side, data=data[i]) for i, url in enumerate(self.urls))


def image_mime(url: str) -> str:
    """The MIME type an image URL names by its extension; ``image/*`` when it names none."""
    guessed = mimetypes.guess_type(url.split("?", 1)[0].split("#", 1)[0])[0]
    return guessed if guessed and guessed.startswith("image/") else "image/*"


# --------------------------------------------------------------------------
# Conversation
# --------------------------------------------------------------------------


def _urls(where: Where, item: Mapping[str, Any]) -> tuple[str, ...]:
    value = item.get("img_url")
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(url, str) for url in value):
        return tuple(value)
    raise where.error(f"field 'img_url' is not a string or a list of strings (got {kind_of(value)})")


def _utterance(where: Where, item: object, log: FieldLog) -> _Utterance:
    if not isinstance(item, dict):
        raise where.error(f"expected an utterance object, got {kind_of(item)}")
    log.check("utterance", item, UTTERANCE_FIELDS, UTTERANCE_IGNORED)
    speaker = require_str(where, item, "speaker")
    dia_id = require_str(where, item, "dia_id")
    text = f"{speaker}: {require_str(where, item, 'text')}"
    caption = optional_str(where, item, "blip_caption")
    urls = _urls(where, item)
    local = tuple(None if "://" in url or url.startswith("data:") else read_block_file(where, url) for url in urls)
    return _Utterance(dia_id=dia_id, text=text, urls=urls, caption=caption or None, data=local)


def _pair(utterances: Sequence[_Utterance], occurred_at: str | None) -> tuple[Turn, ...]:
    turns = []
    for index in range(0, len(utterances), 2):
        pair = utterances[index:index + 2]
        turns.append(Turn(
            user=pair[0].text,
            agent=pair[1].text if len(pair) > 1 else "",
            occurred_at=occurred_at,
            source_ids=tuple(u.dia_id for u in pair),
            attachments=tuple(url for u in pair for url in u.urls),
            blocks=(*pair[0].blocks("user"), *(pair[1].blocks("agent") if len(pair) > 1 else ())),
        ))
    return tuple(turns)


def _sessions(where: Where, conversation: Mapping[str, Any], log: FieldLog, episode_id: str) -> tuple[Block, ...]:
    numbered = sorted((int(m.group(1)), key) for key in conversation if (m := SESSION_KEY.fullmatch(key)))
    if not numbered:
        raise where.error("no 'session_N' field (expected session_1, session_2, ...)")
    blocks = []
    seen: set[str] = set()
    for _, key in numbered:
        value = conversation[key]
        if not isinstance(value, list):
            raise where.error(f"field '{key}' is not a list of utterances (got {kind_of(value)})")
        stamp = optional_str(where, conversation, f"{key}_date_time")
        utterances = [_utterance(where.child(f".{key}[{index}]"), item, log) for index, item in enumerate(value)]
        for u in utterances:
            if u.dia_id in seen:
                log.notes.append(f"{episode_id}: dia_id {u.dia_id!r} appears more than once; "
                                 "evidence maps to its first turn")
            seen.add(u.dia_id)
        blocks.append(Block(block_id=key, turns=_pair(utterances, parse_timestamp(stamp) if stamp else None)))
    return tuple(blocks)


# --------------------------------------------------------------------------
# Questions
# --------------------------------------------------------------------------


def _canonical(dia_id: str) -> str:
    m = _DIA_ID.fullmatch(dia_id)
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else dia_id


def _known_ids(blocks: Sequence[Block]) -> dict[str, str]:
    """Every dia_id, and its canonical form, -> the dia_id as the conversation writes it."""
    known: dict[str, str] = {}
    for block in blocks:
        for turn in block.turns:
            for dia_id in turn.source_ids:
                known.setdefault(dia_id, dia_id)
                known.setdefault(_canonical(dia_id), dia_id)
    return known


def _evidence(where: Where, item: Mapping[str, Any], known: Mapping[str, str]) -> tuple[str, ...]:
    value = item.get("evidence")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise where.error(f"field 'evidence' is not a list of dia_ids (got {kind_of(value)})")
    ids: list[str] = []
    for index, entry in enumerate(value):
        if not isinstance(entry, str):
            raise where.error(f"field 'evidence' item {index} is not a dia_id string (got {kind_of(entry)})")
        for piece in _EVIDENCE_SEPARATOR.split(entry.strip()):
            if piece:
                ids.append(known.get(piece) or known.get(_canonical(piece)) or piece)
    return tuple(dict.fromkeys(ids))


def _category(where: Where, item: Mapping[str, Any]) -> int:
    if "category" not in item:
        raise where.error("missing field 'category'")
    value = item["category"]
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INT_TEXT.fullmatch(value):
        return int(value)
    raise where.error(f"field 'category' is not an integer (got {kind_of(value)})")


def _probe(where: Where, item: object, probe_id: str, known: Mapping[str, str], log: FieldLog) -> Probe:
    if not isinstance(item, dict):
        raise where.error(f"expected a question object, got {kind_of(item)}")
    log.check("qa", item, QA_FIELDS)
    question = require_str(where, item, "question")
    category = _category(where, item)
    distractor = None
    if category == ADVERSARIAL_CATEGORY:
        answer = ADVERSARIAL_GOLD
        for field in ("adversarial_answer", "answer"):
            if item.get(field) is not None:
                distractor = scalar_text(where, field, item[field])
                break
    elif "answer" not in item:
        raise where.error("missing field 'answer'")
    else:
        answer = scalar_text(where, "answer", item["answer"])
    return Probe(probe_id=probe_id, type=f"locomo_cat{category}", question=question, answer=answer,
                 evidence=_evidence(where, item, known), distractor=distractor)


def _probes(where: Where, qa: object, blocks: Sequence[Block], episode_id: str, log: FieldLog) -> tuple[Probe, ...]:
    if qa is None:
        return ()
    if not isinstance(qa, list):
        raise where.error(f"field 'qa' is not a list (got {kind_of(qa)})")
    known = _known_ids(blocks)
    return tuple(_probe(where.child(f".qa[{index}]"), item, f"{episode_id}:q{index}", known, log)
                 for index, item in enumerate(qa))


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------


def _sample_id(where: Where, item: Mapping[str, Any]) -> str | None:
    value = item.get("sample_id")
    if value is None:
        return None
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value)
    raise where.error(f"field 'sample_id' is not a string or integer (got {kind_of(value)})")


def _record(path: str, label: str, sample_id: str | None) -> Where:
    return Where(path=path, record=label if sample_id is None else f"{label} (sample_id {sample_id!r})")


def _names(probe: Probe) -> tuple[str, ...]:
    # "locomo_cat5", "cat5" and "5" all select the adversarial questions.
    return probe.type, probe.type.removeprefix("locomo_"), probe.type.removeprefix("locomo_cat")


def _finish(kind: str, path: str, drafts: Sequence[Draft], options: LoadOptions, log: FieldLog,
            labels: Sequence[str]) -> Loaded:
    check_drafts(path, list(zip(labels, drafts)))
    chosen = select(path, drafts, options, _names)
    return finish(kind, Path(path).stem, path, (assemble(d, options, log) for d in chosen), log)


def load_list(path: str, document: Sequence[object], options: LoadOptions) -> Loaded:
    """``locomo10.json``: a list of samples."""
    log = FieldLog()
    drafts = []
    labels = []
    for index, sample in enumerate(document):
        where = Where(path=path, record=f"samples[{index}]")
        if not isinstance(sample, dict):
            raise where.error(f"expected a sample object, got {kind_of(sample)}")
        sample_id = _sample_id(where, sample)
        where = _record(path, f"samples[{index}]", sample_id)
        episode_id = sample_id or f"sample{index}"
        log.check("sample", sample, SAMPLE_FIELDS, GENERATED_FIELDS)
        if "conversation" not in sample:
            raise where.error("missing field 'conversation'")
        conversation = sample["conversation"]
        if not isinstance(conversation, dict):
            raise where.error(f"field 'conversation' is not an object (got {kind_of(conversation)})")
        log.check("conversation", conversation, CONVERSATION_FIELDS, generic=_generic)
        blocks = _sessions(where.child(".conversation"), conversation, log, episode_id)
        drafts.append(Draft(episode_id=episode_id, blocks=blocks,
                            probes=_probes(where, sample.get("qa"), blocks, episode_id, log)))
        labels.append(where.record)
    return _finish("locomo-list", path, drafts, options, log, labels)


def load_single(path: str, document: Mapping[str, Any], options: LoadOptions) -> Loaded:
    """One conversation per file: its keys at the top level, or one sample with ``conversation`` nested."""
    log = FieldLog()
    top = Where(path=path, record="top level")
    sample_id = _sample_id(top, document)
    where = _record(path, "top level", sample_id)
    episode_id = sample_id or Path(path).stem
    if "conversation" in document:
        conversation = document["conversation"]
        if not isinstance(conversation, dict):
            raise where.error(f"field 'conversation' is not an object (got {kind_of(conversation)})")
        log.check("sample", document, SAMPLE_FIELDS, GENERATED_FIELDS, generic=_generic)
        log.check("conversation", conversation, CONVERSATION_FIELDS, generic=_generic)
        blocks = _sessions(where.child(".conversation"), conversation, log, episode_id)
    else:
        log.check("conversation", document, (*CONVERSATION_FIELDS, "sample_id", "qa"), GENERATED_FIELDS,
                  generic=_generic)
        blocks = _sessions(where, document, log, episode_id)
    draft = Draft(episode_id=episode_id, blocks=blocks,
                  probes=_probes(where, document.get("qa"), blocks, episode_id, log))
    return _finish("locomo-single", path, [draft], options, log, [where.record])
