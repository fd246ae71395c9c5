"""Answering every LLM call of a new run from the calls a recorded run made.

Each `llm_called` event holds the purpose, the prompt hash and the full
response. `ReplayBackend` serves a call from the recorded calls with the
same purpose and prompt hash, in the order they were made, with the
recorded latency and attempts, so a run repeated with `--replay-llm RUN`
makes the same decisions and the same metrics with no model and no
network. A call that was never recorded is an error naming its purpose and
prompt hash: a replay never invents a response.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ledgermem.projections.events import LlmCalled
from ledgermem.memory.backends import Completion, Message, prompt_hash
from ledgermem.memory.errors import LlmNotRecorded


@dataclass(frozen=True, slots=True)
class _Recorded:
    text: str
    usage: dict[str, int]
    backend: str
    model: str
    retries: int
    error: str | None
    latency_ms: float | None
    attempts: tuple[dict[str, object], ...]


class ReplayBackend:
    """Serves recorded responses by (purpose, prompt hash), in recorded order."""

    name = "replay"

    def __init__(self, calls: Iterable[LlmCalled], *, source: str) -> None:
        self.source = source
        self._calls: dict[tuple[str, str], deque[_Recorded]] = defaultdict(deque)
        self.recorded = 0
        for e in calls:
            self._calls[(e.purpose, e.prompt_hash)].append(
                _Recorded(e.text, dict(e.usage), e.backend, e.model, e.retries, e.error, e.latency_ms,
                          tuple(dict(a) for a in e.attempts)))
            self.recorded += 1
        self.served = 0
        self.model = "replay"
        self._lock = threading.Lock()
        self._local = threading.local()  # per thread: with several workers, "just served" is this thread's call

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        key = (purpose, prompt_hash(messages))
        with self._lock:
            queue = self._calls.get(key)
            call = queue.popleft() if queue else None
            self.served += call is not None
        if call is None:
            known = sum(1 for (p, _), q in self._calls.items() if p == purpose and q)
            raise LlmNotRecorded(
                f"no recorded {purpose!r} call with prompt hash {key[1]} in {self.source} "
                f"({known} unserved {purpose!r} calls with other prompts remain); the replayed run asked "
                "something the recorded run did not"
            )
        self._last()[purpose] = (call.backend, call.model)
        # The recorded latency and attempts, not the replay's: a replay reproduces every metric of the run.
        return Completion(text=call.text, usage=dict(call.usage), retries=call.retries, error=call.error,
                          attempts=tuple(dict(a) for a in call.attempts), latency_ms=call.latency_ms)

    def skip(self, calls: Iterable[LlmCalled]) -> None:
        """Count calls a resumed replay already made as served: a recorded failure and its redo stay apart."""
        for e in calls:
            with self._lock:
                queue = self._calls.get((e.purpose, e.prompt_hash))
                if queue:
                    queue.popleft()
                    self.served += 1

    def identity(self, purpose: str) -> tuple[str, str]:
        """The backend and model that made the recorded call just served."""
        return self._last().get(purpose, (self.name, self.model))

    def _last(self) -> dict[str, tuple[str, str]]:
        if not hasattr(self._local, "last"):
            self._local.last = {}
        last: dict[str, tuple[str, str]] = self._local.last
        return last

    @property
    def unserved(self) -> int:
        return self.recorded - self.served
