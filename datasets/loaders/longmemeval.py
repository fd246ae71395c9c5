"""LongMemEval (xiaowu0162/LongMemEval) questions as evaluation episodes.

``longmemeval_s.json``, ``longmemeval_m.json`` and ``longmemeval_oracle.json``
are each a JSON list of questions, read unchanged:
``{question_id, question_type, question, answer, question_date,
haystack_sessions, haystack_session_ids, haystack_dates,
answer_session_ids}``.  Each question is one episode: its haystack sessions
are the dialogue and the question is its one probe.

A session is a list of ``{role: user|assistant, content, has_answer?}``;
messages are paired in order into turns (a user message and the assistant
reply after it; a message without a partner becomes a turn with an empty
other side).  Each turn's ``occurred_at`` is its session's
``haystack_dates`` entry ("2023/05/20 (Sat) 02:21") in ISO 8601, or as
written when it cannot be parsed.  Sessions run in date order: the oracle
file does not sort them, and a note says how many questions were reordered.
A message's id is ``<session id>:<index in the session>``.

The probe's type is ``lme_<question_type>``, or ``lme_abstention`` when the
question id ends with ``_abs``; its ``asked_at`` is the ``question_date``.  Its
evidence is, for each of the ``answer_session_ids``, the turns of that
session marked ``has_answer: true``, or all of its turns when none is marked
(plus any marked turn in another session); a session id the haystack does
not hold is kept as written and reported.

``question_types`` matches the probe type with or without the ``lme_``
prefix (``knowledge-update``, ``lme_abstention``).  ``max_turns`` drops whole
sessions, the oldest first, never one that holds evidence, and notes per
question how many sessions and turns it dropped; a question whose evidence
sessions alone exceed the cap keeps them all and the note says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ledgermem.datasets.model import Probe, Turn
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
    require_list,
    require_str,
    scalar_text,
    select,
)

__all__ = ["ABSTENTION_SUFFIX", "load", "looks_like_question"]

ABSTENTION_SUFFIX = "_abs"
QUESTION_FIELDS = ("question_id", "question_type", "question", "answer", "question_date", "haystack_sessions",
                   "haystack_session_ids", "haystack_dates", "answer_session_ids")
MESSAGE_FIELDS = ("role", "content", "has_answer")
ROLES = ("user", "assistant")
_OWN_FIELDS = frozenset({"haystack_sessions", "haystack_session_ids", "haystack_dates", "answer_session_ids"})


def looks_like_question(record: Mapping[str, Any]) -> bool:
    return bool(_OWN_FIELDS & record.keys()) or {"question_id", "question_type"} <= record.keys()


@dataclass(frozen=True, slots=True)
class _Message:
    source_id: str
    role: str
    content: str
    has_answer: bool


@dataclass(frozen=True, slots=True)
class _Session:
    session_id: str
    occurred_at: str
    messages: tuple[_Message, ...]


def _message(where: Where, item: object, source_id: str, log: FieldLog) -> _Message:
    if not isinstance(item, dict):
        raise where.error(f"expected a message object, got {kind_of(item)}")
    log.check("message", item, MESSAGE_FIELDS)
    role = require_str(where, item, "role")
    if role not in ROLES:
        raise where.error(f"field 'role' is {role!r}, expected 'user' or 'assistant'")
    has_answer = item.get("has_answer", False)
    if not isinstance(has_answer, bool):
        raise where.error(f"field 'has_answer' is not a boolean (got {kind_of(has_answer)})")
    return _Message(source_id=source_id, role=role, content=require_str(where, item, "content"),
                    has_answer=has_answer)


def _pair(session: _Session) -> tuple[Turn, ...]:
    turns: list[Turn] = []
    pending: _Message | None = None

    def emit(user: _Message | None, agent: _Message | None) -> None:
        ids = tuple(m.source_id for m in (user, agent) if m is not None)
        turns.append(Turn(user=user.content if user else "", agent=agent.content if agent else "",
                          occurred_at=session.occurred_at, source_ids=ids))

    for message in session.messages:
        if message.role == "user":
            if pending is not None:
                emit(pending, None)
            pending = message
        else:
            emit(pending, message)
            pending = None
    if pending is not None:
        emit(pending, None)
    return tuple(turns)


def _text_items(where: Where, field: str, values: Sequence[object]) -> list[str]:
    out = []
    for index, value in enumerate(values):
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            out.append(str(value))
        else:
            raise where.error(f"field '{field}' item {index} is not a string (got {kind_of(value)})")
    return out


def _sessions(where: Where, item: Mapping[str, Any], log: FieldLog) -> list[_Session]:
    contents = require_list(where, item, "haystack_sessions")
    ids = _text_items(where, "haystack_session_ids", require_list(where, item, "haystack_session_ids"))
    dates = require_list(where, item, "haystack_dates")
    for field, values in (("haystack_session_ids", ids), ("haystack_dates", dates)):
        if len(values) != len(contents):
            raise where.error(f"field '{field}' has {len(values)} items but 'haystack_sessions' has "
                              f"{len(contents)}; they must be parallel lists")
    sessions = []
    seen: set[str] = set()
    for index, (session_id, date, content) in enumerate(zip(ids, dates, contents)):
        if not isinstance(date, str):
            raise where.error(f"field 'haystack_dates' item {index} is not a string (got {kind_of(date)})")
        session_where = where.child(f".haystack_sessions[{index}]")
        if not isinstance(content, list):
            raise session_where.error(f"expected a list of messages, got {kind_of(content)}")
        # A session id listed twice still gets distinct message ids.
        prefix = session_id if session_id not in seen else f"{session_id}@{index}"
        seen.add(session_id)
        messages = tuple(_message(session_where.child(f"[{n}]"), m, f"{prefix}:{n}", log)
                         for n, m in enumerate(content))
        sessions.append(_Session(session_id=session_id, occurred_at=parse_timestamp(date), messages=messages))
    return sessions


def _in_date_order(sessions: list[_Session]) -> tuple[list[_Session], bool]:
    try:
        moments = [datetime.fromisoformat(s.occurred_at) for s in sessions]
    except ValueError:
        return sessions, False  # some date is not understood: keep the file's order
    order = sorted(range(len(sessions)), key=moments.__getitem__)
    return [sessions[i] for i in order], order != list(range(len(sessions)))


def _evidence(sessions: Sequence[_Session], answer_ids: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    wanted = set(answer_ids)
    for session_id in answer_ids:
        matches = [s for s in sessions if s.session_id == session_id]
        for session in matches:
            marked = [m.source_id for m in session.messages if m.has_answer]
            out += marked or [m.source_id for m in session.messages]
        if not any(s.messages for s in matches):
            out.append(session_id)  # names no turn: kept and reported
    out += [m.source_id for s in sessions if s.session_id not in wanted for m in s.messages if m.has_answer]
    return tuple(dict.fromkeys(out))


def _draft(where: Where, item: Mapping[str, Any], question_id: str, log: FieldLog) -> tuple[Draft, bool]:
    log.check("question", item, QUESTION_FIELDS)
    question_type = require_str(where, item, "question_type")
    question = require_str(where, item, "question")
    if "answer" not in item:
        raise where.error("missing field 'answer'")
    answer = scalar_text(where, "answer", item["answer"])
    asked = optional_str(where, item, "question_date")
    listed = require_list(where, item, "answer_session_ids") if "answer_session_ids" in item else []
    answer_ids = _text_items(where, "answer_session_ids", listed)
    sessions, reordered = _in_date_order(_sessions(where, item, log))
    kind = "abstention" if question_id.endswith(ABSTENTION_SUFFIX) else question_type
    probe = Probe(probe_id=question_id, type=f"lme_{kind}", question=question, answer=answer,
                  evidence=_evidence(sessions, answer_ids), asked_at=parse_timestamp(asked) if asked else None)
    blocks = tuple(Block(block_id=s.session_id, turns=_pair(s)) for s in sessions)
    return Draft(episode_id=question_id, blocks=blocks, probes=(probe,)), reordered


def _question_id(where: Where, item: Mapping[str, Any]) -> str:
    if "question_id" not in item:
        raise where.error("missing field 'question_id'")
    return scalar_text(where, "question_id", item["question_id"])


def load(path: str, document: Sequence[object], options: LoadOptions) -> Loaded:
    """A LongMemEval file: a list of questions (a single question object is read as a list of one)."""
    log = FieldLog()
    drafts = []
    labels = []
    reordered = 0
    for index, item in enumerate(document):
        where = Where(path=path, record=f"questions[{index}]")
        if not isinstance(item, dict):
            raise where.error(f"expected a question object, got {kind_of(item)}")
        question_id = _question_id(where, item)
        draft, moved = _draft(Where(path=path, record=f"questions[{index}] (question_id {question_id!r})"),
                              item, question_id, log)
        drafts.append(draft)
        labels.append(f"questions[{index}] (question_id {question_id!r})")
        reordered += moved
    check_drafts(path, list(zip(labels, drafts)))
    notes = [f"sessions of {reordered} of {len(drafts)} questions were put in date order"] if reordered else []
    chosen = select(path, drafts, options, lambda p: (p.type, p.type.removeprefix("lme_")))
    episodes = [assemble(d, options, log) for d in chosen]
    return finish("longmemeval", Path(path).stem, path, episodes, log, notes)
