"""The vocabulary of the audit service: questions, their parameters, and the errors they answer with.

A `Question` names one thing the service can be asked (an MCP tool, an
OpenAPI operation), its HTTP route and its `Param`s; `validate` turns the
arguments a transport received (strings from a query, JSON values from a
body or an MCP call) into typed values, or a `BadRequest` that names the
parameter, the value and what was expected. `jsonable` and `error_body` are
what both transports send, so an answer and an error read the same over
HTTP and MCP.

The errors themselves live in `evaluation.errors` and carry no HTTP status;
`STATUS` below is the one place that maps them to one, by the error's class
or its nearest listed base:

    BadRequest 400 (MethodNotAllowed 405)   a parameter missing, malformed or out of range; names it
    Unauthorized 401, Forbidden 403         no valid token; a token whose namespace or scope does not cover it
    NotFound 404, RunNotFound 404           no such run, episode, slot, probe, question or route
    Conflict 409, RunBusy 409               a fact intake that does not fit; a run its writer holds
    Unavailable 503, Closing 503, SnapshotFailed 503
    TimedOut 504                            a request past its time limit
    ServiceError 500, CatalogError 500      (AuditFailed: the audit after a fact intake found a violation)

Any other error of the library answers 400 when it is also a ValueError (a
question asked wrongly), else 500, with its one-line message.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from ledgermem.memory.errors import RunNotFound
from ledgermem.service.errors import (
    AuditFailed, BadRequest, CatalogError, Closing, Conflict, Forbidden, MethodNotAllowed, NotFound, RunBusy, ServiceError,
    SnapshotFailed, TimedOut, Unauthorized, Unavailable,
)
from ledgermem.ledger.errors import LedgermemError

MAX_LIMIT = 1000
DEFAULT_LIMIT = 100


# -- parameters ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Param:
    name: str
    type: str = "string"  # string | integer | number | boolean
    where: str = "query"  # path | query | body
    required: bool = False
    description: str = ""
    minimum: float | None = None
    maximum: float | None = None
    default: Any = None
    max_length: int = 2000

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        for key, value in (("minimum", self.minimum), ("maximum", self.maximum), ("default", self.default)):
            if value is not None:
                out[key] = value
        if self.type == "string":
            out["maxLength"] = self.max_length
            if self.required:
                out["minLength"] = 1
        return out

    def convert(self, raw: Any) -> Any:
        """The value as its type, or BadRequest naming the parameter, the value and what was expected."""
        if self.type == "string":
            if not isinstance(raw, str):
                raise BadRequest(f"parameter {self.name!r} must be a string, got {raw!r}", self.name)
            if not raw.strip() and self.required:
                raise BadRequest(f"parameter {self.name!r} must not be empty", self.name)
            if len(raw) > self.max_length or any(ord(c) < 32 and c not in "\t\n" for c in raw):
                raise BadRequest(f"parameter {self.name!r}: at most {self.max_length} characters and no control "
                                 f"characters ({len(raw)} given)", self.name)
            return raw
        if self.type == "boolean":
            if isinstance(raw, bool):
                return raw
            if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
                return raw.strip().lower() == "true"
            raise BadRequest(f"parameter {self.name!r} must be true or false, got {raw!r}", self.name)
        value: int | float
        if self.type == "integer":
            if isinstance(raw, int) and not isinstance(raw, bool):
                value = raw
            elif isinstance(raw, str) and re.fullmatch(r"-?\d{1,18}", raw.strip()):
                value = int(raw)
            else:
                raise BadRequest(f"parameter {self.name!r} must be an integer, got {raw!r}", self.name)
        else:
            try:
                value = float(raw) if isinstance(raw, (int, float, str)) and not isinstance(raw, bool) else math.nan
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise BadRequest(f"parameter {self.name!r} must be a number, got {raw!r}", self.name)
        if self.minimum is not None and value < self.minimum or self.maximum is not None and value > self.maximum:
            bounds = f"between {self.minimum:g} and {self.maximum:g}" if self.maximum is not None else \
                f"at least {self.minimum:g}"
            raise BadRequest(f"parameter {self.name!r} must be {bounds}, got {value!r}", self.name)
        return value


Arguments = dict[str, Any]
Answer = Callable[[Any, Arguments], Any]  # (the Service, the validated arguments)


@dataclasses.dataclass(frozen=True, slots=True)
class Question:
    name: str
    method: str
    path: str
    summary: str
    params: tuple[Param, ...]
    answer: Answer
    mcp: bool = True  # also a tool of the MCP server (the one write is HTTP only)
    scope: str = "read"  # what a token of the live memory service needs for it: read | write | erase

    def input_schema(self) -> dict[str, Any]:
        """Every parameter (path, query and body alike) as one JSON Schema object: MCP and OpenAI tools use it."""
        properties = {p.name: {**p.schema(), "description": p.description} for p in self.params}
        return {"type": "object", "properties": properties,
                "required": [p.name for p in self.params if p.required], "additionalProperties": False}

    def validate(self, arguments: Mapping[str, Any]) -> Arguments:
        known = {p.name for p in self.params}
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise BadRequest(f"{self.name}: unknown parameter(s) {', '.join(map(repr, unknown))}; "
                             f"known: {', '.join(sorted(known)) or 'none'}", unknown[0])
        out: Arguments = {}
        for p in self.params:
            if arguments.get(p.name) is None:
                if p.required:
                    raise BadRequest(f"{self.name}: parameter {p.name!r} is required ({p.description})", p.name)
                out[p.name] = p.default
            else:
                out[p.name] = p.convert(arguments[p.name])
        return out


RUN = Param("run", where="path", required=True, description="run id, as listed by list_runs")
EPISODE = Param("episode", where="path", required=True, description="episode id, as listed by list_episodes")
SYSTEM = Param("system", default="three_layer", description="memory system of the episode's stream")
LIMIT = Param("limit", "integer", minimum=1, maximum=MAX_LIMIT, default=DEFAULT_LIMIT,
              description="page size of a list")
OFFSET = Param("offset", "integer", minimum=0, default=0, description="first item of the page")
SEQ = Param("seq", "integer", minimum=0, description="as of this seq (system time: the order of recording)")
TURN = Param("turn", "integer", minimum=0, description="as of this dialogue turn (event time)")
AT = Param("at", max_length=64, description="as of this wall-clock time, ISO 8601 with a timezone "
           "(2026-11-01T09:00Z), read from each event's recorded time")
SLOT = Param("slot", required=True, description="slot name, e.g. 'office floor'")
PAGE = (LIMIT, OFFSET)
EP = (RUN, EPISODE, SYSTEM)


# -- what the transports send ------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """Plain JSON data: what both transports serialise."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [jsonable(v) for v in items]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or infinity
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


#: The HTTP status of an error, looked up along its class's MRO: the only place errors meet HTTP.
STATUS: dict[type[BaseException], int] = {
    MethodNotAllowed: 405, BadRequest: 400, Unauthorized: 401, Forbidden: 403, NotFound: 404, Conflict: 409, Unavailable: 503, AuditFailed: 500,
    ServiceError: 500,
    RunNotFound: 404, RunBusy: 409, TimedOut: 504, Closing: 503, SnapshotFailed: 503, CatalogError: 500,
}


def status_of(exc: BaseException) -> int | None:
    """The status `STATUS` gives the error's class or its nearest base listed there; None if none is."""
    return next((STATUS[klass] for klass in type(exc).__mro__ if klass in STATUS), None)


def error_body(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON body of an error, for both transports."""
    status = status_of(exc)
    if status is not None:
        body: dict[str, Any] = {"error": str(exc), "status": status}
        if isinstance(exc, ServiceError) and exc.parameter:
            body["parameter"] = exc.parameter
        if isinstance(exc, ServiceError) and exc.detail is not None:
            body["detail"] = jsonable(exc.detail)
        return status, body
    if isinstance(exc, ValueError) and isinstance(exc, LedgermemError):  # e.g. a temporal question asked wrongly
        return 400, {"error": str(exc), "status": 400}
    if isinstance(exc, LedgermemError):
        return 500, {"error": str(exc), "status": 500}
    return 500, {"error": f"internal error: {type(exc).__name__}: {exc}", "status": 500}
