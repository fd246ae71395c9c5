"""`ledgermem.client`: a small client of the live memory service over `requests`.

    >>> from ledgermem.client import MemoryClient
    >>> memory = MemoryClient("http://127.0.0.1:8766", token="lmt_...")
    >>> memory.record_turn("acme/user-42/session-7", "My office moved to floor 5.", "Noted.")
    >>> memory.render("acme/user-42/session-7")["text"]

Each method is one tool of `service.live_questions.LIVE_QUESTIONS`, sent to
the route the list gives it (`call(name, **arguments)` reaches any of them).
`record_turn` and `respond` send an idempotency key (a new random one
unless given) and retry a connection that failed or a 503 with the same key,
so a turn is recorded once however often it is sent. An error answer raises
`MemoryServiceError` with the status, the message and its detail (a 409 of
`expected_version` carries `current_version`).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import requests

from ledgermem.service.errors import MemoryServiceError

from ledgermem.service.live_questions import LIVE_BY_NAME


class MemoryClient:
    """The live memory service at `base_url`, as the holder of `token` sees it."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 60.0, retries: int = 3,
                 session: requests.Session | None = None) -> None:
        self.base_url, self.timeout, self.retries = base_url.rstrip("/"), timeout, retries
        self.session = session or requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        """Any tool by name, with its arguments (None values are left out)."""
        question = LIVE_BY_NAME.get(name)
        if question is None:
            raise ValueError(f"no tool {name!r}; tools: {', '.join(LIVE_BY_NAME)}")
        args = {k: v for k, v in arguments.items() if v is not None}
        url = self.base_url + question.path
        for attempt in range(self.retries + 1):
            try:
                if question.method == "GET":
                    response = self.session.get(url, params=args, timeout=self.timeout)
                else:
                    response = self.session.post(url, json=args, timeout=self.timeout)
            except requests.ConnectionError:
                if attempt == self.retries or not self._may_retry(question.method, args):
                    raise
                time.sleep(0.05 * 2 ** attempt)
                continue
            if response.status_code == 503 and attempt < self.retries and self._may_retry(question.method, args):
                time.sleep(0.05 * 2 ** attempt)
                continue
            return self._answer(response)
        raise AssertionError("unreachable")  # the loop returns or raises

    @staticmethod
    def _may_retry(method: str, args: dict[str, Any]) -> bool:
        """A read, or a write that names its idempotency key: sending it again cannot record it twice."""
        return method == "GET" or "idempotency_key" in args

    @staticmethod
    def _answer(response: requests.Response) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):  # not the service's answer: a proxy's page, say
            raise MemoryServiceError(response.status_code, f"the answer is not a JSON object: {response.text[:200]!r}")
        if response.status_code >= 400:
            raise MemoryServiceError(response.status_code, str(body.get("error", "")),
                                     parameter=body.get("parameter"), detail=body.get("detail"))
        return body

    # -- writes ----------------------------------------------------------------------

    def record_turn(self, stream: str, user: str, agent: str = "", *, idempotency_key: str | None = None,
                    expected_version: int | None = None, occurred_at: str | None = None) -> dict[str, Any]:
        return self.call("record_turn", stream=stream, user=user, agent=agent,
                         idempotency_key=idempotency_key or uuid.uuid4().hex, expected_version=expected_version,
                         occurred_at=occurred_at)

    def respond(self, stream: str, user: str, *, idempotency_key: str | None = None,
                expected_version: int | None = None, occurred_at: str | None = None) -> dict[str, Any]:
        return self.call("respond", stream=stream, user=user, idempotency_key=idempotency_key or uuid.uuid4().hex,
                         expected_version=expected_version, occurred_at=occurred_at)

    def ask(self, stream: str, question: str, *, budget: int | None = None,
            expected_version: int | None = None) -> dict[str, Any]:
        """The memory answers a question (recorded, never retried): the answer and each tool call's candidate table."""
        return self.call("ask", stream=stream, question=question, budget=budget, expected_version=expected_version)

    def erase(self, stream: str, legal_basis: str, *, slot: str | None = None, value: str | None = None,
              record_id: str | None = None, subject: bool = False) -> dict[str, Any]:
        return self.call("erase", stream=stream, legal_basis=legal_basis, slot=slot, value=value,
                         record_id=record_id, subject=subject or None)

    def apply_retention(self, stream: str) -> dict[str, Any]:
        """Apply the retention policy of the stream's namespace now (a token with the erase scope)."""
        return self.call("apply_retention", stream=stream)

    # -- reads -----------------------------------------------------------------------

    def render(self, stream: str, budget: int | None = None) -> dict[str, Any]:
        return self.call("render_memory", stream=stream, budget=budget)

    def current_values(self, stream: str) -> dict[str, str]:
        """slot -> current value."""
        return {v["slot"]: v["value"] for v in self.call("current_values", stream=stream)["values"]}

    def history(self, stream: str, slot: str) -> list[dict[str, Any]]:
        return list(self.call("history", stream=stream, slot=slot)["values"])

    def get_value_as_of(self, stream: str, slot: str, at: str) -> dict[str, Any]:
        return self.call("get_value_as_of", stream=stream, slot=slot, at=at)

    def blame(self, stream: str, slot: str) -> dict[str, Any]:
        return self.call("blame", stream=stream, slot=slot)

    def get_archived_summary(self, stream: str, summary_id: str) -> dict[str, Any]:
        return self.call("get_archived_summary", stream=stream, summary_id=summary_id)

    def get_raw_record(self, stream: str, reference_id: str) -> dict[str, Any]:
        return self.call("get_raw_record", stream=stream, reference_id=reference_id)

    def get_predecessor_summary(self, stream: str, fact_key: str, exclude_value: str) -> dict[str, Any]:
        return self.call("get_predecessor_summary", stream=stream, fact_key=fact_key, exclude_value=exclude_value)

    def expand_index(self, stream: str, index_id: str) -> dict[str, Any]:
        return self.call("expand_index", stream=stream, index_id=index_id)

    def tool_calls(self, stream: str, *, turn: int | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """The stream's recorded tool calls, each with its candidate table."""
        return list(self.call("tool_calls", stream=stream, turn=turn, limit=limit)["tool_calls"])

    def streams(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return list(self.call("list_streams", namespace=namespace)["streams"])


__all__ = ["MemoryClient", "MemoryServiceError"]
