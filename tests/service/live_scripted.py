"""A live memory server on a thread of this process whose answering model is scripted to call a tool.

The summarizer is the offline heuristic backend; the `answer` and `respond` calls ask once for
`get_predecessor_summary(fact_key="office", exclude_value="floor 5")` and then answer with the value
the tool returned, so every question makes one tool call whose candidate table is known.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from ledgermem.memory.backends import Message, RoutedBackend, ScriptedBackend
from ledgermem.memory.factory import make_backend
from ledgermem.projections.tokens import ESTIMATOR
from ledgermem.service.live import LiveStore
from tests.service.conftest import live_http

STREAM = "acme/user-42/session-7"
TURNS = [("My office is on floor 3.", "Noted."), ("I live in Lyon.", "OK."),
         ("Actually my office moved to floor 5.", "Noted, floor 5.")]
CALL = 'get_predecessor_summary(fact_key="office", exclude_value="floor 5")'


def answerer(messages: Sequence[Message], purpose: str) -> str:
    last = str(messages[-1]["content"])
    if "value=" in last:  # the tool's result came back: answer with it
        return "It was " + last.split("value=", 1)[1].split(";", 1)[0]
    return CALL


def backend() -> RoutedBackend:
    scripted = ScriptedBackend(answerer)
    return RoutedBackend(make_backend("heuristic", tokenizer=ESTIMATOR), {"answer": scripted, "respond": scripted})


@dataclass
class LiveServer:
    url: str
    store: LiveStore
    secrets: dict[str, str]

    def request(self, who: str, method: str, path: str, body: dict[str, Any] | None = None,
                **params: Any) -> requests.Response:
        return requests.request(method, self.url + path, params=params or None, json=body, timeout=60,
                                headers={"Authorization": f"Bearer {self.secrets[who]}"} if who else {})


@contextmanager
def live_server(folder: Path) -> Iterator[LiveServer]:
    """The server with a writer (acme: read, write), a reader (acme: read) and an outsider (globex: all)."""
    store = LiveStore(folder, backend=backend)
    secrets = {name: store.tokens.create(ns, scopes)[1] for name, ns, scopes in (
        ("writer", "acme", "read,write"), ("reader", "acme", "read"), ("outsider", "globex", "read,write"))}
    with live_http(store) as url:
        yield LiveServer(url, store, secrets)
