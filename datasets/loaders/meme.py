"""MEME-style memory datasets: the seed format under other field names.

MEME files come in variants with no single canonical schema.  Each field of
the seed format can appear under any of its aliases in ``ALIASES`` (the first
alias of each row is the seed's own name):

=============  ================================================================
role           aliases
=============  ================================================================
episodes       episodes, data, samples, conversations, dialogs, items, records
episode_id     episode_id, id, conversation_id, conv_id, dialogue_id, dialog_id,
               sample_id
lang           lang, language, locale
dialogues      dialogues, dialogue, dialog, conversation, turns, messages,
               history, utterances
facts          facts, slots, gold_facts
probes         probes, questions, qa, queries, tests
user           user, speaker_1, human, user_text, input
agent          agent, assistant, bot, speaker_2, ai, response, output,
               agent_text, reply
occurred_at    occurred_at, timestamp, time, date, datetime, created_at
turn_id        turn_id, dia_id, utterance_id, id
role           role, speaker, from, author, sender
content        content, text, utterance, message, value
probe_id       probe_id, id, question_id, qid
type           type, probe_type, category, question_type, kind
question       question, query, prompt, q
answer         answer, gold, target, expected, gold_answer, reference
fact_key       fact_key, slot, key, attribute
evidence       evidence, evidence_turns, evidence_ids, support
slot           slot, fact_key, key, attribute, name      (a fact object)
turn           turn, turn_index, at_turn, index          (a fact object)
value          value, val, answer                        (a fact object)
=============  ================================================================

The file is a list of episodes, an object holding one under an ``episodes``
alias (with an optional ``meta`` as in the seed format), or a single episode
object.  A dialogue entry is a ``[user, agent]`` pair, an object with
``user``/``agent`` aliases, or a message ``{role, content}`` whose role is one
of ``USER_ROLES`` or ``AGENT_ROLES``; messages are paired in order as in
LongMemEval (a message without a partner becomes a turn with an empty side).
Facts are the seed's ``{slot: [[turn, value], ...]}`` or a list of
``{slot, turn, value}`` objects; turns are 0-based indices of the paired
dialogue, as in the seed format.  A probe without a type alias gets
``DEFAULT_TYPE``.  Evidence entries are 0-based turn indices, turn ids given
by a ``turn_id`` alias, or record ids (``r0003``); an entry that names no turn
is kept as written and reported.

Two aliases of one role in the same object must agree; a record with no
dialogue alias, a turn or probe that maps to nothing, raises ``DatasetError``
naming the file, the record and the keys it could not map.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledgermem.datasets.model import (
    DatasetError,
    Episode,
    FactHistory,
    Probe,
    Turn,
    _parse_fact_entry,
    _parse_fact_turn,
)
from ledgermem.datasets.loaders.common import (
    FieldLog,
    check_episode,
    check_unique,
    Loaded,
    LoadOptions,
    Where,
    finish,
    kind_of,
    parse_timestamp,
    scalar_text,
    select,
    show,
)
from ledgermem.projections.state import record_id_for

__all__ = ["AGENT_ROLES", "ALIASES", "DEFAULT_TYPE", "USER_ROLES", "load", "looks_like_record"]

ALIASES: dict[str, tuple[str, ...]] = {
    "episodes": ("episodes", "data", "samples", "conversations", "dialogs", "items", "records"),
    "episode_id": ("episode_id", "id", "conversation_id", "conv_id", "dialogue_id", "dialog_id", "sample_id"),
    "lang": ("lang", "language", "locale"),
    "dialogues": ("dialogues", "dialogue", "dialog", "conversation", "turns", "messages", "history", "utterances"),
    "facts": ("facts", "slots", "gold_facts"),
    "probes": ("probes", "questions", "qa", "queries", "tests"),
    "user": ("user", "speaker_1", "human", "user_text", "input"),
    "agent": ("agent", "assistant", "bot", "speaker_2", "ai", "response", "output", "agent_text", "reply"),
    "occurred_at": ("occurred_at", "timestamp", "time", "date", "datetime", "created_at"),
    "turn_id": ("turn_id", "dia_id", "utterance_id", "id"),
    "role": ("role", "speaker", "from", "author", "sender"),
    "content": ("content", "text", "utterance", "message", "value"),
    "probe_id": ("probe_id", "id", "question_id", "qid"),
    "type": ("type", "probe_type", "category", "question_type", "kind"),
    "question": ("question", "query", "prompt", "q"),
    "answer": ("answer", "gold", "target", "expected", "gold_answer", "reference"),
    "fact_key": ("fact_key", "slot", "key", "attribute"),
    "evidence": ("evidence", "evidence_turns", "evidence_ids", "support"),
    "slot": ("slot", "fact_key", "key", "attribute", "name"),
    "turn": ("turn", "turn_index", "at_turn", "index"),
    "value": ("value", "val", "answer"),
}
USER_ROLES = frozenset({"user", "human", "speaker_1", "speaker1", "user_1", "customer", "client"})
AGENT_ROLES = frozenset({"agent", "assistant", "bot", "ai", "gpt", "model", "speaker_2", "speaker2"})
DEFAULT_TYPE = "qa"

_EPISODE_ROLES = ("episode_id", "lang", "dialogues", "facts", "probes")
_TURN_ROLES = ("user", "agent", "occurred_at", "turn_id", "role", "content")
_PROBE_ROLES = ("probe_id", "type", "question", "answer", "fact_key", "evidence")
_FACT_ROLES = ("slot", "turn", "value")
_RECORD_ID = re.compile(r"r(\d{4,})")
_DIGITS = re.compile(r"\s*\d+\s*")


def _fields(roles: Sequence[str]) -> frozenset[str]:
    return frozenset(alias for role in roles for alias in ALIASES[role])


def looks_like_record(record: Mapping[str, Any]) -> bool:
    """An episode under MEME names: a dialogue list under an alias, or seed names beside MEME-only ones.

    A record using only the seed's own names is a seed episode; one that
    holds ``dialogues`` but, say, ``questions`` would lose its questions to
    the seed loader, so it is read here.  A record with no dialogue list at
    all is not recognised as MEME.
    """
    dialogue = [a for a in ALIASES["dialogues"] if isinstance(record.get(a), list)]
    others = {a for role in ("facts", "probes") for a in ALIASES[role][1:]} & record.keys()
    return any(a != "dialogues" for a in dialogue) or (bool(dialogue) and bool(others))


def _pick(where: Where, item: Mapping[str, Any], role: str) -> tuple[str | None, Any]:
    """The field filling ``role`` and its value; two aliases with different values are an error."""
    present = [a for a in ALIASES[role] if item.get(a) is not None]
    if not present:
        return None, None
    values = {repr(item[a]) for a in present}
    if len(values) > 1:
        names = ", ".join(f"'{a}'" for a in present)
        raise where.error(f"fields {names} all stand for '{role}' but differ; keep one")
    return present[0], item[present[0]]


def _keys(item: Mapping[str, Any]) -> str:
    return ", ".join(f"'{k}'" for k in item) or "none"


def _text(where: Where, field: str, value: object) -> str:
    if not isinstance(value, str):
        raise where.error(f"field '{field}' is not a string (got {kind_of(value)})")
    return value


# --------------------------------------------------------------------------
# Dialogue
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Message:
    side: str  # "user" | "agent"
    text: str
    occurred_at: str | None
    ids: tuple[str, ...]


def _stamp(where: Where, item: Mapping[str, Any]) -> str | None:
    field, value = _pick(where, item, "occurred_at")
    return None if field is None else parse_timestamp(_text(where, field, value))


def _ids(where: Where, item: Mapping[str, Any]) -> tuple[str, ...]:
    field, value = _pick(where, item, "turn_id")
    return () if field is None else (scalar_text(where, field, value),)


def _entry(where: Where, item: object, log: FieldLog) -> Turn | _Message:
    """A dialogue entry: a whole turn, or one message still to be paired."""
    if isinstance(item, list):
        if len(item) != 2 or not all(isinstance(side, str) for side in item):
            raise where.error(f"expected a [user, agent] pair of strings, got {show(item)}")
        return Turn(user=item[0], agent=item[1])
    if not isinstance(item, dict):
        raise where.error(f"expected an object or a [user, agent] pair, got {kind_of(item)}")
    log.check("turn", item, _fields(_TURN_ROLES))
    user_field, user = _pick(where, item, "user")
    agent_field, agent = _pick(where, item, "agent")
    if user_field or agent_field:
        return Turn(user=_text(where, user_field, user) if user_field else "",
                    agent=_text(where, agent_field, agent) if agent_field else "",
                    occurred_at=_stamp(where, item), source_ids=_ids(where, item))
    role_field, role = _pick(where, item, "role")
    content_field, content = _pick(where, item, "content")
    if role_field is None or content_field is None:
        raise where.error(f"cannot map this turn: no user/agent field ({', '.join(ALIASES['user'])} / "
                          f"{', '.join(ALIASES['agent'])}) and no role/content message; found keys {_keys(item)}")
    name = _text(where, role_field, role).strip().lower()
    if name not in USER_ROLES | AGENT_ROLES:
        raise where.error(f"field '{role_field}' is {role!r}: neither a user role ({', '.join(sorted(USER_ROLES))}) "
                          f"nor an agent role ({', '.join(sorted(AGENT_ROLES))})")
    return _Message(side="user" if name in USER_ROLES else "agent", text=_text(where, content_field, content),
                    occurred_at=_stamp(where, item), ids=_ids(where, item))


def _joined(user: _Message | None, agent: _Message | None) -> Turn:
    first = user or agent
    assert first is not None
    return Turn(user=user.text if user else "", agent=agent.text if agent else "", occurred_at=first.occurred_at,
                source_ids=tuple(i for m in (user, agent) if m is not None for i in m.ids))


def _turns(where: Where, field: str, value: object, log: FieldLog) -> tuple[Turn, ...]:
    if not isinstance(value, list):
        raise where.error(f"field '{field}' is not a list (got {kind_of(value)})")
    turns: list[Turn] = []
    pending: _Message | None = None
    for index, item in enumerate(value):
        entry = _entry(where.child(f".{field}[{index}]"), item, log)
        if isinstance(entry, Turn) or entry.side == "user":
            if pending is not None:
                turns.append(_joined(pending, None))
            pending = None
        if isinstance(entry, Turn):
            turns.append(entry)
        elif entry.side == "user":
            pending = entry
        else:
            turns.append(_joined(pending, entry))
            pending = None
    if pending is not None:
        turns.append(_joined(pending, None))
    return tuple(turns)


# --------------------------------------------------------------------------
# Facts and probes
# --------------------------------------------------------------------------


def _fact_object(where: Where, item: object, log: FieldLog) -> tuple[str, tuple[int, str]]:
    if not isinstance(item, dict):
        raise where.error(f"expected a fact object or a slot table, got {kind_of(item)}")
    log.check("fact", item, _fields(_FACT_ROLES))
    picked = {role: _pick(where, item, role) for role in _FACT_ROLES}
    missing = [role for role, (field, _) in picked.items() if field is None]
    if missing:
        raise where.error(f"cannot map this fact: no {' / '.join(missing)} field; found keys {_keys(item)}")
    slot_field, slot = picked["slot"]
    turn = _parse_fact_turn(where, picked["turn"][1])
    value_field, value = picked["value"]
    return _text(where, str(slot_field), slot), (turn, scalar_text(where, str(value_field), value))


def _facts(where: Where, field: str | None, value: object, log: FieldLog) -> tuple[tuple[str, FactHistory], ...]:
    if field is None:
        return ()
    table: dict[str, list[tuple[int, str]]] = {}
    if isinstance(value, dict):
        for slot, entries in value.items():
            slot_where = where.child(f".{field}[{slot!r}]")
            if not isinstance(entries, list):
                raise slot_where.error(f"expected a list of [turn, value] pairs, got {kind_of(entries)}")
            table[slot] = [_parse_fact_entry(slot_where.child(f"[{i}]"), e) for i, e in enumerate(entries)]
    elif isinstance(value, list):
        for index, item in enumerate(value):
            slot, entry = _fact_object(where.child(f".{field}[{index}]"), item, log)
            table.setdefault(slot, []).append(entry)
    else:
        raise where.error(f"field '{field}' is not an object or a list (got {kind_of(value)})")
    # Stable sort keeps same-turn entries in file order, as the seed loader does.
    return tuple((slot, tuple(sorted(history, key=lambda pair: pair[0]))) for slot, history in table.items())


def _evidence(where: Where, field: str | None, value: object) -> tuple[str | int, ...]:
    if field is None:
        return ()
    if not isinstance(value, list) or not all(
            isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)) for v in value):
        raise where.error(f"field '{field}' is not a list of turn indices or ids (got {show(value)})")
    return tuple(value)


def _probe(where: Where, item: object, default_id: str, log: FieldLog) -> tuple[Probe, tuple[str | int, ...]]:
    if not isinstance(item, dict):
        raise where.error(f"expected a probe object, got {kind_of(item)}")
    log.check("probe", item, _fields(_PROBE_ROLES))
    picked = {role: _pick(where, item, role) for role in _PROBE_ROLES}
    missing = [role for role in ("question", "answer") if picked[role][0] is None]
    if missing:
        wanted = "; ".join(f"{role}: {', '.join(ALIASES[role])}" for role in missing)
        raise where.error(f"cannot map this probe: no field for {wanted}; found keys {_keys(item)}")
    (id_field, raw_id), (type_field, raw_type) = picked["probe_id"], picked["type"]
    (question_field, question), (answer_field, answer) = picked["question"], picked["answer"]
    key_field, key = picked["fact_key"]
    probe = Probe(
        probe_id=default_id if id_field is None else scalar_text(where, id_field, raw_id),
        type=DEFAULT_TYPE if type_field is None else scalar_text(where, type_field, raw_type),
        question=_text(where, str(question_field), question),
        answer=scalar_text(where, str(answer_field), answer),
        fact_key=None if key_field is None else _text(where, key_field, key),
    )
    return probe, _evidence(where, *picked["evidence"])


def _record_id(entry: str | int, turns: Sequence[Turn], by_id: Mapping[str, str]) -> str | None:
    if isinstance(entry, str) and entry in by_id:
        return by_id[entry]
    if isinstance(entry, str) and (m := _RECORD_ID.fullmatch(entry)):
        return entry if 1 <= int(m.group(1)) <= len(turns) else None
    index = entry if isinstance(entry, int) else int(entry) if _DIGITS.fullmatch(entry) else None
    return record_id_for(index + 1) if index is not None and 0 <= index < len(turns) else None


def _probes(where: Where, field: str | None, value: object, episode: Episode, log: FieldLog) -> tuple[Probe, ...]:
    if field is None:
        return ()
    if not isinstance(value, list):
        raise where.error(f"field '{field}' is not a list (got {kind_of(value)})")
    by_id = episode.record_ids()
    probes = []
    for index, item in enumerate(value):
        probe, entries = _probe(where.child(f".{field}[{index}]"), item, f"{episode.episode_id}:p{index}", log)
        evidence: dict[str, None] = {}
        for entry in entries:
            record = _record_id(entry, episode.turns, by_id)
            if record is None:
                log.unmapped_evidence.append(f"{probe.probe_id}: {entry}")
                log.notes.append(f"{probe.probe_id}: evidence {entry!r} names no turn of the dialogue; kept as given")
            evidence.setdefault(record or str(entry), None)
        probes.append(Probe(probe_id=probe.probe_id, type=probe.type, question=probe.question, answer=probe.answer,
                            fact_key=probe.fact_key, evidence=tuple(evidence)))
    return tuple(probes)


# --------------------------------------------------------------------------
# Records and files
# --------------------------------------------------------------------------


def _episode(where: Where, item: object, index: int, log: FieldLog) -> Episode:
    if not isinstance(item, dict):
        raise where.error(f"expected an episode object, got {kind_of(item)}")
    id_field, raw_id = _pick(where, item, "episode_id")
    episode_id = f"ep{index}" if id_field is None else scalar_text(where, id_field, raw_id)
    if id_field is not None:
        where = Where(path=where.path, record=f"{where.record} ({id_field} {episode_id!r})")
    log.check("episode", item, _fields(_EPISODE_ROLES))
    dialogue_field, dialogue = _pick(where, item, "dialogues")
    if dialogue_field is None:
        unmapped = {key: value for key, value in item.items() if key not in _fields(_EPISODE_ROLES)}
        raise where.error(f"no dialogue field (one of {', '.join(ALIASES['dialogues'])}); "
                          f"could not map keys {_keys(unmapped)}")
    lang_field, lang = _pick(where, item, "lang")
    turns = _turns(where, dialogue_field, dialogue, log)
    episode = Episode(episode_id=episode_id, turns=turns, facts=_facts(where, *_pick(where, item, "facts"), log),
                      probes=(), lang=None if lang_field is None else _text(where, lang_field, lang))
    probes = _probes(where, *_pick(where, item, "probes"), episode, log)
    return Episode(episode_id=episode.episode_id, turns=episode.turns, facts=episode.facts, probes=probes,
                   lang=episode.lang)


def _records(path: str, document: object, log: FieldLog) -> tuple[str, list[object], str]:
    """The episode records, the label of their container, and the dataset's name."""
    name = Path(path).stem
    if isinstance(document, list):
        return "records", document, name
    if not isinstance(document, dict):
        raise DatasetError(f"{path}: top level: expected an object or a list of episodes, got {kind_of(document)}")
    top = Where(path=path, record="top level")
    field, records = _pick(top, document, "episodes")
    if field is None:
        return "top level", [document], name  # one episode on its own
    log.check("top", document, (*ALIASES["episodes"], "meta"))
    if not isinstance(records, list):
        raise top.error(f"field '{field}' is not a list (got {kind_of(records)})")
    meta = document.get("meta")
    if isinstance(meta, dict) and isinstance(meta.get("name"), str):
        name = meta["name"]
    return field, records, name


def load(path: str, document: object, options: LoadOptions) -> Loaded:
    """A MEME file: episodes under aliased field names (see the module docstring)."""
    log = FieldLog()
    label, records, name = _records(path, document, log)
    if not records:
        raise DatasetError(f"{path}: {label}: contains no episodes")
    labels = [label if label == "top level" else f"{label}[{index}]" for index in range(len(records))]
    episodes = [_episode(Where(path=path, record=labels[index]), item, index, log) for index, item in enumerate(records)]
    for record, item, episode in zip(labels, records, episodes):
        where = Where(path=path, record=record)
        field = _pick(where, item, "probes")[0] if isinstance(item, dict) else None
        check_episode(where, episode, [f".{field}[{i}]" for i in range(len(episode.probes))] if field else None)
    check_unique(path, list(zip(labels, (episode.episode_id for episode in episodes))), "episode id")
    if options.max_turns is not None:
        raise DatasetError(f"{path}: max_turns applies to session-based files (LoCoMo, LongMemEval); "
                           "this MEME file's facts are indexed by turn, so its dialogues cannot be cut")
    return finish("meme", name, path, select(path, episodes, options), log)
