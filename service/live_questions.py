"""The live memory service: one list of tools, answered for a token over HTTP and MCP alike.

`LIVE_QUESTIONS` declares every tool once, as `service.questions` declares
the audit questions: its name (the MCP tool, the OpenAPI operation, the
OpenAI function), its HTTP route, its parameters and the scope a token
needs for it (`read`, `write`, `erase`). The MCP tool schemas, the OpenAPI
document and `ledgermem tools --format openai` are all generated from it.

`LiveService.ask(name, arguments, token)` validates the arguments, checks
that the token's namespace covers the stream and that it holds the scope
(403 otherwise, before anything is read), and answers holding the stream's
lock and the store's (`LiveStore.holding`) with plain JSON data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ledgermem.gate.errors import NothingToErase
from ledgermem.memory.candidates import tool_call_tables
from ledgermem.projections.events import FactExpired
from ledgermem.memory.memory import Memory
from ledgermem.service.errors import BadRequest, Conflict, NotFound
from ledgermem.ledger.errors import LedgermemError
from ledgermem.service.live import LiveStore, RolledBack, Write, request_hash
from ledgermem.service.retention import apply_retention
from ledgermem.service.questions import Arguments, Param, Question, error_body, jsonable
from ledgermem.service.tokens import Token, split_address
from ledgermem.temporal import Episode, as_of, instant, time_position
from ledgermem.temporal.errors import TemporalError

STREAM = Param("stream", required=True, max_length=1100,
               description="stream address namespace/.../stream, e.g. 'acme/user-42/session-7'")
KEY = Param("idempotency_key", max_length=128,
            description="any unique string per turn: a retried request with the same key records nothing twice")
EXPECTED = Param("expected_version", "integer", minimum=0,
                 description="the stream version the client last saw: another version answers 409 with the current one")


@dataclasses.dataclass(frozen=True, slots=True)
class Ask:
    """One request: the store, the token that made it and the stream it names."""

    store: LiveStore
    token: Token
    address: tuple[str, ...]

    @property
    def name(self) -> str:
        return "/".join(self.address)

    def memory(self, *, create: bool = False) -> Memory:
        return self.store.memory(self.address, self.token, create=create)


def _check_version(memory: Memory, args: Arguments, name: str) -> None:
    if args.get("expected_version") is not None and args["expected_version"] != memory.version:
        raise Conflict(f"stream {name!r} is at version {memory.version}, not {args['expected_version']}: read it "
                       "again and retry with the current version", "expected_version",
                       detail={"current_version": memory.version})


def _turn(ask: Ask, args: Arguments, operation: str, fields: dict[str, Any], write: Any) -> dict[str, Any]:
    """Record a turn once per idempotency key: `write(memory)` returns the recorded events and an extra answer."""
    key = args.get("idempotency_key")
    if key is not None:
        before = ask.store.replayed(ask.name, key, fields) if ask.store.exists(ask.address) else None
        if before is not None:
            memory = ask.memory()
            return {"created": False, "stream": ask.name, "version": memory.version, **before}
    memory = ask.memory(create=True)
    _check_version(memory, args, ask.name)
    turn = memory.state.turn + 1
    attribution = Write(ask.name, operation, ask.token.token_id, key, request_hash(fields) if key else None, turn)
    with ask.store.writing(attribution):
        recorded, extra = write(memory)
    return {"created": True, "stream": ask.name, "turn": turn, "version": memory.version,
            "first_seq": recorded[0].seq, "last_seq": recorded[-1].seq, "token_id": ask.token.token_id,
            "events": [r.event.event_type for r in recorded], **extra}


def record_turn(ask: Ask, args: Arguments) -> Any:
    fields = {"op": "record_turn", "user": args["user"], "agent": args["agent"], "occurred_at": args["occurred_at"]}
    return _turn(ask, args, "record_turn", fields, lambda m: (
        m.add_turn(args["user"], args["agent"], occurred_at=args["occurred_at"]), {}))


def respond(ask: Ask, args: Arguments) -> Any:
    fields = {"op": "respond", "user": args["user"], "occurred_at": args["occurred_at"]}

    def write(memory: Memory) -> Any:
        reply = memory.respond(args["user"], occurred_at=args["occurred_at"])
        return reply.recorded, {"reply": reply.text, "self_written": reply.self_written, "fallback": reply.fallback}

    answer = _turn(ask, args, "respond", fields, write)
    if not answer["created"]:  # the reply of a retried turn is the one recorded with it
        answer["reply"] = ask.memory().state.raw[_record_of(ask.memory(), answer["turn"])].agent
    answer["tool_calls"] = _tables(ask, (answer["first_seq"], answer["last_seq"]))
    return answer


def _tables(ask: Ask, seqs: tuple[int, int] | None = None, turn: int | None = None) -> list[dict[str, Any]]:
    """The candidate table of each tool call of the stream (within `seqs`, or of one turn)."""
    return tool_call_tables(ask.store.ledger.read(stream=ask.memory().stream), seqs=seqs, turn=turn)


def ask_question(ask: Ask, args: Arguments) -> Any:
    """Answer a question from the memory with its read tools; the answer and its tool calls are recorded (a
    question changes no value, but how it was answered is in the ledger), each call with its candidate table."""
    memory = ask.memory()
    _check_version(memory, args, ask.name)
    with ask.store.writing(Write(ask.name, "ask", ask.token.token_id)):
        answer = memory.ask(args["question"], budget=args["budget"])
    # `Memory.ask` commits its events in one append, under the stream's lock: they are the stream's newest.
    records = list(ask.store.ledger.read(stream=memory.stream))
    mine = records[len(records) - len(answer.events):]
    return {"created": True, "stream": ask.name, "version": memory.version, "turn": memory.state.turn,
            "answer": answer.text, "llm_calls": answer.llm_calls, "first_seq": mine[0].seq, "last_seq": mine[-1].seq,
            "token_id": ask.token.token_id,
            "tool_calls": tool_call_tables(records, seqs=(mine[0].seq, mine[-1].seq))}


def tool_calls(ask: Ask, args: Arguments) -> Any:
    """The stream's recorded tool calls (of one turn, or the newest `limit`) with their candidate tables."""
    memory = ask.memory()
    tables = _tables(ask, turn=args["turn"])
    return {"stream": ask.name, "version": memory.version, "tool_calls": tables[-args["limit"]:]}


def _record_of(memory: Memory, turn: int) -> str:
    return next(r.record_id for r in memory.state.raw.values() if r.turn == turn)


def render_memory(ask: Ask, args: Arguments) -> Any:
    memory = ask.memory()
    rendered = memory.render(args["budget"])
    return {"stream": ask.name, "version": memory.version, "turn": memory.state.turn, "text": rendered.text,
            "tokens": rendered.tokens, "budget": rendered.budget, "manifest": rendered.manifest()}


def _tool(name: str, *names: str) -> Any:
    def answer(ask: Ask, args: Arguments) -> Any:
        memory = ask.memory()
        result = memory.tool(name, {n: args[n] for n in names})
        return {"stream": ask.name, "version": memory.version, "tool": name, "ok": result.ok, "text": result.text}
    return answer


def current_values(ask: Ask, args: Arguments) -> Any:
    memory = ask.memory()
    values = [{"slot": slot, "value": value, "summary_id": sid}
              for slot, (value, sid) in sorted(memory.state.current_values().items())]
    return {"stream": ask.name, "version": memory.version, "turn": memory.state.turn, "values": values}


def history(ask: Ask, args: Arguments) -> Any:
    """Every value the slot had, in the order the summaries recording it were created."""
    memory = ask.memory()
    state, slot = memory.state, args["slot"]
    current = state.current_values().get(slot)
    expired = {(r.event.summary_id, r.event.slot): {"rule": r.event.rule, "policy": r.event.policy,
                                                    "applied_at": r.event.applied_at, "seq": r.seq}
               for r in ask.store.ledger.read(stream=memory.stream, event_types=["fact_expired"])
               if isinstance(r.event, FactExpired)}
    values = [{"summary_id": s.summary_id, "turn": s.turn, "value": value, "status": s.status,
               "current": current is not None and current[1] == s.summary_id and current[0] == value,
               **({"expired": expired[(s.summary_id, k)]} if (s.summary_id, k) in expired else {})}
              for s in state.summaries.values() for k, value in s.facts if k == slot]
    if not values:
        slots = sorted(state.current_values())
        raise NotFound(f"slot {slot!r} never had a value in stream {ask.name!r}; slots: "
                       f"{', '.join(slots[:30]) or 'none'}", "slot")
    return {"stream": ask.name, "version": memory.version, "slot": slot, "values": values}


def blame(ask: Ask, args: Arguments) -> Any:
    """Where the slot's current value came from: its summary, what it overrode, and the raw turns it cites."""
    memory = ask.memory()
    state, slot = memory.state, args["slot"]
    current = state.current_values().get(slot)
    if current is None:
        raise NotFound(f"slot {slot!r} has no current value in stream {ask.name!r}; slots: "
                       f"{', '.join(sorted(state.current_values())[:30]) or 'none'}", "slot")
    value, summary_id = current
    summary = state.summaries[summary_id]
    raw = [{"record_id": r.record_id, "turn": r.turn, "occurred_at": r.occurred_at, "user": r.user, "agent": r.agent}
           for r in (state.raw.get(i) for i in summary.raw_ids) if r is not None]
    return {"stream": ask.name, "version": memory.version, "slot": slot, "value": value, "summary_id": summary_id,
            "turn": summary.turn, "status": summary.status, "overrides": list(summary.overrides), "raw": raw}


def value_as_of(ask: Ask, args: Arguments) -> Any:
    """The slot's value as the memory held it at a wall-clock time: the projections as of the stream's last
    event recorded by then (`temporal.seq_at_time`, as `ledgermem as-of --at` answers).

    The projections are rebuilt after every erasure, so a value erased since then reads as erased, never as it was.
    """
    memory = ask.memory()
    try:
        at = instant(args["at"], "parameter 'at'")
    except TemporalError as exc:
        raise BadRequest(str(exc), "at") from None
    ep = Episode(memory.stream.run_id, memory.stream.system, memory.stream.episode_id)
    position = time_position(ask.store.ledger.conn, ep, at)
    registry = {r["slot"]: r for r in as_of(ask.store.projections.conn, ep, seq=position["seq"])["registry"]}
    found = registry.get(args["slot"])
    value = None if found is None or found["erased"] else found["value"]
    return {"stream": ask.name, "slot": args["slot"], "at": at.isoformat() + "Z", **position,
            "value": value, "summary_id": found["summary_id"] if value is not None and found else None,
            "erased": bool(found and found["erased"]) or args["slot"] in memory.state.erased_without_value()}


def erase(ask: Ask, args: Arguments) -> Any:
    chosen = {k: args[k] for k in ("slot", "value", "record_id") if args[k] is not None}
    if not chosen and not args["subject"]:
        raise BadRequest("erase: name what to erase: slot, value, record_id, or subject=true", "slot")
    memory = ask.memory()
    with ask.store.writing(Write(ask.name, "erase", ask.token.token_id)):
        try:
            receipt = memory.erase(legal_basis=args["legal_basis"], subject=args["subject"], **chosen)
        except NothingToErase as exc:
            raise NotFound(str(exc), next(iter(chosen), "subject")) from None
    return {"stream": ask.name, "version": memory.version, "token_id": ask.token.token_id,
            "receipt": receipt.as_dict(), "clean": receipt.clean}


def retention(ask: Ask, args: Arguments) -> Any:
    return apply_retention(ask.store, ask.address, ask.token)


def list_streams(ask: Ask, args: Arguments) -> Any:
    return {"namespace": ask.name, "streams": ask.store.streams(ask.address)}


def _q(name: str, method: str, path: str, summary: str, params: tuple[Param, ...], answer: Any,
       scope: str = "read") -> Question:
    where = "body" if method == "POST" else "query"
    return Question(name, method, path, summary, tuple(dataclasses.replace(p, where=where) for p in params), answer,
                    scope=scope)


#: The tools of the live memory service, in the order a client meets them.
LIVE_QUESTIONS: tuple[Question, ...] = (
    _q("record_turn", "POST", "/api/memory/turns",
       "Record one dialogue turn (the user's message and the agent's reply) in a stream and update its memory; "
       "a new stream starts with its first turn.",
       (STREAM, Param("user", required=True, max_length=32000, description="what the user said"),
        Param("agent", default="", max_length=32000, description="the agent's reply"),
        KEY, EXPECTED, Param("occurred_at", max_length=64, description="when the turn happened (ISO 8601)")),
       record_turn, "write"),
    _q("respond", "POST", "/api/memory/respond",
       "Answer the user live from the stream's memory and record the turn with its memory update.",
       (STREAM, Param("user", required=True, max_length=32000, description="what the user said"), KEY, EXPECTED,
        Param("occurred_at", max_length=64, description="when the turn happened (ISO 8601)")),
       respond, "write"),
    _q("ask", "POST", "/api/memory/ask",
       "Answer a question from the stream's memory with its read tools, without recording a dialogue turn; how it "
       "was answered (prompt, model calls, tool calls) is recorded, and each tool call comes with its candidate "
       "table.",
       (STREAM, Param("question", required=True, max_length=32000, description="the question"), EXPECTED,
        Param("budget", "integer", minimum=16, maximum=1_000_000,
              description="token budget of the prompt (default: the stream's)")),
       ask_question, "write"),
    _q("render_memory", "GET", "/api/memory/render",
       "The stream's memory rendered for a prompt: pinned constraints, recent turns, current values, index "
       "titles and the summary chain, with the exact ids and token costs of each part.",
       (STREAM, Param("budget", "integer", minimum=16, maximum=1_000_000,
                      description="token budget (default: the stream's)")), render_memory),
    _q("get_archived_summary", "GET", "/api/memory/summary",
       "A summary by exact id (like s0003), followed forward to its live successor if it was superseded.",
       (STREAM, Param("summary_id", required=True, max_length=64, description="summary id, e.g. s0003")),
       _tool("get_archived_summary", "summary_id")),
    _q("get_raw_record", "GET", "/api/memory/record",
       "A raw turn record by exact id (like r0007): what the user and the agent said, verbatim.",
       (STREAM, Param("reference_id", required=True, max_length=64, description="raw record id, e.g. r0007")),
       _tool("get_raw_record", "reference_id")),
    _q("get_predecessor_summary", "GET", "/api/memory/predecessor",
       "The value a slot had just before it became the given value, and its earlier values.",
       (STREAM, Param("fact_key", required=True, max_length=200, description="slot name, e.g. 'office'"),
        Param("exclude_value", required=True, max_length=2000, description="the value to step back from")),
       _tool("get_predecessor_summary", "fact_key", "exclude_value")),
    _q("expand_index", "GET", "/api/memory/index",
       "The summaries (or folded titles) under an index title by exact id (like i0001).",
       (STREAM, Param("index_id", required=True, max_length=64, description="index id, e.g. i0001")),
       _tool("expand_index", "index_id")),
    _q("tool_calls", "GET", "/api/memory/tool-calls",
       "The stream's recorded tool calls, each with its candidate table: what the tool could have returned (from "
       "the memory at that seq), what it returned, and the rule that chose it.",
       (STREAM, Param("turn", "integer", minimum=0, description="only this turn's calls"),
        Param("limit", "integer", minimum=1, maximum=1000, default=100, description="the newest this many calls")),
       tool_calls),
    _q("current_values", "GET", "/api/memory/values",
       "The stream's current-values registry: each slot's newest value and the summary it came from.",
       (STREAM,), current_values),
    _q("history", "GET", "/api/memory/history",
       "Every value a slot of the stream had, oldest first, with the summary, turn and status of each.",
       (STREAM, Param("slot", required=True, max_length=200, description="slot name, e.g. 'office'")), history),
    _q("blame", "GET", "/api/memory/blame",
       "Where a slot's current value came from: the summary, the summaries it overrode, and the raw turns it cites.",
       (STREAM, Param("slot", required=True, max_length=200, description="slot name, e.g. 'office'")), blame),
    _q("get_value_as_of", "GET", "/api/memory/as-of",
       "A slot's value as the memory held it at a wall-clock time (from each event's recorded time); a value "
       "erased since reads as erased.",
       (STREAM, Param("slot", required=True, max_length=200, description="slot name, e.g. 'office'"),
        Param("at", required=True, max_length=64,
              description="ISO 8601 time with a timezone, e.g. 2026-11-01T09:00Z")),
       value_as_of),
    _q("erase", "POST", "/api/memory/erase",
       "Erase a slot's values, a value, a raw record or the whole data subject from a stream, with a legal "
       "basis: the keys sealing them are destroyed and a receipt answers.",
       (STREAM, Param("legal_basis", required=True, max_length=500, description="why, e.g. 'GDPR art. 17 request 42'"),
        Param("slot", max_length=200, description="erase every value of this slot"),
        Param("value", max_length=2000, description="erase this value wherever the stream holds it"),
        Param("record_id", max_length=64, description="erase this raw record and what derives from it"),
        Param("subject", "boolean", default=False, description="erase everything personal in the stream")),
       erase, "erase"),
    _q("apply_retention", "POST", "/api/memory/retention/apply",
       "Apply the retention policy of the stream's namespace now: the raw text of turns beyond the newest kept "
       "(their summaries and facts stay) and facts past their expiry are crypto-shredded like an erasure, recorded "
       "as key_shredded, fact_expired and retention_applied events with the policy; turns holding a pinned "
       "constraint are kept.",
       (STREAM,), retention, "erase"),
    _q("list_streams", "GET", "/api/memory/streams",
       "The streams under a namespace (default: the token's own) with their versions.",
       (dataclasses.replace(STREAM, name="namespace", required=False,
                            description="namespace prefix, e.g. 'acme' or 'acme/user-42'"),), list_streams),
)
LIVE_BY_NAME = {q.name: q for q in LIVE_QUESTIONS}


class LiveService:
    """Answers the live tools for authenticated tokens; `session(token)` binds one for the MCP server."""

    instructions = ("An agent's memory, per stream 'namespace/.../stream': record_turn or respond to write a turn, "
                    "ask to answer a question from it, tool_calls for each tool call's candidate table, "
                    "render_memory for a prompt, get_archived_summary, get_raw_record, get_predecessor_summary and "
                    "expand_index by exact id, current_values, history and blame of a slot, get_value_as_of a time, erase with a legal basis, "
                    "apply_retention (the namespace's policy), list_streams.")
    title = "ledgermem live memory API"
    scoped = True  # every operation needs a token covering its stream and holding its scope
    conflict = ("expected_version is not the stream's version (the answer's detail has the current one), or the "
                "idempotency key was used for a different request")
    description = ("An agent's event-sourced memory per stream: record turns (idempotent), respond, render, the "
                   "exact-id tools, current values, history and blame of a slot, erasure. Every request needs a scoped bearer token.")

    def __init__(self, store: LiveStore) -> None:
        self.store = store

    @classmethod
    def questions(cls, *, mcp: bool = False) -> list[Question]:
        return list(LIVE_QUESTIONS)

    def ask(self, name: str, arguments: Mapping[str, Any], token: Token) -> Any:
        question = LIVE_BY_NAME.get(name)
        if question is None:
            raise NotFound(f"no tool {name!r}; tools: {', '.join(LIVE_BY_NAME)}")
        args = question.validate(arguments)
        if name == "list_streams":
            address = split_address(args["namespace"] or token.namespace, parameter="namespace", least=1)
        else:
            address = split_address(args["stream"])
        token.check(address, question.scope)
        with self.store.holding(None if name == "list_streams" else address):
            started = self.store.begin()
            try:
                answer = jsonable(question.answer(Ask(self.store, token, address), args))
            except LedgermemError as exc:
                if self.store.lost(started):  # a rollback took its earlier appends: that is why it failed
                    raise RolledBack() from exc
                raise
            mark = self.store.mark(started)
        self.store.sync(mark)  # nothing is answered that a crash could take back
        return answer

    def authenticate(self, secret: str | None) -> Token:
        return self.store.tokens.authenticate(secret)

    def session(self, token: Token) -> Session:
        return Session(self, token)

    def error(self, exc: BaseException) -> tuple[int, dict[str, Any]]:
        status, body = error_body(exc)
        body["error"] = str(body["error"]).replace(str(self.store.folder), "<live>")
        return status, body


class Session:
    """The live service as one token sees it: what the MCP server (one client, one token) answers through."""

    def __init__(self, service: LiveService, token: Token) -> None:
        self.service, self.token = service, token
        self.instructions = service.instructions

    def questions(self, *, mcp: bool = False) -> list[Question]:
        return self.service.questions(mcp=mcp)

    def ask(self, name: str, arguments: Mapping[str, Any]) -> Any:
        # authenticated once, when the session began: revoked or expired since, it answers nothing more
        self.token = self.service.store.tokens.current(self.token.token_id)
        return self.service.ask(name, arguments, self.token)

    def error(self, exc: BaseException) -> tuple[int, dict[str, Any]]:
        return self.service.error(exc)


def openai_tools(questions: list[Question] | tuple[Question, ...] = LIVE_QUESTIONS) -> list[dict[str, Any]]:
    """The tools as OpenAI function-calling schemas (`tools=[...]` of a chat completion request)."""
    return [{"type": "function", "function": {"name": q.name, "description": q.summary,
                                              "parameters": q.input_schema()}} for q in questions]


__all__ = ["LIVE_BY_NAME", "LIVE_QUESTIONS", "LiveService", "Session", "openai_tools"]
