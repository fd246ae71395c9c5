"""An OpenAI-compatible chat-completions backend over `requests`.

One client serves OpenAI, DeepSeek, vLLM, the llama.cpp server and Ollama:
they all speak `POST {base_url}/chat/completions`. A `Preset` holds what
differs between them (where they listen, which variable holds the key,
whether a model must be named); `memory.settings` resolves the rest.

A failed call never raises: the backend returns a `Completion` with empty
text and a one-line `error`, and every attempt's status, error and latency
in `attempts`, so the caller records it as an `llm_called` event like any
other call and decides what to do (the evaluation runner's failure policy).
Transient failures (429, 5xx, disconnects, timeouts, a 200 without a usable
choice) are retried with exponential backoff and full jitter, or exactly
`Retry-After` (capped at `backoff_max_s`) when the server says how long to
wait. After a timeout the wait is not jittered: it is the full backoff
ceiling `min(backoff_max_s, max(timeout_s, backoff_base_s * 2**attempt))`,
because a server that computes one request at a time (llama.cpp with one
slot) is most likely still computing the abandoned request, and sending the
same prompt again at once would only queue it behind its own twin.

Other 4xx fail at once, because asking again cannot fix a bad key or a bad
request. Some failures mean no later call can succeed either, and are
marked `fatal` so that a run stops at once: 401, 403, 404, a 400 whose
body names the model, and a 200 whose body is not JSON (the URL points at
something that is not a chat-completions server). The one exception that
passes through is a ledgermem error raised on purpose inside the transport
(the network guard of a replay): that is a refusal to call, not a failed
call.
"""

from __future__ import annotations

import email.utils
import json
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ledgermem.ledger.errors import LedgermemError
from ledgermem.memory.backends import Completion, Message
from ledgermem.memory.ratelimit import RateLimiter
from ledgermem.projections.tokens import count_tokens

if TYPE_CHECKING:  # loaded by the first backend made: a run on the heuristic backend never pays for it (about 7 MiB)
    import requests

#: Statuses worth asking again: rate limits and server-side trouble.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Statuses after which no call of the run can succeed: a bad key, no permission, a wrong URL or model.
FATAL_STATUSES = frozenset({401, 403, 404})
_NAMES_MODEL = re.compile(r"\bmodel", re.IGNORECASE)
SNIPPET_CHARS = 200
LOG_LIMIT = 1000  # the debugging log keeps the newest entries only, so a long run cannot grow it without bound
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """What one kind of server needs: where it listens, its key variable, its model."""

    name: str
    base_url: str | None  # None: the user must give one
    key_env: str | None  # the provider's own variable for the key, read after ours
    default_model: str | None  # None: the user must name the model
    requires_key: bool

    @property
    def requires_model(self) -> bool:
        return self.default_model is None


PRESETS: Mapping[str, Preset] = {
    p.name: p
    for p in (
        Preset(name="openai", base_url="https://api.openai.com/v1", key_env="OPENAI_API_KEY",
               default_model="gpt-4o-mini", requires_key=True),
        Preset(name="deepseek", base_url="https://api.deepseek.com/v1", key_env="DEEPSEEK_API_KEY",
               default_model="deepseek-chat", requires_key=True),
        Preset(name="vllm", base_url="http://127.0.0.1:8000/v1", key_env=None, default_model=None,
               requires_key=False),
        Preset(name="llamacpp", base_url="http://127.0.0.1:8080/v1", key_env=None, default_model="local",
               requires_key=False),
        Preset(name="ollama", base_url="http://127.0.0.1:11434/v1", key_env=None, default_model=None,
               requires_key=False),
        Preset(name="http", base_url=None, key_env=None, default_model=None, requires_key=False),
    )
}


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class HttpSettings:
    """Everything one backend needs. The key is never shown: see `redacted()`."""

    preset: str
    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    temperature: float = 0.0
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()

    def redacted(self) -> dict[str, object]:
        """The settings as a plain dict, safe to print or store: the key is only "set" or "unset"."""
        out: dict[str, object] = asdict(self)
        out["api_key"] = "set" if self.api_key else "unset"
        out["base_url"] = safe_url(self.base_url)
        out["stop"] = list(self.stop)
        return out

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.redacted().items())
        return f"HttpSettings({fields})"


def safe_url(url: str) -> str:
    """`url` without user info, query or fragment: the parts that may carry credentials."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return url.split("?", 1)[0].split("#", 1)[0]
    if ":" in host:  # an IPv6 literal goes back in brackets
        host = f"[{host}]"
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date); None if absent or bad."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # HTTP dates are GMT; a naive result means the zone was left out
            return None
        seconds = when.timestamp() - now
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def _one_line(text: str, limit: int = SNIPPET_CHARS) -> str:
    return " ".join(text.split())[:limit]


@dataclass(frozen=True, slots=True)
class _Attempt:
    """How one attempt ended: a success, a retryable failure, or a final one."""

    reason: str  # short, for the list of reasons ("503", "timeout after 0.2s")
    status: int | None = None
    body: str = ""
    retryable: bool = True
    fatal: bool = False  # no later call can succeed either: the run should stop
    timed_out: bool = False
    retry_after: float | None = None
    data: Mapping[str, Any] | None = None  # the parsed body of a usable 200
    text: str | None = None


class OpenAICompatibleBackend:
    """A `Backend` that calls an OpenAI-compatible `/chat/completions` endpoint."""

    def __init__(
        self,
        settings: HttpSettings,
        *,
        tokenizer: str,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        limiter: RateLimiter | None = None,
    ) -> None:
        self.settings = settings
        self.name = settings.preset
        self.model = settings.model
        self.tokenizer = tokenizer
        self.last_model: str | None = None  # the model name the server says it served, if it says
        self.log: list[str] = []
        self._owns_session = session is None
        if session is None:
            import requests

            session = requests.Session()
        self._session = session
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()
        self._url = settings.base_url.rstrip("/") + "/chat/completions"
        self.limiter = limiter  # shared with every backend (and thread) that calls the same endpoint

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection pool if this backend opened it."""
        if self._owns_session:
            self._session.close()

    def __enter__(self) -> OpenAICompatibleBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> dict[str, object]:
        """The settings for run metadata, with the key redacted."""
        return self.settings.redacted()

    # -- the call --------------------------------------------------------------------

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        s = self.settings
        body: dict[str, object] = {"model": s.model, "messages": list(messages), "temperature": s.temperature}
        if s.max_tokens is not None:
            body["max_tokens"] = s.max_tokens
        if s.stop:
            body["stop"] = list(s.stop)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if s.api_key:
            headers["Authorization"] = f"Bearer {s.api_key}"
        attempts = max(0, s.max_retries) + 1
        reasons: list[str] = []
        tried: list[dict[str, Any]] = []
        last = _Attempt(reason="not attempted", retryable=False)
        tokens = self._prompt_tokens(messages)
        for attempt in range(attempts):
            if self.limiter is not None:
                self.limiter.acquire(tokens)
            started = time.perf_counter()
            last = self._attempt(body, headers)
            ms = round((time.perf_counter() - started) * 1000, 3)
            ok = last.data is not None and last.text is not None
            tried.append({"status": last.status, "error": None if ok else self._scrub(last.reason), "latency_ms": ms})
            if ok:
                assert last.data is not None and last.text is not None
                self._record(f"{purpose}: attempt {attempt + 1}/{attempts}: ok")
                return self._success(messages, last.data, last.text, retries=attempt, attempts=tuple(tried))
            reasons.append(last.reason)
            if not last.retryable or attempt == attempts - 1:
                self._record(f"{purpose}: attempt {attempt + 1}/{attempts}: {last.reason}; giving up")
                break
            delay = self._delay(attempt, last.retry_after, timed_out=last.timed_out)
            tried[-1]["wait_s"] = round(delay, 3)
            self._record(f"{purpose}: attempt {attempt + 1}/{attempts}: {last.reason}; retry in {delay:.3f}s")
            if self.limiter is not None and last.status == 429:
                self.limiter.pause(delay)  # the account is over its limit: every caller waits, not only this one
            else:
                self._sleep(delay)
        return Completion(text="", usage={}, retries=len(reasons) - 1, error=self._error(last, reasons),
                          attempts=tuple(tried), fatal=last.fatal)

    def _prompt_tokens(self, messages: Sequence[Message]) -> int:
        if self.limiter is None or self.limiter.tpm is None:
            return 0
        return count_tokens("\n".join(str(m.get("content", "")) for m in messages), self.tokenizer)

    def _attempt(self, body: Mapping[str, object], headers: Mapping[str, str]) -> _Attempt:
        import requests  # in sys.modules after the first call: a lookup

        s = self.settings
        try:
            resp = self._session.post(self._url, json=body, headers=dict(headers), timeout=s.timeout_s)
        except requests.RequestException as exc:
            return self._failed_request(exc)
        status, text = resp.status_code, resp.text
        if status in RETRY_STATUSES:
            return _Attempt(reason=str(status), status=status, body=text,
                            retry_after=parse_retry_after(resp.headers.get("Retry-After"), now=time.time()))
        if not 200 <= status < 300:
            fatal = status in FATAL_STATUSES or (status == 400 and bool(_NAMES_MODEL.search(_server_message(text))))
            return _Attempt(reason=str(status), status=status, body=text, retryable=False, fatal=fatal)
        try:
            data = json.loads(text)
        except ValueError:
            # Not a chat-completions server (a web page, a proxy's error page): no retry can change that.
            return _Attempt(reason=f"{status} invalid JSON", status=status, body=text, retryable=False, fatal=True)
        content = _content(data)
        if content is None:
            return _Attempt(reason=f"{status} no choices[0].message.content", status=status, body=text)
        return _Attempt(reason="ok", status=status, body=text, data=data, text=content)

    def _failed_request(self, exc: requests.RequestException) -> _Attempt:
        import requests

        own = _own_error(exc)
        if own is not None:  # ledgermem refused the connection on purpose (a replay's network guard): not a failure
            raise own
        timeout = self.settings.timeout_s
        if isinstance(exc, requests.Timeout) or (isinstance(exc, requests.ConnectionError) and "timed out" in str(exc)):
            # a read timeout while the body streams arrives as a ConnectionError
            return _Attempt(reason=f"timeout after {timeout:g}s", timed_out=True)
        if isinstance(exc, requests.ConnectionError):
            found = _ERRNO.search(str(exc))
            return _Attempt(reason=f"connection error ({found.group(1).strip() if found else type(exc).__name__})")
        # A bad URL and the like: asking again cannot help.
        return _Attempt(reason=f"request error ({type(exc).__name__}: {_one_line(str(exc), 120)})", retryable=False)

    def _delay(self, attempt: int, retry_after: float | None, *, timed_out: bool = False) -> float:
        s = self.settings
        if retry_after is not None:
            return min(s.backoff_max_s, retry_after)
        ceiling = min(s.backoff_max_s, s.backoff_base_s * 2**attempt)
        if timed_out:  # the server may still be computing the abandoned request: give it time, no jitter
            return min(s.backoff_max_s, max(s.timeout_s, ceiling))
        return self._rng.uniform(0.0, ceiling)

    def _success(self, messages: Sequence[Message], data: Mapping[str, Any], text: str, *, retries: int,
                 attempts: tuple[dict[str, Any], ...]) -> Completion:
        served = data.get("model")
        self.last_model = served if isinstance(served, str) else None
        return Completion(text=text, usage=self._usage(messages, data.get("usage"), text), retries=retries,
                          attempts=attempts)

    def _usage(self, messages: Sequence[Message], reported: object, text: str) -> dict[str, int]:
        if isinstance(reported, Mapping):
            counts = {k: reported.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
            usage = {k: v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)}
            if "prompt_tokens" in usage and "completion_tokens" in usage:
                return usage
        # The server did not say: count as the offline backends do, and mark the numbers as ours.
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        return {
            "prompt_tokens": count_tokens(prompt, self.tokenizer),
            "completion_tokens": count_tokens(text, self.tokenizer),
            "estimated": 1,
        }

    def _error(self, last: _Attempt, reasons: Sequence[str]) -> str:
        what = "not retryable" if not last.retryable else "retries exhausted"
        status = last.status if last.status is not None else "none"
        n = len(reasons)
        said = _server_message(last.body)
        message = (
            f"{self.name} chat completion failed ({what}): status {status}; POST {safe_url(self._url)}; "
            f"model {self.settings.model!r}; {n} attempt{'s' if n != 1 else ''}: {', '.join(reasons)}"
            + (f"; server says: {said!r}" if said else "")
        )
        return self._scrub(message)

    def _record(self, entry: str) -> None:
        self.log.append(self._scrub(entry))
        if len(self.log) > LOG_LIMIT:
            del self.log[:-LOG_LIMIT]

    def _scrub(self, text: str) -> str:
        # A server may echo what it was sent; the key must not reach the ledger through an error.
        # A short key (a dummy such as "x" for a local server) is replaced only where it stands as a whole
        # token, so that it does not mangle the words around it; a real key is replaced wherever it occurs.
        key = self.settings.api_key
        if not key:
            return text
        if len(key) >= _WHOLE_KEY_LENGTH:
            return text.replace(key, "[redacted]")
        return re.sub(rf"(?<![\w\-.]){re.escape(key)}(?![\w\-.])", "[redacted]", text)


_WHOLE_KEY_LENGTH = 8  # keys at least this long are scrubbed as substrings, shorter ones as whole tokens


def _own_error(exc: BaseException) -> LedgermemError | None:
    """A ledgermem error somewhere inside a transport error (causes, contexts, wrapped reasons), if any."""
    todo: list[object] = [exc]
    seen: set[int] = set()
    while todo:
        e = todo.pop()
        if not isinstance(e, BaseException) or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, LedgermemError):
            return e
        todo += [e.__cause__, e.__context__, getattr(e, "reason", None), *e.args]
    return None


def _server_message(body: str) -> str:
    """The server's own words: `error.message` (OpenAI, vLLM, llama.cpp), `error` or `message`; else the body."""
    try:
        data = json.loads(body)
    except ValueError:
        return _one_line(body)
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return _one_line(error["message"])
        for value in (error, data.get("message"), data.get("detail")):
            if isinstance(value, str):
                return _one_line(value)
    return _one_line(body)


def _content(data: object) -> str | None:
    """`choices[0].message.content` if it is text, else None."""
    if not isinstance(data, dict):
        return None
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    return content if isinstance(content, str) else None
