"""The audit service: one implementation of every question the HTTP API and the MCP server answer.

Each question is declared once (`QUESTIONS`): its name (the MCP tool and
the OpenAPI operation), its HTTP path, its parameters with their types and
bounds (`service.questions`), and the function that answers it.
`Service.ask(name, arguments)` validates the arguments, opens the run for
the length of the answer, and returns plain JSON data; both transports
serialise that same value, so they cannot give different answers to the
same question. Questions are answered concurrently (each request queries
through cursors of its own, see `service.catalog`), each within the
service's time limit (504 past it).
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from ledgermem.service import intake as fact_intake
from ledgermem.service.audit_worker import AuditWorkers
from ledgermem.service.catalog import DEADLINE, Catalog, Deadline, RunView, signature
from ledgermem.service.probe_view import probe_detail, probe_rows
from ledgermem.memory.candidates import tool_call_tables
from ledgermem.service.errors import TooDeep
from ledgermem.service.questions import (
    AT, EP, PAGE, RUN, SEQ, SLOT, TURN, Arguments, AuditFailed, BadRequest, Conflict, NotFound, Param, Question,
    ServiceError, Unavailable, error_body, jsonable,
)
from ledgermem.gate.invariants import audit, check_i5
from ledgermem.projections.events import FactErased, KeyShredded
from ledgermem.ledger.store import StreamKey
from ledgermem.projections.state import EpisodeState, evolve
from ledgermem.temporal import Episode, as_of, blame, diff, fact_history, install, instant, manifest, seq_at_time
from ledgermem.temporal.errors import TemporalError


# -- helpers ---------------------------------------------------------------------------------

#: Nesting of arrays and objects a request may have: a question takes a flat object.
MAX_DEPTH = 32
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")


def load_json(text: str, where: str) -> Any:
    """A request's JSON text as data, or BadRequest naming `where`: not JSON, nested too deeply, not Unicode.

    The depth is counted before parsing (a deep enough text would exhaust
    the parser's stack), and a lone surrogate (`"\\ud800"`, or a byte that
    is not UTF-8 decoded with surrogateescape) is refused in keys and values
    alike: it cannot be stored, logged or answered back as UTF-8.
    """
    depth = deepest = 0
    for ch in re.sub(r"[^\[\]{}]", "", _STRING.sub("", text)):
        depth += 1 if ch in "[{" else -1
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            raise TooDeep(f"{where} is nested more than {MAX_DEPTH} levels deep")
    if _SURROGATE.search(text):
        raise BadRequest(f"{where} is not valid UTF-8 text (a byte that is not UTF-8, or a lone surrogate)")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise BadRequest(f"{where} is not JSON: {exc}") from None
    _no_surrogates(data, where)
    return data


def _no_surrogates(value: Any, where: str) -> None:
    if isinstance(value, str) and _SURROGATE.search(value):
        raise BadRequest(f"{where} holds a lone surrogate ({_SURROGATE.search(value).group()!a}): "  # type: ignore[union-attr]
                         "not valid Unicode text")
    if isinstance(value, dict):
        for k, v in value.items():
            _no_surrogates(k, where)
            _no_surrogates(v, where)
    elif isinstance(value, list):
        for v in value:
            _no_surrogates(v, where)


def version() -> str:
    try:
        return metadata.version("ledgermem")
    except metadata.PackageNotFoundError:
        return "0"


def page(items: list[Any], args: Arguments) -> dict[str, Any]:
    offset, limit = args["offset"], args["limit"]
    shown = items[offset: offset + limit]
    nxt = offset + limit if offset + limit < len(items) else None
    return {"items": shown, "total": len(items), "offset": offset, "limit": limit, "next_offset": nxt}


@cache
def queries() -> dict[str, str]:
    text = resources.files("ledgermem.service").joinpath("service.sql").read_text(encoding="utf-8")
    blocks = re.split(r"^-- name: (\w+)\s*$", text, flags=re.MULTILINE)
    return {name: body.strip().rstrip(";") for name, body in zip(blocks[1::2], blocks[2::2])}


def rows(view: RunView, name: str, params: dict[str, Any], **fmt: str) -> list[dict[str, Any]]:
    sql = queries()[name].format(**fmt) if fmt else queries()[name]
    wanted = set(re.findall(r"\$(\w+)", sql))
    result = view.conn.execute(sql, {k: v for k, v in params.items() if k in wanted})
    names = [d[0] for d in result.description or ()]
    return [dict(zip(names, r)) for r in result.fetchall()]


def episode_of(view: RunView, args: Arguments) -> Episode:
    stream = StreamKey(view.run_id, args["system"], args["episode"])
    streams = [s for s, _ in view.ledger.streams(view.run_id) if s.episode_id]
    if stream not in streams:
        systems = sorted({s.system for s in streams})
        if args["system"] not in systems:
            raise NotFound(f"run {view.run_id!r} has no system {args['system']!r}; systems: "
                           f"{', '.join(systems) or 'none'}", "system")
        known = sorted(s.episode_id for s in streams if s.system == args["system"])
        raise NotFound(f"run {view.run_id!r} has no episode {args['episode']!r} of system {args['system']!r}; "
                       f"episodes: {', '.join(known[:20])}{' ...' if len(known) > 20 else ''}", "episode")
    return Episode(view.run_id, args["system"], args["episode"])


def one_of_seq_turn(args: Arguments, *, required: bool) -> None:
    given = [name for name in ("seq", "turn", "at") if args.get(name) is not None]
    if len(given) > 1:
        raise BadRequest(f"give one of seq, turn or at, not both {given[0]} and {given[1]}", given[0])
    if required and not given:
        raise BadRequest("give seq (system time) or turn (event time), or at (a wall-clock time)", "seq")


def moment(args: Arguments) -> Any:
    """The `at` parameter as naive UTC (None when absent); a time without a timezone is refused."""
    if args.get("at") is None:
        return None
    try:
        return instant(args["at"], "parameter 'at'")
    except TemporalError as exc:
        raise BadRequest(str(exc), "at") from None


def position(view: RunView, ep: Episode, args: Arguments) -> dict[str, Any]:
    """The seq and turn an as-of question is answered at (now, when none of seq, turn, at is given)."""
    when = moment(args)
    if when is not None:
        seq = seq_at_time(view.conn, ep, when)
        found = rows(view, "position_of_seq", {**ep.params(), "at": seq})[0]
        return {"seq": seq, "turn": found["turn"] or 0, "by": "at", "at": when.isoformat() + "Z"}
    if args.get("turn") is not None:
        found = rows(view, "position_of_turn", {**ep.params(), "at": args["turn"]})[0]
        return {"seq": found["seq"] or 0, "turn": args["turn"], "by": "turn"}
    at = args.get("seq") if args.get("seq") is not None else view.ledger.last_seq
    found = rows(view, "position_of_seq", {**ep.params(), "at": at})[0]
    return {"seq": at, "turn": found["turn"] or 0, "by": "seq" if args.get("seq") is not None else "now"}


def stream_events(view: RunView, ep: Episode) -> list[Any]:
    return list(view.ledger.read(stream=StreamKey(ep.run_id, ep.system, ep.episode_id)))


def need_slot(view: RunView, ep: Episode, slot: str) -> None:
    slots = [r["slot"] for r in rows(view, "slots", ep.params())]
    if slot not in slots:
        raise NotFound(f"slot {slot!r} never had a value in episode {ep.episode_id!r}; slots: "
                       f"{', '.join(slots[:30]) or 'none'}", "slot")


# -- answers ---------------------------------------------------------------------------------


def list_runs(svc: Service, args: Arguments) -> Any:
    runs = [svc.run_info(served) for served, _, _ in svc.catalog.served()]
    return page(runs, args)


def get_run(svc: Service, args: Arguments) -> Any:
    return svc.run_info(args["run"])


def list_episodes(svc: Service, args: Arguments) -> Any:
    with svc.catalog.open(args["run"]) as view:
        found = rows(view, "episodes", {"run": view.run_id, "system": args["system"]})
    if args["system"] is not None and not found:
        raise NotFound(f"run {args['run']!r} has no episodes of system {args['system']!r}", "system")
    return page(found, args)


def run_audit(svc: Service, args: Arguments) -> Any:
    with svc.catalog.open(args["run"]) as view:
        if svc.audit_workers is not None:  # the fold runs in a process of its own: other reads go on meanwhile
            opened = Path(view.ledger.path)
            keys = Path(view.ledger.keys.path) if opened.is_dir() and view.ledger.keys is not None else None
            report = svc.audit_workers.audit(opened, keys=keys, run_id=view.run_id, at_seq=args["at"],
                                             i4_floor=args["i4_floor"], deadline=DEADLINE.get())
            return {**report, "live": view.live}
        report = audit(view.ledger, view.projections, run_id=view.run_id, at_seq=args["at"],
                       i4_floor=args["i4_floor"])
        return {**report.as_dict(), "live": view.live}


def current_values(svc: Service, args: Arguments) -> Any:
    one_of_seq_turn(args, required=False)
    with svc.catalog.open(args["run"]) as view:
        ep = episode_of(view, args)
        at = position(view, ep, args)
        layers = as_of(view.conn, ep, seq=at["seq"]) if at["by"] != "turn" else as_of(view.conn, ep, turn=at["turn"])
        return {"at": at, **page(layers["registry"], args)}


def history(svc: Service, args: Arguments) -> Any:
    with svc.catalog.open(args["run"]) as view:
        ep = episode_of(view, args)
        need_slot(view, ep, args["slot"])
        when = moment(args)
        found = fact_history(view.conn, ep, args["slot"], at=when)
        return {"slot": args["slot"], **({"at": when.isoformat() + "Z"} if when is not None else {}),
                **page(found, args)}


def as_of_layers(svc: Service, args: Arguments) -> Any:
    one_of_seq_turn(args, required=True)
    with svc.catalog.open(args["run"]) as view:
        ep = episode_of(view, args)
        at = position(view, ep, args)
        layers = as_of(view.conn, ep, turn=at["turn"]) if at["by"] == "turn" else as_of(view.conn, ep, seq=at["seq"])
        return {"at": at, **layers}


def blame_slot(svc: Service, args: Arguments) -> Any:
    with svc.catalog.open(args["run"]) as view:
        ep = episode_of(view, args)
        need_slot(view, ep, args["slot"])
        return blame(view.conn, ep, args["slot"])


def diff_seqs(svc: Service, args: Arguments) -> Any:
    with svc.catalog.open(args["run"]) as view:
        ep = episode_of(view, args)
        return {"from_seq": args["from_seq"], "to_seq": args["to_seq"],
                "layers": diff(view.conn, ep, args["from_seq"], args["to_seq"])}


def manifests(svc: Service, args: Arguments) -> Any:
    with svc.catalog.open(args["run"]) as view:
        ep = episode_of(view, args)
        return page(manifest(view.conn, ep, probe_id=args["probe"], turn=args["turn"]), args)


def list_probes(svc: Service, args: Arguments) -> Any:
    with svc.catalog.open(args["run"]) as view:
        ep = episode_of(view, args)
        return page(probe_rows(ep.system, ep.episode_id, stream_events(view, ep)), args)


def get_probe(svc: Service, args: Arguments) -> Any:
    with svc.catalog.open(args["run"]) as view:
        ep = episode_of(view, args)
        detail = probe_detail(ep.system, ep.episode_id, stream_events(view, ep), args["probe"])
    if detail is None:
        raise NotFound(f"episode {args['episode']!r} of run {args['run']!r} asked no probe {args['probe']!r}",
                       "probe")
    return detail


def tool_calls(svc: Service, args: Arguments) -> Any:
    """Every tool call of an episode (of one probe or turn) with its candidate table, from the memory at its seq."""
    with svc.catalog.open(args["run"]) as view:
        ep = episode_of(view, args)
        events = stream_events(view, ep)
    if args["probe"] is not None and not any(getattr(r.event, "probe_id", None) == args["probe"] for r in events):
        raise NotFound(f"episode {args['episode']!r} of run {args['run']!r} asked no probe {args['probe']!r}",
                       "probe")
    return page(tool_call_tables(events, probe_id=args["probe"], turn=args["turn"]), args)


def layers(svc: Service, args: Arguments) -> Any:
    """Every layer of an episode at a point of its history, raw records paged: what the explorer shows."""
    one_of_seq_turn(args, required=False)
    with svc.catalog.open(args["run"]) as view:
        ep = episode_of(view, args)
        at = position(view, ep, args)
        by_turn = at["by"] == "turn"
        found = as_of(view.conn, ep, turn=at["turn"]) if by_turn else as_of(view.conn, ep, seq=at["seq"])
        install(view.conn)
        fmt = {"asof": "as_of_turn" if by_turn else "as_of_seq"}
        params = {**ep.params(), "at": at["turn"] if by_turn else at["seq"], "limit": args["limit"],
                  "offset": args["offset"]}
        raw = rows(view, "raw_as_of", params, **fmt)
        total = rows(view, "raw_count_as_of", params, **fmt)[0]["n"]
        nxt = args["offset"] + args["limit"] if args["offset"] + args["limit"] < total else None
        return {"at": at, **found,
                "raw": {"items": raw, "total": total, "offset": args["offset"], "limit": args["limit"],
                        "next_offset": nxt}}


def timeline(svc: Service, args: Arguments) -> Any:
    with svc.catalog.open(args["run"]) as view:
        ep = episode_of(view, args)
        turns = rows(view, "timeline_turns", ep.params())
        probes = rows(view, "timeline_probes", ep.params())
        for row in (*turns, *probes):  # recorded times are naive UTC: say so, for the explorer's time axis
            for key in ("first_at", "last_at"):
                if row.get(key) is not None:
                    row[key] = row[key].isoformat() + "Z"
        times = [t[k] for t in turns for k in ("first_at", "last_at")] + [p["first_at"] for p in probes]
        return {"first_seq": min((t["first_seq"] for t in turns), default=0),
                "last_seq": max([t["last_seq"] for t in turns] + [p["last_seq"] for p in probes], default=0),
                "first_at": min(times, default=None), "last_at": max(times, default=None),
                "turns": turns, "probes": probes, "live": view.live}


def erasures(svc: Service, args: Arguments) -> Any:
    """Every erasure of the run: what was erased and why, and whether it is still unreadable now (I5)."""
    out = []
    with svc.catalog.open(args["run"]) as view:
        tables = view.projections.read_tables(view.run_id)
        for stream, _ in view.ledger.streams(view.run_id):
            if not stream.episode_id:
                continue
            state, found, erased = EpisodeState(), [], []
            for r in view.ledger.read(stream=stream):
                state = evolve(state, r.event)  # type: ignore[arg-type]
                if isinstance(r.event, FactErased):
                    erased.append(r.event)
                elif isinstance(r.event, KeyShredded):
                    found.append((r, r.event, erased))
                    erased = []
            if found:
                violations = check_i5(str(stream), view.ledger.last_seq, state, view.ledger.keys, tables)
                out += [_receipt(stream, r, e, facts, violations) for r, e, facts in found]
    return page(out, args)


def _receipt(stream: StreamKey, r: Any, shredded: KeyShredded, facts: list[FactErased], violations: list[Any]) -> Any:
    return {
        "system": stream.system, "episode": stream.episode_id, "seq": r.seq, "turn": shredded.turn,
        "recorded_at": r.recorded_at, "request": shredded.request, "legal_basis": shredded.legal_basis,
        "facts": [{"summary_id": f.summary_id, "slot": f.slot, "collateral": f.collateral} for f in facts],
        "records": shredded.records, "summaries": shredded.summaries, "indexes": shredded.indexes,
        "keys_shredded": shredded.key_ids,
        "still_unreadable": not violations, "i5_violations": [v.as_dict() for v in violations],
    }


def intake_fact(svc: Service, args: Arguments) -> Any:
    return svc.intake(args)


QUESTIONS: tuple[Question, ...] = (
    Question("list_runs", "GET", "/api/runs", "The runs this server answers for, with their size and state.",
             PAGE, list_runs),
    Question("get_run", "GET", "/api/runs/{run}", "One run: events, episodes, systems, finished, live.",
             (RUN,), get_run),
    Question("list_episodes", "GET", "/api/runs/{run}/episodes", "The episodes of a run, per system.",
             (RUN, Param("system", description="only this memory system"), *PAGE), list_episodes),
    Question("audit", "GET", "/api/runs/{run}/audit",
             "Invariants I1-I5 and the structural ones (hash chain, contiguity, SCD-2, replay), now or as of a seq.",
             (RUN, Param("at", "integer", minimum=1, description="check the state as of this seq"),
              Param("i4_floor", "number", minimum=0, maximum=1,
                    description="extraction recall under this is a violation")), run_audit),
    Question("erasures", "GET", "/api/runs/{run}/erasures",
             "Erasure receipts: what was erased and why, keys shredded, and whether it is still unreadable (I5).",
             (RUN, *PAGE), erasures),
    Question("current_values", "GET", "/api/runs/{run}/episodes/{episode}/values",
             "The current-values registry of an episode, now or as of a seq, a turn or a wall-clock time.",
             (*EP, SEQ, TURN, AT, *PAGE), current_values),
    Question("history", "GET", "/api/runs/{run}/episodes/{episode}/history",
             "Every value a slot had, with the seq and turn interval in which it was current (with at: as the "
             "history stood at that wall-clock time).",
             (*EP, SLOT, AT, *PAGE), history),
    Question("as_of", "GET", "/api/runs/{run}/episodes/{episode}/as-of",
             "Every layer of an episode's memory as it was at a seq, a turn or a wall-clock time.",
             (*EP, SEQ, TURN, AT), as_of_layers),
    Question("blame", "GET", "/api/runs/{run}/episodes/{episode}/blame",
             "The summary, turn and raw record a slot's current value came from, through overrides and titles.",
             (*EP, SLOT), blame_slot),
    Question("diff", "GET", "/api/runs/{run}/episodes/{episode}/diff",
             "What entered and left each layer between two seqs.",
             (*EP, Param("from_seq", "integer", required=True, minimum=0, description="the earlier seq"),
              Param("to_seq", "integer", required=True, minimum=0, description="the later seq")), diff_seqs),
    Question("manifest", "GET", "/api/runs/{run}/episodes/{episode}/manifest",
             "The exact ids and token costs of every prompt rendered for the model.",
             (*EP, Param("probe", description="only this probe's prompts"),
              Param("turn", "integer", minimum=0, description="only this turn's prompts"), *PAGE), manifests),
    Question("list_probes", "GET", "/api/runs/{run}/episodes/{episode}/probes",
             "Every probe: question, gold, answer, verdict, tools tried, and where the gold value was.",
             (*EP, *PAGE), list_probes),
    Question("probe", "GET", "/api/runs/{run}/episodes/{episode}/probes/{probe}",
             "One probe: its context manifest, prompt, tool calls, retrieval path, and where its gold value was "
             "(in the prompt, one hop away, raw only, gone).",
             (*EP, Param("probe", where="path", required=True, description="probe id")), get_probe),
    Question("tool_calls", "GET", "/api/runs/{run}/episodes/{episode}/tool-calls",
             "Every exact-id tool call with its candidate table: what the tool could have returned (from the "
             "memory at that seq), what it returned, and the rule that chose it.",
             (*EP, Param("probe", description="only this probe's calls"),
              Param("turn", "integer", minimum=0, description="only this turn's calls"), *PAGE), tool_calls),
    Question("layers", "GET", "/api/runs/{run}/episodes/{episode}/layers",
             "Window, registry, index titles, active chain, indexed and archived summaries, and raw records "
             "(paged) at a seq, a turn or a wall-clock time (default: now).", (*EP, SEQ, TURN, AT, *PAGE), layers),
    Question("timeline", "GET", "/api/runs/{run}/episodes/{episode}/timeline",
             "The seqs of each turn and each probe of an episode: the axis of its history.", EP, timeline),
    Question("intake_fact", "POST", "/api/runs/{run}/episodes/{episode}/facts",
             "Record one user statement as the episode's next turn (idempotent by after_turn) and answer with "
             "the turn, the registry and the audit run after it.",
             (*EP, Param("user", where="body", required=True, description="what the user said"),
              Param("agent", where="body", default="", description="the agent's reply, if any"),
              Param("after_turn", "integer", where="body", required=True, minimum=0,
                    description="the turn the client last saw: the statement becomes turn after_turn + 1"),
              Param("occurred_at", where="body", description="original timestamp of the statement")),
             intake_fact, mcp=False),
)
BY_NAME = {q.name: q for q in QUESTIONS}
#: Answers that fold or check a whole stream or run, remembered (up to REMEMBER) while the run's files stay the same.
REMEMBERED = frozenset({"audit", "erasures", "list_probes", "probe", "tool_calls"})
REMEMBER = 64


#: Seconds a question may take before its queries are interrupted and it answers 504.
TIME_LIMIT = 60.0


class Service:
    """Answers questions about the runs of a catalog, on any number of threads at once.

    No lock is held while a question is answered: each request reads the
    run through cursors of its own. The lock here only guards the memory
    of answers (`REMEMBERED`) and of run summaries.
    """

    def __init__(self, catalog: Catalog, *, intake: bool = False, intake_backend: str = "heuristic",
                 time_limit: float | None = TIME_LIMIT, audit_processes: int = 0) -> None:
        self.catalog, self.intake_enabled, self.intake_backend = catalog, intake, intake_backend
        self.time_limit = time_limit
        # Audits in child processes (`service.audit_worker`), at most this many at once; 0: in this process.
        self.audit_workers = AuditWorkers(audit_processes) if audit_processes else None
        self._lock = threading.Lock()  # around the two dictionaries below, never around an answer
        self._infos: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._answers: OrderedDict[tuple[Any, ...], Any] = OrderedDict()

    def questions(self, *, mcp: bool = False) -> list[Question]:
        return [q for q in QUESTIONS if q.mcp or not mcp]

    def ask(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """The answer as plain JSON data; raises ServiceError / CatalogError / LedgermemError."""
        question = BY_NAME.get(name)
        if question is None:
            raise NotFound(f"no question {name!r}; questions: {', '.join(BY_NAME)}")
        args = question.validate(arguments)
        if self.time_limit is None or question.method != "GET":  # a write is never cut half way
            return self._answer(question, args)
        with Deadline(self.time_limit) as deadline:
            token = DEADLINE.set(deadline)
            try:
                answer = self._answer(question, args)
            except Exception:
                deadline.check()  # an interrupted query: the time limit is the reason to give
                raise
            finally:
                DEADLINE.reset(token)
            deadline.check()
            return answer

    def _answer(self, question: Question, args: Arguments) -> Any:
        if question.name not in REMEMBERED:
            return jsonable(question.answer(self, args))
        # A run whose files have not changed gives the same answer: the costly ones are remembered.
        source = self.catalog.locate(args["run"])
        now = signature(source.path)
        key = (question.name, source.path, now, tuple(sorted(args.items())))
        with self._lock:
            for old in [k for k in self._answers if k[1] == source.path and k[2] != now]:
                del self._answers[old]  # the run changed (an erasure, say): nothing of the old files is kept
            if key in self._answers:
                self._answers.move_to_end(key)
                return self._answers[key]
        answer = jsonable(question.answer(self, args))  # two requests may both compute it: the same answer
        with self._lock:
            self._answers[key] = answer
            while len(self._answers) > REMEMBER:
                self._answers.popitem(last=False)
        return answer

    def error(self, exc: BaseException) -> tuple[int, dict[str, Any]]:
        """The status and JSON body of an error, as both transports send it: no path of the machine in it."""
        status, body = error_body(exc)
        body["error"] = self.catalog.scrub(str(body["error"]))
        return status, body

    def run_info(self, run_id: str) -> dict[str, Any]:
        source = self.catalog.locate(run_id)
        key = (source.path, signature(source.path), run_id)  # an unchanged run is not opened again
        with self._lock:
            known = self._infos.get(key)
        if known is not None:
            return known
        with self.catalog.open(run_id) as view:
            summary = rows(view, "run_summary", {"run": view.run_id})[0]
            info = {"run_id": run_id, "source": self.catalog.shown_path(source), "format": source.kind,
                    "live": view.live, "sealed": view.ledger.keys is not None, **summary}
        if view.run_id != run_id:
            info["recorded_run_id"] = view.run_id  # a copy beside the original: served as run@folder
        with self._lock:
            self._infos[key] = info
        return info

    def intake(self, args: Arguments) -> Any:
        if not self.intake_enabled:
            raise Unavailable("the fact intake is not enabled on this server (start it with --intake)")
        return fact_intake.intake(self.catalog, args, backend=self.intake_backend)


__all__ = ["BY_NAME", "MAX_DEPTH", "QUESTIONS", "TIME_LIMIT", "AuditFailed", "BadRequest", "Conflict", "NotFound", "Param", "Question", "Service",
           "ServiceError", "Unavailable", "error_body", "load_json", "version"]
