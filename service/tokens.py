"""Scoped tokens of the live memory service: who may read, write or erase which namespace.

A token is scoped to a namespace prefix (`acme`, or `acme/user-42`) and a
set of scopes (`read`, `write`, `erase`); it allows an operation on a
stream address (`acme/user-42/session-7`) when its namespace's segments are
the address's first segments and it holds the operation's scope. `acme`
covers `acme/user-42/...` but not `acme-corp/...`: prefixes are compared by
segment, never by characters. A token may hold further grants, each a
namespace with its own scopes (`acme/shared` read only, say): that is how
several agents share a stream that each of them may read and only one writes.

The secret is shown once, when the token is created (`ledgermem token
create`), as `lmt_<id>_<secret>`. The token file (`tokens.json` in the live
folder, mode 0600) holds only the id, a random salt per token and
sha256(salt + secret); a request's secret is hashed the same way and compared
with `hmac.compare_digest`, and an unknown id costs the same hashing, so
neither the file nor the timing of a refusal gives a secret away. The file
is re-read when it changes, so a token created or revoked while the server
runs counts at its next request.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ledgermem.memory.names import RUN_ID, RUN_ID_RULE
from ledgermem.service.errors import BadRequest, Forbidden, Unauthorized

SCOPES = ("read", "write", "erase")
TOKEN_FILE = "tokens.json"
MAX_SEGMENTS = 8
_SECRET = re.compile(r"lmt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
_DUMMY_SALT = bytes(16)


def split_address(address: object, *, parameter: str = "stream", least: int = 2) -> tuple[str, ...]:
    """The segments of a namespace or stream address, each a name like a run id; else BadRequest naming it."""
    if not isinstance(address, str):
        raise BadRequest(f"parameter {parameter!r} must be a string like 'acme/user-42/session-7', got "
                         f"{address!r}", parameter)
    segments = tuple(address.split("/"))
    if not least <= len(segments) <= MAX_SEGMENTS:
        raise BadRequest(f"parameter {parameter!r}: {address!r} has {len(segments)} segment(s); give "
                         f"{least} to {MAX_SEGMENTS} separated by '/' (namespace/.../stream)", parameter)
    for segment in segments:
        if not RUN_ID.fullmatch(segment):
            raise BadRequest(f"parameter {parameter!r}: segment {segment!r} of {address!r} is not a name: use "
                             f"{RUN_ID_RULE}", parameter)
    return segments


def parse_scopes(text: str | Iterable[str]) -> frozenset[str]:
    items = [s.strip() for s in (text.split(",") if isinstance(text, str) else text) if s.strip()]
    unknown = sorted(set(items) - set(SCOPES))
    if unknown or not items:
        raise BadRequest(f"scopes {', '.join(map(repr, unknown)) or '(none)'}: give one or more of "
                         f"{', '.join(SCOPES)} separated by commas", "scope")
    return frozenset(items)


def _digest(salt: bytes, secret: str) -> bytes:
    return hashlib.sha256(salt + secret.encode("ascii")).digest()


@dataclasses.dataclass(frozen=True, slots=True)
class Token:
    """A token as the service knows it: never its secret."""

    token_id: str
    namespace: str
    scopes: frozenset[str]
    created_at: str
    note: str = ""
    revoked: bool = False
    #: Further (namespace, scopes) grants, e.g. a shared stream's namespace with read only.
    shared: tuple[tuple[str, frozenset[str]], ...] = ()
    #: When the token stops authenticating (ISO 8601, UTC); None: until revoked.
    expires_at: str | None = None

    @property
    def grants(self) -> tuple[tuple[str, frozenset[str]], ...]:
        return ((self.namespace, self.scopes), *self.shared)

    def _covering(self, address: tuple[str, ...]) -> list[frozenset[str]]:
        found = []
        for namespace, scopes in self.grants:
            own = tuple(namespace.split("/"))
            if address[: len(own)] == own:
                found.append(scopes)
        return found

    def covers(self, address: tuple[str, ...]) -> bool:
        return bool(self._covering(address))

    def check(self, address: tuple[str, ...], scope: str) -> None:
        """Nothing when one of this token's grants covers `address` with `scope`; else Forbidden naming both."""
        shown, covering = "/".join(address), self._covering(address)
        if not covering:
            names = ", ".join(repr(n) for n, _ in self.grants)
            raise Forbidden(f"token {self.token_id} is scoped to namespace {names}; {shown!r} is outside it", "stream")
        if not any(scope in scopes for scopes in covering):
            held = ", ".join(sorted(set().union(*covering)))
            raise Forbidden(f"token {self.token_id} has scope(s) {held} on {shown!r}; this needs {scope!r}", "stream")

    def public(self) -> dict[str, Any]:
        return {"token_id": self.token_id, "namespace": self.namespace, "scopes": sorted(self.scopes),
                "shared": [{"namespace": n, "scopes": sorted(sc)} for n, sc in self.shared],
                "created_at": self.created_at, "expires_at": self.expires_at, "note": self.note,
                "revoked": self.revoked}


class TokenStore:
    """The token file of a live folder: create, list, revoke, and authenticate a presented secret."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / TOKEN_FILE
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None
        self._records: dict[str, dict[str, Any]] = {}

    def _load(self) -> dict[str, dict[str, Any]]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._seen, self._records = None, {}
            return self._records
        mark = (stat.st_mtime_ns, stat.st_size)
        if mark != self._seen:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                records = {r["token_id"]: r for r in data["tokens"]}
            except (ValueError, KeyError, TypeError) as exc:
                raise BadRequest(f"{self.path}: not a token file ({type(exc).__name__}: {exc}); restore it or "
                                 "move it away and create tokens again") from None
            self._seen, self._records = mark, records
        return self._records

    def _save(self, records: dict[str, dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{TOKEN_FILE}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"format": 1, "tokens": list(records.values())}, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._seen = None

    def create(self, namespace: str, scopes: str | Iterable[str], *, note: str = "",
               shared: Iterable[tuple[str, str | Iterable[str]]] = (),
               now: datetime | None = None, expires_in: int | None = None) -> tuple[Token, str]:
        """A new token and its secret (shown once; only its salted hash is stored); `shared` adds grants;
        `expires_in` seconds after `now` it no longer authenticates."""
        split_address(namespace, parameter="namespace", least=1)
        if expires_in is not None and expires_in <= 0:
            raise BadRequest(f"expires_in must be a positive number of seconds, got {expires_in!r}", "expires_in")
        chosen = parse_scopes(scopes)
        extra = []
        for other, other_scopes in shared:
            split_address(other, parameter="namespace", least=1)
            extra.append({"namespace": other, "scopes": sorted(parse_scopes(other_scopes))})
        token_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        moment = now or datetime.now(timezone.utc)
        created = moment.isoformat(timespec="seconds")
        expires = None if expires_in is None else (moment + timedelta(seconds=expires_in)).isoformat(timespec="seconds")
        record = {"token_id": token_id, "namespace": namespace, "scopes": sorted(chosen), "created_at": created,
                  "expires_at": expires, "note": note, "revoked": False, "shared": extra, "salt": salt.hex(), "sha256": _digest(salt, secret).hex()}
        with self._lock:
            records = dict(self._load())
            records[token_id] = record
            self._save(records)
        return self._token(record), f"lmt_{token_id}_{secret}"

    def revoke(self, token_id: str) -> Token:
        with self._lock:
            records = dict(self._load())
            if token_id not in records:
                raise BadRequest(f"no token {token_id!r} in {self.path}; `ledgermem token list` shows them", "token")
            records[token_id] = {**records[token_id], "revoked": True}
            self._save(records)
            return self._token(records[token_id])

    def tokens(self) -> list[Token]:
        with self._lock:
            return [self._token(r) for r in self._load().values()]

    def authenticate(self, presented: str | None, *, now: datetime | None = None) -> Token:
        """The token whose secret this is; Unauthorized when there is none, it is malformed, wrong, revoked or
        expired (at `now`, the clock by default)."""
        m = _SECRET.fullmatch(presented or "")
        with self._lock:
            record = self._load().get(m.group(1)) if m else None
        salt = bytes.fromhex(record["salt"]) if record else _DUMMY_SALT
        given = _digest(salt, m.group(2) if m else "-")  # the same work whether the id is known or not
        stored = bytes.fromhex(record["sha256"]) if record else bytes(32)
        if record is None or not hmac.compare_digest(given, stored):
            raise Unauthorized("a valid bearer token is required: send 'Authorization: Bearer lmt_...' "
                               "(ledgermem token create)")
        return self.current(record["token_id"], now=now)

    def current(self, token_id: str, *, now: datetime | None = None) -> Token:
        """The token as the file says now; Unauthorized once it is revoked, expired or gone (a session that
        authenticated once asks this before every call)."""
        with self._lock:
            record = self._load().get(token_id)
        if record is None:
            raise Unauthorized(f"token {token_id} is no longer in the token file")
        if record["revoked"]:
            raise Unauthorized(f"token {token_id} was revoked")
        expires = record.get("expires_at")
        if expires is not None and (now or datetime.now(timezone.utc)) >= datetime.fromisoformat(expires):
            raise Unauthorized(f"token {token_id} expired at {expires}; create a new one (ledgermem token create)")
        return self._token(record)

    @staticmethod
    def _token(record: dict[str, Any]) -> Token:
        return Token(token_id=record["token_id"], namespace=record["namespace"], scopes=frozenset(record["scopes"]),
                     created_at=record["created_at"], note=record.get("note", ""), revoked=bool(record["revoked"]),
                     shared=tuple((g["namespace"], frozenset(g["scopes"])) for g in record.get("shared", ())),
                     expires_at=record.get("expires_at"))


__all__ = ["MAX_SEGMENTS", "SCOPES", "TOKEN_FILE", "Token", "TokenStore", "parse_scopes", "split_address"]
