"""The OpenAI-compatible backend, over real HTTP against a scripted server on loopback."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from ledgermem.ledger.errors import LedgermemError
from ledgermem.memory.backends import Backend, Completion
from ledgermem.memory.http_backend import PRESETS, HttpSettings, OpenAICompatibleBackend, parse_retry_after, safe_url
from ledgermem.projections.tokens import ESTIMATOR, count_tokens
from tests.llm_server import Behaviour, ScriptedLlmServer

KEY = "sk-test-0123456789abcdef"
MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Where is the meeting?"}]


class RecordingSleep:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def settings(base_url: str, **overrides: object) -> HttpSettings:
    base = HttpSettings(preset="http", base_url=base_url, model="test-model", timeout_s=5.0,
                        max_retries=4, backoff_base_s=0.01, backoff_max_s=0.05)
    return replace(base, **overrides)  # type: ignore[arg-type]


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


def backend_for(server_or_url: ScriptedLlmServer | str, sleep: RecordingSleep, **overrides: object) -> OpenAICompatibleBackend:
    url = server_or_url if isinstance(server_or_url, str) else server_or_url.base_url
    return OpenAICompatibleBackend(settings(url, **overrides), tokenizer=ESTIMATOR, sleep=sleep,
                                   rng=random.Random(7))


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port with nothing listening on it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield port


# -- success --------------------------------------------------------------------------


def test_success_returns_text_usage_and_sends_model_messages_and_key(sleep: RecordingSleep) -> None:
    with ScriptedLlmServer([("ok", "The meeting is at 2pm.")], served_model="test-model-2024") as server:
        with backend_for(server, sleep, api_key=KEY, max_tokens=64) as backend:
            completion = backend.complete(MESSAGES, purpose="answer")
    (attempt,) = completion.attempts
    assert attempt["status"] == 200 and attempt["error"] is None and attempt["latency_ms"] > 0
    assert completion == Completion(text="The meeting is at 2pm.",
                                    usage={"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                                    retries=0, error=None, attempts=completion.attempts)
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.json == {"model": "test-model", "messages": MESSAGES, "temperature": 0.0, "max_tokens": 64}
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert backend.name == "http" and backend.model == "test-model"
    assert backend.last_model == "test-model-2024"
    assert sleep.calls == [] and server.errors == []


def test_no_key_sends_no_authorization_and_no_max_tokens(sleep: RecordingSleep) -> None:
    with ScriptedLlmServer([("ok", "hi")]) as server, backend_for(server, sleep) as backend:
        assert backend.complete(MESSAGES, purpose="answer").text == "hi"
    (request,) = server.requests
    assert "authorization" not in request.headers
    assert "max_tokens" not in request.json


def test_backend_satisfies_the_protocol_and_names_its_preset() -> None:
    s = HttpSettings(preset="deepseek", base_url=PRESETS["deepseek"].base_url or "", model="deepseek-chat")
    backend: Backend = OpenAICompatibleBackend(s, tokenizer=ESTIMATOR)
    assert (backend.name, backend.model) == ("deepseek", "deepseek-chat")
    assert isinstance(backend, OpenAICompatibleBackend)
    backend.close()


def test_usage_is_estimated_when_the_server_gives_none(sleep: RecordingSleep) -> None:
    with ScriptedLlmServer([("no_usage", "It is at 2pm.")]) as server, backend_for(server, sleep) as backend:
        completion = backend.complete(MESSAGES, purpose="summarize")
    prompt = "\n".join(m["content"] for m in MESSAGES)
    assert completion.usage == {"prompt_tokens": count_tokens(prompt, ESTIMATOR),
                                "completion_tokens": count_tokens("It is at 2pm.", ESTIMATOR), "estimated": 1}
    assert completion.error is None


# -- retried failures -----------------------------------------------------------------


def test_429_with_retry_after_sleeps_exactly_that_then_succeeds(sleep: RecordingSleep) -> None:
    script = [("status", 429, {"Retry-After": "1"}), ("ok", "done")]
    with ScriptedLlmServer(script) as server, backend_for(server, sleep, backoff_max_s=30.0) as backend:
        completion = backend.complete(MESSAGES, purpose="answer")
    assert (completion.text, completion.retries, completion.error) == ("done", 1, None)
    assert sleep.calls == [1.0]
    assert len(server.requests) == 2
    assert any("429" in line for line in backend.log)


def test_retry_after_is_capped_at_backoff_max(sleep: RecordingSleep) -> None:
    script = [("status", 503, {"Retry-After": "120"}), ("status", 503, {"Retry-After": "Wed, 21 Oct 2105 07:28:00 GMT"}),
              ("ok", "done")]
    with ScriptedLlmServer(script) as server, backend_for(server, sleep, backoff_max_s=2.5) as backend:
        completion = backend.complete(MESSAGES, purpose="answer")
    assert completion.retries == 2 and sleep.calls == [2.5, 2.5]


def test_5xx_until_retries_run_out(sleep: RecordingSleep) -> None:
    with ScriptedLlmServer([("status", 503, {})]) as server, backend_for(server, sleep, max_retries=4) as backend:
        url = server.base_url + "/chat/completions"
        completion = backend.complete(MESSAGES, purpose="answer")
    assert completion.text == "" and completion.usage == {} and completion.retries == 4
    assert len(server.requests) == 5 and len(sleep.calls) == 4
    error = completion.error or ""
    assert "503, 503, 503, 503, 503" in error
    assert url in error and "5 attempts" in error and "status 503" in error
    assert "scripted 503" in error  # the body snippet
    assert "\n" not in error
    assert len(backend.log) == 5


def test_mixed_transient_statuses_are_all_named(sleep: RecordingSleep) -> None:
    script: list[Behaviour] = [("status", 500, {}), ("status", 502, {}), ("status", 504, {}), ("status", 429, {})]
    with ScriptedLlmServer(script) as server, backend_for(server, sleep, max_retries=3) as backend:
        completion = backend.complete(MESSAGES, purpose="judge")
    assert "500, 502, 504, 429" in (completion.error or "")
    assert completion.retries == 3


def test_timeout_is_retried_then_reported(sleep: RecordingSleep) -> None:
    started = time.perf_counter()
    with ScriptedLlmServer([("sleep", 3.0, "late")]) as server, \
            backend_for(server, sleep, timeout_s=0.2, max_retries=1) as backend:
        completion = backend.complete(MESSAGES, purpose="answer")
    assert time.perf_counter() - started < 2.5  # the server's sleep is cut short on shutdown
    assert completion.text == "" and completion.retries == 1
    assert "timeout after 0.2s, timeout after 0.2s" in (completion.error or "")
    assert "status none" in (completion.error or "")


def test_a_body_that_is_not_json_is_fatal_and_not_retried(sleep: RecordingSleep) -> None:
    """A 200 that is not JSON: the URL points at something that is not a chat-completions server."""
    with ScriptedLlmServer([("raw", b"<html>oops</html>"), ("ok", "never")]) as server, \
            backend_for(server, sleep, max_retries=2) as backend:
        completion = backend.complete(MESSAGES, purpose="answer")
    error = completion.error or ""
    assert "200 invalid JSON" in error and "server says: '<html>oops</html>'" in error
    assert completion.fatal and completion.retries == 0 and len(server.requests) == 1 and sleep.calls == []


def test_settings_reach_the_request_body(sleep: RecordingSleep) -> None:
    with ScriptedLlmServer([("ok", "hi")]) as server, \
            backend_for(server, sleep, max_tokens=16, temperature=0.3, stop=("</s>", "\n\n")) as backend:
        backend.complete(MESSAGES, purpose="judge")
    (request,) = server.requests
    assert (request.json["max_tokens"], request.json["temperature"], request.json["stop"]) == (16, 0.3, ["</s>", "\n\n"])


def test_every_attempt_is_kept_also_for_a_call_that_succeeds(sleep: RecordingSleep) -> None:
    script: list[Behaviour] = [("status", 503, {}), ("sleep", 1.0, "late"), ("ok", "fine")]
    with ScriptedLlmServer(script) as server, backend_for(server, sleep, timeout_s=0.2) as backend:
        completion = backend.complete(MESSAGES, purpose="summarize")
    assert completion.text == "fine" and completion.error is None and completion.retries == 2
    first, second, third = completion.attempts
    assert (first["status"], first["error"]) == (503, "503")
    assert (second["status"], second["error"]) == (None, "timeout after 0.2s") and second["latency_ms"] >= 200
    assert (third["status"], third["error"]) == (200, None)
    assert [a.get("wait_s") for a in completion.attempts] == [pytest.approx(sleep.calls[0], abs=1e-3), 0.05, None]


class MinRandom(random.Random):
    """Always draws the lower bound: a jittered wait is then 0."""

    def uniform(self, a: float, b: float) -> float:
        return a


def test_a_timeout_waits_before_the_same_prompt_is_sent_again(sleep: RecordingSleep) -> None:
    """After a timeout the server may still be computing: the retry waits min(cap, max(timeout, base*2^k))."""
    with ScriptedLlmServer([("sleep", 1.0, "late"), ("status", 503, {}), ("ok", "fine")]) as server:
        s = settings(server.base_url, timeout_s=0.2, backoff_base_s=0.01, backoff_max_s=5.0)
        with OpenAICompatibleBackend(s, tokenizer=ESTIMATOR, sleep=sleep, rng=MinRandom()) as backend:
            assert backend.complete(MESSAGES, purpose="answer").text == "fine"
    assert sleep.calls == [0.2, 0.0]  # the timeout's wait is not jittered away; the 503's is
    with ScriptedLlmServer([("sleep", 1.0, "late"), ("ok", "fine")]) as server:
        s = settings(server.base_url, timeout_s=0.2, backoff_base_s=0.01, backoff_max_s=0.1)
        with OpenAICompatibleBackend(s, tokenizer=ESTIMATOR, sleep=sleep, rng=MinRandom()) as backend:
            backend.complete(MESSAGES, purpose="answer")
    assert sleep.calls[-1] == 0.1  # bounded by the cap


def test_empty_choice_list_is_retried_then_an_error(sleep: RecordingSleep) -> None:
    with ScriptedLlmServer([("empty_choices",)]) as server, backend_for(server, sleep, max_retries=1) as backend:
        completion = backend.complete(MESSAGES, purpose="answer")
    assert completion.text == "" and completion.retries == 1
    assert "no choices[0].message.content" in (completion.error or "")
    assert len(server.requests) == 2


def test_connection_refused_is_retried_then_failed(sleep: RecordingSleep, closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    with backend_for(url, sleep, max_retries=2) as backend:
        completion = backend.complete(MESSAGES, purpose="answer")
    assert completion.text == "" and completion.retries == 2 and len(sleep.calls) == 2
    error = completion.error or ""
    assert error.count("connection error") == 3 and f"{url}/chat/completions" in error


# -- not retried ----------------------------------------------------------------------


@pytest.mark.parametrize("status, body, fatal", [
    (400, '{"error": {"message": "the prompt is too long"}}', False),
    (400, '{"error": {"message": "The model `gpt-9` does not exist"}}', True),
    (401, '{"error": {"message": "Invalid API key"}}', True),
    (403, '{"error": "forbidden"}', True),
    (404, '{"detail": "Not Found"}', True),
    (422, '{"message": "unprocessable"}', False),
])
def test_other_4xx_fail_at_once(sleep: RecordingSleep, status: int, body: str, fatal: bool) -> None:
    with ScriptedLlmServer([("status", status, {}, body), ("ok", "never")]) as server, \
            backend_for(server, sleep, api_key=KEY) as backend:
        completion = backend.complete(MESSAGES, purpose="answer")
    assert len(server.requests) == 1 and sleep.calls == []
    assert completion.text == "" and completion.retries == 0 and completion.fatal is fatal
    error = completion.error or ""
    assert f"status {status}" in error and "not retryable" in error and "\n" not in error
    said = {400: "too long" if not fatal else "gpt-9", 401: "Invalid API key", 403: "forbidden", 404: "Not Found",
            422: "unprocessable"}[status]
    assert f"server says: " in error and said in error


# -- backoff --------------------------------------------------------------------------


def test_jittered_backoff_grows_and_is_bounded_by_backoff_max(sleep: RecordingSleep) -> None:
    base, cap = 0.01, 0.05
    with ScriptedLlmServer([("status", 500, {})]) as server, \
            backend_for(server, sleep, max_retries=6, backoff_base_s=base, backoff_max_s=cap) as backend:
        backend.complete(MESSAGES, purpose="answer")
    expected_rng = random.Random(7)
    expected = [expected_rng.uniform(0.0, min(cap, base * 2**attempt)) for attempt in range(6)]
    assert sleep.calls == pytest.approx(expected)
    assert all(0.0 <= s <= min(cap, base * 2**i) for i, s in enumerate(sleep.calls))


class MaxRandom(random.Random):
    """Always draws the upper bound, so the bound itself is what the test sees."""

    def uniform(self, a: float, b: float) -> float:
        return b


def test_backoff_ceiling_doubles_until_the_cap(sleep: RecordingSleep) -> None:
    with ScriptedLlmServer([("status", 502, {})]) as server:
        s = settings(server.base_url, max_retries=5, backoff_base_s=0.5, backoff_max_s=3.0)
        with OpenAICompatibleBackend(s, tokenizer=ESTIMATOR, sleep=sleep, rng=MaxRandom()) as backend:
            backend.complete(MESSAGES, purpose="answer")
    assert sleep.calls == [0.5, 1.0, 2.0, 3.0, 3.0]


# -- secrets --------------------------------------------------------------------------


def test_the_key_never_appears_in_repr_describe_errors_or_log(sleep: RecordingSleep) -> None:
    echo: Behaviour = ("status", 401, {}, f'{{"error": "bad key {KEY}"}}')  # a server that echoes the key back
    with ScriptedLlmServer([echo]) as server, backend_for(server, sleep, api_key=KEY) as backend:
        completion = backend.complete(MESSAGES, purpose="answer")
    s = backend.settings
    assert KEY not in repr(s) and KEY not in str(s)
    assert "api_key='set'" in repr(s)
    assert backend.describe()["api_key"] == "set" and KEY not in str(backend.describe())
    assert KEY not in (completion.error or "") and "[redacted]" in (completion.error or "")
    assert all(KEY not in line for line in backend.log)
    assert settings("http://x/v1").redacted()["api_key"] == "unset"


def test_urls_in_errors_and_metadata_drop_credentials_and_query() -> None:
    assert safe_url("https://user:pw@api.example.com:8443/v1?key=abc#frag") == "https://api.example.com:8443/v1"
    assert safe_url("http://[::1]:8000/v1") == "http://[::1]:8000/v1"
    assert settings("https://u:p@h/v1?k=s").redacted()["base_url"] == "https://h/v1"


def test_parse_retry_after() -> None:
    now = 1_000_000_000.0  # 2001-09-09T01:46:40Z
    assert parse_retry_after("3", now=now) == 3.0
    assert parse_retry_after(" 1.5 ", now=now) == 1.5
    assert parse_retry_after("Sun, 09 Sep 2001 01:46:50 GMT", now=now) == 10.0
    assert parse_retry_after("Sun, 09 Sep 2001 01:46:00 GMT", now=now) == 0.0  # already past
    assert parse_retry_after("-4", now=now) == 0.0
    for bad in (None, "", "soon", "nan"):
        assert parse_retry_after(bad, now=now) is None


def test_a_bad_url_fails_without_retrying(sleep: RecordingSleep) -> None:
    with backend_for("http://", sleep) as backend:
        completion = backend.complete(MESSAGES, purpose="answer")
    assert completion.retries == 0 and sleep.calls == [] and "request error" in (completion.error or "")


class Refused(LedgermemError, ConnectionError):
    """What a guard that forbids the network raises from inside the socket layer."""


def test_a_deliberate_refusal_inside_the_transport_is_raised_not_retried(
    sleep: RecordingSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> object:
        raise Refused("network is disabled")

    with backend_for("http://127.0.0.1:9/v1", sleep) as backend:
        monkeypatch.setattr(socket, "getaddrinfo", refuse)
        with pytest.raises(Refused):
            backend.complete(MESSAGES, purpose="answer")
    assert sleep.calls == []


def test_the_server_leaves_no_thread_behind(sleep: RecordingSleep) -> None:
    before = set(threading.enumerate())
    with ScriptedLlmServer([("sleep", 30.0, "late")]) as server, \
            backend_for(server, sleep, timeout_s=0.1, max_retries=0) as backend:
        assert "timeout" in (backend.complete(MESSAGES, purpose="answer").error or "")
    assert set(threading.enumerate()) == before and server.errors == []


def test_a_short_dummy_key_is_scrubbed_only_as_a_whole_token(sleep: RecordingSleep, closed_port: int) -> None:
    """A local server's dummy key ("x") must not turn "exhausted" into "e[redacted]hausted"; the key alone still goes."""
    with backend_for(f"http://127.0.0.1:{closed_port}/v1", sleep, api_key="x", max_retries=0) as backend:
        completion = backend.complete(MESSAGES, purpose="answer")
        assert completion.error and "exhausted" in completion.error and "[redacted]" not in completion.error
        assert backend._scrub('bad key "x" given') == 'bad key "[redacted]" given'
        assert backend._scrub("x-ray and max") == "x-ray and max"
