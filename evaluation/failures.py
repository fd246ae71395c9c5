"""The run's failure policy for LLM calls: stop early, lose nothing, redo on resume.

A backend reports a failed call as a `Completion` with an `error` (after
its own retries). In a run, such a call must neither pass for an answer nor
be forgotten:

* The unit of work it belonged to (a turn's memory write, a probe's answer
  or verdict) is not committed. Every call that unit made, the failed one
  included, is committed alone as `llm_called` events, so the ledger keeps
  what happened; the unit itself is left for a later run of the same
  command, which resumes from the ledger and does it again (the redo is a
  new event; no turn is recorded twice). Later turns depend on earlier ones,
  so the episode stops at the failed unit; the run goes on with the next.
* A fatal failure (a bad key, a wrong URL or model, a server that does not
  speak JSON: see `memory.http_backend`) stops the run at once.
* `max_failed_calls` failed calls in a row (no call succeeding in between)
  stop the run: a server that is down is not asked once per episode.

    EvaluationError (evaluation.errors)
    ├── LlmCallFailed    one unit's call failed; carries the unit's calls as events
    └── RunStopped       the run stopped: a fatal failure, or too many in a row
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ledgermem.evaluation.errors import LlmCallFailed, RunStopped
from ledgermem.projections.events import LlmCalled
from ledgermem.memory.answering import llm_called
from ledgermem.memory.backends import Backend, Completion, Message, identity

#: Failed calls in a row that stop a run (no successful call in between).
MAX_FAILED_CALLS = 3


@dataclass(slots=True)
class FailureGuard:
    """Counts failed calls across the run and remembers the current unit's calls.

    The unit (turn, probe, its calls) belongs to the thread doing it, so that
    episodes running on several workers each keep their own; the counts are
    the run's, under a lock.
    """

    max_failed_calls: int = MAX_FAILED_CALLS
    in_a_row: int = 0
    failed: int = 0
    last_error: str | None = None
    _unit: threading.local = field(default_factory=threading.local, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def turn(self) -> int:
        return int(getattr(self._unit, "turn", 0))

    @property
    def probe_id(self) -> str | None:
        return getattr(self._unit, "probe_id", None)

    @property
    def calls(self) -> list[LlmCalled]:
        if not hasattr(self._unit, "calls"):
            self._unit.calls = []
        return self._unit.calls  # type: ignore[no-any-return]

    def begin(self, turn: int, probe_id: str | None = None) -> None:
        """A new unit of work starts (a turn, a probe): its calls are collected apart."""
        self._unit.turn, self._unit.probe_id, self._unit.calls = turn, probe_id, []

    def observe(self, event: LlmCalled, completion: Completion) -> None:
        self.calls.append(event)
        with self._lock:
            if completion.error is None:
                self.in_a_row = 0
                return
            self.in_a_row += 1
            self.failed += 1
            self.last_error = " ".join(completion.error.split())
            stop = None
            if completion.fatal:
                stop = "the server refused in a way no retry can fix"
            elif self.in_a_row >= self.max_failed_calls:
                stop = f"{self.in_a_row} LLM calls failed in a row (--max-failed-calls {self.max_failed_calls})"
            error = self.last_error
        raise LlmCallFailed(error, events=self.calls, stop=stop)

    def wrap(self, backend: Backend) -> GuardedBackend:
        return GuardedBackend(backend, self)


class GuardedBackend:
    """A backend whose failed calls raise `LlmCallFailed` instead of passing for an empty answer."""

    def __init__(self, inner: Backend, guard: FailureGuard) -> None:
        self.inner, self.guard = inner, guard
        self.name, self.model = inner.name, inner.model

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        started = time.perf_counter()
        completion = self.inner.complete(messages, purpose=purpose)
        latency = round((time.perf_counter() - started) * 1000, 3)
        event = llm_called(self.inner, messages, completion, purpose=purpose, turn=self.guard.turn,
                           probe_id=self.guard.probe_id, latency_ms=latency)
        self.guard.observe(event, completion)
        return completion

    def identity(self, purpose: str) -> tuple[str, str]:
        return identity(self.inner, purpose)

    def __getattr__(self, name: str) -> object:  # the replay backend's bookkeeping, say
        return getattr(self.inner, name)
