"""The one write the audit API allows: a user's statement recorded as an episode's next turn.

Idempotent the way the ledger is: by position. The client says which turn
it last saw (`after_turn`); the statement becomes turn `after_turn + 1`.
Sent again (a retry after a lost answer), the same statement finds itself
at that turn and nothing is written twice; a different statement there, or
an `after_turn` ahead of the episode, is a conflict. The turn is recorded
through `Memory` like any other (summarizer call, decide, one transaction),
and the audit of the run is run before the answer is given: the answer
carries it, and a violation makes the answer an error.
"""

from __future__ import annotations

from typing import Any

from ledgermem.service.catalog import Catalog
from ledgermem.evaluation.runner import RunOptions, build_backends
from ledgermem.service.questions import AuditFailed, Conflict, NotFound
from ledgermem.gate.invariants import audit
from ledgermem.ledger.store import StreamKey
from ledgermem.memory.memory import Memory
from ledgermem.projections.state import record_id_for
from ledgermem.projections.tokens import default_tokenizer


def intake(catalog: Catalog, args: dict[str, Any], *, backend: str = "heuristic") -> Any:
    served, system, episode = args["run"], args["system"], args["episode"]
    run_id = catalog.resolve(served)[1]  # the run id recorded in the ledger (a copy is served as run@folder)
    if system != "three_layer":
        raise NotFound(f"facts are taken in by the three_layer memory only, not by {system!r}", "system")
    stream = StreamKey(run_id, system, episode)
    with catalog.open_for_writing(served) as (ledger, projections):
        projections.catch_up(ledger)  # the audit below reads every stream's projections, not only this one's
        if stream not in dict(ledger.streams(run_id)) and args["after_turn"] != 0:
            raise NotFound(f"run {run_id!r} has no episode {episode!r}; a new episode starts with after_turn=0",
                           "episode")
        backends = build_backends(RunOptions(run_id=run_id, backend=backend, env_file=None), default_tokenizer())
        memory = Memory(ledger, stream, backends.memory, projections=projections)
        turn = args["after_turn"] + 1
        record = record_id_for(turn)
        if args["after_turn"] > memory.state.turn:
            raise Conflict(f"episode {episode!r} is at turn {memory.state.turn}; after_turn {args['after_turn']} "
                           "is ahead of it", "after_turn")
        if args["after_turn"] < memory.state.turn:
            held = memory.state.raw.get(record)
            same = held is not None and (held.user, held.agent, held.occurred_at) == (
                args["user"], args["agent"], args["occurred_at"])
            if not same:
                raise Conflict(f"turn {turn} of episode {episode!r} already holds a different statement; the "
                               f"episode is at turn {memory.state.turn}: read it and send after_turn="
                               f"{memory.state.turn}", "after_turn")
            created, seqs = False, _seqs_of_turn(ledger, stream, turn)
        else:
            recorded = memory.add_turn(args["user"], args["agent"], occurred_at=args["occurred_at"], source="intake")
            created, seqs = True, [r.seq for r in recorded]
        report = audit(ledger, projections, run_id=run_id)
        written = [s.summary_id for s in memory.state.summaries.values() if record in s.raw_ids]
        answer = {
            "created": created, "run": run_id, "episode": episode, "turn": turn, "record_id": record,
            "seqs": seqs, "summaries": written,
            "registry": [{"slot": k, "value": v, "summary_id": sid} for k, (v, sid) in
                         memory.state.current_values().items()],
            "audit": report.as_dict(),
        }
    if not report.ok:
        raise AuditFailed(f"the audit after recording turn {turn} found violations: {', '.join(report.failed())}",
                          detail=answer)
    return answer


def _seqs_of_turn(ledger: Any, stream: StreamKey, turn: int) -> list[int]:
    return [r.seq for r in ledger.read(stream=stream)
            if r.event.turn == turn and not getattr(r.event, "probe_id", None)]
