"""LLM backends: one small protocol, several implementations.

A backend turns chat messages into a `Completion`. It does not know about
the memory: prompts come from `memory.prompts`, and every call is recorded
as an `llm_called` event by the caller.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ledgermem.ledger.schema import canonical_json
from ledgermem.memory.errors import BackendError

Message = dict[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """One call's result. A failed call has `error` set (and `fatal` when no later call can succeed).

    `attempts`: each HTTP attempt's status, error and latency (an offline
    backend has none); `latency_ms`: the call's latency when the backend
    knows it better than the caller's clock does (a replay returns the
    recorded one).
    """

    text: str
    usage: dict[str, int] = field(default_factory=dict)
    retries: int = 0
    error: str | None = None
    attempts: tuple[dict[str, Any], ...] = ()
    latency_ms: float | None = None
    fatal: bool = False


class Backend(Protocol):
    name: str
    model: str

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion: ...


def prompt_hash(messages: Sequence[Message]) -> str:
    return hashlib.sha256(canonical_json(list(messages)).encode("utf-8")).hexdigest()[:16]


class ScriptedBackend:
    """Answers from a script: a list of responses, or a function of (messages, purpose). For tests."""

    name = "scripted"

    def __init__(
        self,
        script: Sequence[str] | Callable[[Sequence[Message], str], str],
        *,
        model: str = "script",
    ) -> None:
        self.model = model
        self._script = script
        self._i = 0
        self.calls: list[tuple[str, list[Message]]] = []

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        self.calls.append((purpose, list(messages)))
        if callable(self._script):
            return Completion(text=self._script(messages, purpose))
        if self._i >= len(self._script):
            raise BackendError(f"scripted backend ran out of responses at call {self._i + 1} ({purpose})")
        text = self._script[self._i]
        self._i += 1
        return Completion(text=text)


class RoutedBackend:
    """One backend per purpose (answer, summarize, judge, ...), with a default for the rest.

    Lets a run answer with one model and summarise with another; each call
    is recorded with the backend and model that served it.
    """

    def __init__(self, default: Backend, routes: dict[str, Backend] | None = None) -> None:
        self.default = default
        self.routes = dict(routes or {})
        self.name, self.model = default.name, default.model

    def for_purpose(self, purpose: str) -> Backend:
        return self.routes.get(purpose, self.default)

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        return self.for_purpose(purpose).complete(messages, purpose=purpose)

    def identity(self, purpose: str) -> tuple[str, str]:
        return identity(self.for_purpose(purpose), purpose)


def identity(backend: Backend, purpose: str) -> tuple[str, str]:
    """(backend name, model) that served the latest call of `purpose`."""
    ident = getattr(backend, "identity", None)
    if callable(ident):
        name, model = ident(purpose)
        return str(name), str(model)
    return backend.name, backend.model
