"""Rate limits shared by every worker of one endpoint: requests and tokens per window, and a shared pause.

Time is a fake clock that only moves when someone sleeps, so nothing here
depends on how fast the machine is: the assertions are on counts and on
the order of the limiter's decisions, which its log records.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest

from ledgermem.evaluation.runner import RunOptions, build_backends
from ledgermem.memory.http_backend import HttpSettings, OpenAICompatibleBackend
from ledgermem.memory.ratelimit import RateLimiter
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR
from tests.llm_server import ScriptedLlmServer

MESSAGES = [{"role": "user", "content": "Where is the meeting?"}]


class FakeClock:
    """Monotonic seconds that advance only by `sleep` (from any thread)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds
            self.slept.append(seconds)


def most_in_window(grants: list[tuple[float, int]], period: float, *, tokens: bool = False) -> int:
    """The most requests (or prompt tokens) granted in any half-open window of `period` seconds."""
    times = sorted(grants)
    best = 0
    for i, (start, _) in enumerate(times):
        inside = [n for t, n in times[i:] if t < start + period]
        best = max(best, sum(inside) if tokens else len(inside))
    return best


def grants(limiter: RateLimiter) -> list[tuple[float, int]]:
    return [(when, n) for kind, when, n in limiter.log if kind == "grant"]


def _hammer(limiter: RateLimiter, threads: int, each: int, tokens: int = 0) -> None:
    def work() -> None:
        for _ in range(each):
            limiter.acquire(tokens)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()


class LeakyLimiter(RateLimiter):
    """A broken limiter for the must-fail control: it forgets the request limit."""

    def _delay(self, now: float, tokens: int) -> float:
        rpm, self.rpm = self.rpm, None
        try:
            return super()._delay(now, tokens)
        finally:
            self.rpm = rpm


def test_requests_per_window_are_kept_across_threads() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rpm=3, clock=clock, sleep=clock.sleep)
    _hammer(limiter, threads=4, each=5)
    assert limiter.granted == 20 and len(grants(limiter)) == 20
    assert most_in_window(grants(limiter), 60.0) == 3
    assert clock.now >= 6 * 60.0  # 20 requests at 3 a minute need six more windows after the first
    assert limiter.waits > 0


def test_the_window_check_catches_a_limiter_that_lets_too_much_through() -> None:
    clock = FakeClock()
    leaky = LeakyLimiter(rpm=3, clock=clock, sleep=clock.sleep)
    _hammer(leaky, threads=4, each=5)
    assert most_in_window(grants(leaky), 60.0) > 3


def test_prompt_tokens_per_window_are_kept_and_a_huge_prompt_goes_alone() -> None:
    clock = FakeClock()
    limiter = RateLimiter(tpm=100, clock=clock, sleep=clock.sleep)
    _hammer(limiter, threads=3, each=4, tokens=40)
    assert most_in_window(grants(limiter), 60.0, tokens=True) <= 100
    assert most_in_window(grants(limiter), 60.0) == 2
    limiter.acquire(250)  # larger than the whole limit: waits for an empty window, then goes
    last = grants(limiter)[-1]
    assert last[1] == 250 and all(t <= last[0] - 60.0 for t, _ in grants(limiter)[:-1])


def test_bad_limits_are_refused_with_their_name() -> None:
    with pytest.raises(ValueError, match="rpm"):
        RateLimiter(rpm=0)
    with pytest.raises(ValueError, match="tpm"):
        RateLimiter(tpm=-5)
    with pytest.raises(ValueError, match="period"):
        RateLimiter(rpm=1, period=0)


def _backend(url: str, limiter: RateLimiter, clock: FakeClock) -> OpenAICompatibleBackend:
    settings = HttpSettings(preset="http", base_url=url, model="m", timeout_s=5.0, max_retries=3,
                            backoff_base_s=0.01, backoff_max_s=30.0)
    return OpenAICompatibleBackend(settings, tokenizer=ESTIMATOR, sleep=clock.sleep, rng=random.Random(1),
                                   limiter=limiter)


def test_a_429_with_retry_after_pauses_every_worker_of_the_endpoint() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rpm=1000, clock=clock, sleep=clock.sleep)
    lock = threading.Lock()
    state = {"n": 0}

    def script(payload: object) -> tuple:
        with lock:
            state["n"] += 1
            first = state["n"] == 3
        return ("status", 429, {"Retry-After": "7"}) if first else ("ok", "fine")

    with ScriptedLlmServer(script) as server:
        # Two backends on one endpoint (say answer and summarize), four threads each calling five times.
        answer, summarize = _backend(server.base_url, limiter, clock), _backend(server.base_url, limiter, clock)
        results: list[str] = []

        def work(backend: OpenAICompatibleBackend) -> None:
            for _ in range(5):
                results.append(backend.complete(MESSAGES, purpose="answer").text)

        pool = [threading.Thread(target=work, args=(b,)) for b in (answer, summarize, answer, summarize)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        sent = len(server.requests)
    assert results == ["fine"] * 20  # the one 429 was retried
    assert sent == 21 == limiter.granted  # every request the server saw went through the limiter
    assert limiter.pauses == 1
    kinds = [kind for kind, _, _ in limiter.log]
    at = kinds.index("pause")
    until = limiter.log[at][1]
    after = [when for kind, when, _ in list(limiter.log)[at + 1:] if kind == "grant"]
    assert after and all(when >= until for when in after)  # nobody sent anything during the pause
    assert until == pytest.approx(7.0, abs=0.5)  # the server's Retry-After, from when the 429 came back


def test_without_a_limiter_a_429_waits_in_the_calling_thread_only() -> None:
    clock = FakeClock()
    with ScriptedLlmServer([("status", 429, {"Retry-After": "2"}), ("ok", "fine")]) as server:
        settings = HttpSettings(preset="http", base_url=server.base_url, model="m", backoff_max_s=30.0)
        backend = OpenAICompatibleBackend(settings, tokenizer=ESTIMATOR, sleep=clock.sleep)
        assert backend.complete(MESSAGES, purpose="answer").text == "fine"
    assert clock.slept == [2.0]


def _opts(tmp_path: Path, **extra: object) -> RunOptions:
    return RunOptions(run_id="r", runs_dir=tmp_path, backend="http", model="m", base_url="http://127.0.0.1:9/v1",
                      memory=MemoryConfig(tokenizer=ESTIMATOR), env_file=None, **extra)  # type: ignore[arg-type]


def test_the_run_shares_one_limiter_per_endpoint_across_purposes(tmp_path: Path) -> None:
    routed = build_backends(_opts(tmp_path, rpm=60, tpm=10_000, summarize_model="small"), ESTIMATOR).memory
    answer, summarize = routed.for_purpose("answer"), routed.for_purpose("summarize")  # type: ignore[attr-defined]
    assert answer is not summarize and answer.limiter is summarize.limiter
    assert (answer.limiter.rpm, answer.limiter.tpm) == (60, 10_000)
    apart = build_backends(_opts(tmp_path, rpm=60, summarize_base_url="http://127.0.0.1:10/v1"), ESTIMATOR).memory
    assert apart.for_purpose("answer").limiter is not apart.for_purpose("summarize").limiter  # type: ignore[attr-defined]
    plain = build_backends(_opts(tmp_path), ESTIMATOR).memory
    assert plain.for_purpose("answer").limiter is None  # type: ignore[attr-defined]
