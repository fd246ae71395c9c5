"""Rate limits shared by every thread that calls one endpoint: requests and tokens per rolling minute.

Providers count requests and tokens per minute and per account, not per
connection: with several workers calling one endpoint, the limit is only
kept if they all draw from one `RateLimiter`. The limiter keeps the
requests it let through in the last `period` seconds (a rolling window, as
providers count; a token bucket holding a full minute would let twice the
limit through in a minute that starts with a full bucket) and makes a
caller wait until the window has room for its request.

A 429 means the whole account is over its limit, not one worker: `pause`
holds every caller of the limiter until the server's `Retry-After` (or the
backoff) has passed, so the others do not keep hitting the limit while one
of them waits.

Tokens are the prompt's, counted before the request (the completion is
not known yet). A single prompt larger than the whole token limit is let
through alone in an empty window rather than waiting forever.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

LOG_LIMIT = 10_000  # decisions kept for inspection; older ones are dropped


class RateLimiter:
    """At most `rpm` requests and `tpm` prompt tokens in any `period` seconds, and a shared pause."""

    def __init__(
        self,
        *,
        rpm: int | None = None,
        tpm: int | None = None,
        period: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
        if not period > 0:
            raise ValueError(f"period must be a positive number of seconds, got {period!r}")
        self.rpm, self.tpm, self.period = rpm, tpm, period
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._sent: deque[tuple[float, int]] = deque()  # (when, prompt tokens) of requests in the window
        self._tokens = 0  # the sum of the tokens in `_sent`
        self._paused_until = float("-inf")
        self.granted = 0  # requests let through
        self.waits = 0  # requests that had to wait (for room or for a pause)
        self.pauses = 0  # how many times a 429 paused every caller
        #: The latest decisions in the order taken: ("grant", when, tokens) and ("pause", until, 0).
        self.log: deque[tuple[str, float, int]] = deque(maxlen=LOG_LIMIT)

    def acquire(self, tokens: int = 0) -> None:
        """Wait until a request of `tokens` prompt tokens fits the limits and no pause holds, then count it."""
        waited = False
        while True:
            with self._lock:
                now = self._clock()
                delay = self._delay(now, max(0, tokens))
                if delay <= 0:
                    self._sent.append((now, max(0, tokens)))
                    self._tokens += max(0, tokens)
                    self.granted += 1
                    self.log.append(("grant", now, max(0, tokens)))
                    self.waits += waited
                    return
            waited = True
            self._sleep(max(delay, 0.001))  # never a sleep too short to move a clock past the boundary

    def pause(self, seconds: float) -> None:
        """Hold every caller for `seconds` from now (a later pause already set is kept)."""
        with self._lock:
            self._paused_until = max(self._paused_until, self._clock() + max(0.0, seconds))
            self.pauses += 1
            self.log.append(("pause", self._paused_until, 0))

    def _delay(self, now: float, tokens: int) -> float:
        """Seconds until the request may go: 0 when it may go now."""
        while self._sent and self._sent[0][0] <= now - self.period:
            self._tokens -= self._sent.popleft()[1]
        waits = [self._paused_until - now]
        if self.rpm is not None and len(self._sent) >= self.rpm:
            waits.append(self._sent[len(self._sent) - self.rpm][0] + self.period - now)
        if self.tpm is not None and self._sent and self._tokens + tokens > self.tpm:
            freed, room = 0, self._tokens + tokens - self.tpm
            for when, used in self._sent:  # the oldest requests leave the window first
                freed += used
                if freed >= room:
                    waits.append(when + self.period - now)
                    break
            else:
                waits.append(self._sent[-1][0] + self.period - now)  # alone in an empty window
        return max(waits)
