"""Per-item encryption keys, kept outside the hash-chained events.

Personal values in events are sealed with AES-GCM under a key named by the
item they belong to (a turn's raw text, the memory derived from a turn, an
index title, an answer). The keys live in their own small DuckDB file
beside the ledger. Erasure destroys keys
(crypto-shredding): the ledger keeps its ciphertext and its hash chain, and
the values become unreadable everywhere at once. Destroying means rewriting
the key file into a new file and deleting the old one, because DuckDB keeps
deleted data in a file until it is rewritten (SPEC §8).

A sealed value is the string `enc1:<key_id>:<base64(nonce || ciphertext)>`,
with the key id as associated data so a value cannot be moved to another key.
Each value names its own key, so one event may seal its fields under
different keys (`FieldKeys`): a probe's gold value under the key of the turn
that stated it, its question under the answer's key.

Keys are made durable before anything is sealed with them, and a commit of
the key file per turn would double what a turn costs. A key id that ends in
a number (`...#turn:17`, `...#raw:17`) is one of a series, and the next `AHEAD` ids of
its series are made in the same transaction, so most turns find their key
already stored. A key made ahead that is never used seals nothing.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ledgermem.ledger.errors import LedgerCorrupt, LedgerLocked

PREFIX = "enc1:"
ERASED = "[erased]"  # a sealed value whose key was shredded
SEALED = "[sealed]"  # a sealed value read without the key store
AHEAD = 64  # ids of a numbered series made with the first one missing (one key-file commit per 64 turns)
_ROWS_PER_INSERT = 256
_SERIES = re.compile(r"^(.*:)(\d+)$")


@dataclass(frozen=True, slots=True)
class FieldKeys:
    """The keys of one event: `default` seals its personal fields, `fields` overrides some of them.

    An override is one key for the whole field, or one key per item of a
    sequence field (a planted fact each under the key of the turn that
    stated it); an item without a key of its own uses `default`.
    """

    default: str
    fields: Mapping[str, str | tuple[str | None, ...]] = field(default_factory=dict)

    def key_ids(self) -> list[str]:
        out = [self.default]
        for choice in self.fields.values():
            out += [choice] if isinstance(choice, str) else [k for k in choice if k is not None]
        return list(dict.fromkeys(out))


#: What one event is sealed under: a key id, a key per field, or nothing (stored in clear).
SealWith = str | FieldKeys | None


def key_path(ledger_path: str | os.PathLike[str]) -> str:
    """Where the keys of a ledger file live: `<stem>.keys.duckdb` beside it."""
    p = Path(ledger_path)
    return str(p.with_name(p.stem + ".keys.duckdb")) if str(ledger_path) != ":memory:" else ":memory:"


def is_sealed(value: object) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def key_id_of(envelope: str) -> str:
    return envelope[len(PREFIX):].rsplit(":", 1)[0]


class KeyStore:
    """Named 256-bit keys; `shred` rewrites the file without them."""

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, read_only: bool = False) -> None:
        self.path, self.read_only = str(path), read_only
        self._keys: dict[str, bytes] = {}
        self._conn: duckdb.DuckDBPyConnection | None = None
        if self.path != ":memory:" and (Path(self.path).exists() or not read_only):
            self._open()

    def _open(self) -> None:
        try:
            self._conn = duckdb.connect(self.path, read_only=self.read_only)
        except duckdb.IOException as exc:
            raise LedgerLocked(f"{self.path}: the key store is open for writing in another process") from exc
        if not self.read_only:
            self._conn.execute("CREATE TABLE IF NOT EXISTS keys (key_id VARCHAR NOT NULL, key BLOB NOT NULL)")
        try:
            self._keys = {k: bytes(v) for k, v in self._conn.execute("SELECT key_id, key FROM keys").fetchall()}
        except duckdb.Error as exc:
            raise LedgerCorrupt(f"{self.path}: not a ledgermem key store") from exc

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __contains__(self, key_id: str) -> bool:
        return key_id in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def ensure(self, key_ids: Iterable[str]) -> None:
        """Create the keys that do not exist yet, durably (one transaction), before anything is sealed with them.

        A missing id of a numbered series (`prefix:N`) brings the next
        `AHEAD - 1` ids of its series that do not exist yet with it.
        """
        missing = [k for k in dict.fromkeys(key_ids) if k not in self._keys]
        if not missing:
            return
        wanted = dict.fromkeys(missing)
        for k in missing:
            series = _SERIES.match(k)
            if series is not None:
                head, n = series.group(1), int(series.group(2))
                wanted.update(dict.fromkeys(f"{head}{i}" for i in range(n + 1, n + AHEAD)))
        new = {k: AESGCM.generate_key(bit_length=256) for k in wanted if k not in self._keys}
        if self.read_only:
            raise LedgerLocked(f"{self.path}: the key store is read-only")
        self._store(new)
        self._keys.update(new)

    def _store(self, new: Mapping[str, bytes]) -> None:
        """Insert keys in one transaction (`executemany` in autocommit would commit every row)."""
        if self._conn is None or not new:
            return
        items = list(new.items())
        self._conn.begin()
        try:
            for start in range(0, len(items), _ROWS_PER_INSERT):
                chunk = items[start:start + _ROWS_PER_INSERT]
                self._conn.execute(f"INSERT INTO keys VALUES {', '.join('(?, ?)' for _ in chunk)}",
                                   [x for k, v in chunk for x in (k, v)])
            self._conn.commit()
        except BaseException:
            self._conn.rollback()
            raise

    def material(self) -> dict[str, bytes]:
        """Every key by id: what a ledger built from this one's events (a merge of shards) needs to read them."""
        return dict(self._keys)

    def adopt(self, keys: Mapping[str, bytes]) -> list[str]:
        """Add keys made by another store, durably; an id this store holds with other material is refused."""
        clash = sorted(k for k, v in keys.items() if k in self._keys and self._keys[k] != bytes(v))
        if clash:
            raise LedgerCorrupt(f"{self.path}: key id(s) {', '.join(clash[:5])} are held here with other material")
        new = {k: bytes(v) for k, v in keys.items() if k not in self._keys}
        if new and self.read_only:
            raise LedgerLocked(f"{self.path}: the key store is read-only")
        self._store(new)
        self._keys.update(new)
        return sorted(new)

    def seal(self, key_id: str, plaintext: str) -> str:
        nonce = os.urandom(12)
        ct = AESGCM(self._keys[key_id]).encrypt(nonce, plaintext.encode("utf-8"), key_id.encode("utf-8"))
        return f"{PREFIX}{key_id}:{base64.b64encode(nonce + ct).decode('ascii')}"

    def open(self, envelope: str) -> str:
        """The plaintext, or ERASED when its key was shredded. Raises ValueError on forged ciphertext."""
        key_id, _, blob = envelope[len(PREFIX):].rpartition(":")
        key = self._keys.get(key_id)
        if key is None:
            return ERASED
        raw = base64.b64decode(blob)
        try:
            return AESGCM(key).decrypt(raw[:12], raw[12:], key_id.encode("utf-8")).decode("utf-8")
        except InvalidTag as exc:
            raise ValueError(f"sealed value under key {key_id!r} does not authenticate") from exc

    def seal_bytes(self, key_id: str, data: bytes, aad: str) -> bytes:
        """`data` encrypted under `key_id` (nonce || ciphertext); `aad` binds it to where it is stored."""
        nonce = os.urandom(12)
        return nonce + AESGCM(self._keys[key_id]).encrypt(nonce, data, f"{key_id}\n{aad}".encode("utf-8"))

    def open_bytes(self, key_id: str, sealed: bytes, aad: str) -> bytes | None:
        """The plaintext bytes, or None when the key was shredded. Raises ValueError on forged ciphertext."""
        key = self._keys.get(key_id)
        if key is None:
            return None
        try:
            return AESGCM(key).decrypt(sealed[:12], sealed[12:], f"{key_id}\n{aad}".encode("utf-8"))
        except InvalidTag as exc:
            raise ValueError(f"sealed bytes under key {key_id!r} do not authenticate") from exc

    def shred(self, key_ids: Iterable[str]) -> list[str]:
        """Destroy keys. The file is written anew without them and the old file deleted."""
        gone = [k for k in dict.fromkeys(key_ids) if k in self._keys]
        for k in gone:
            del self._keys[k]
        if self._conn is not None and gone:
            self._rewrite()
        return gone

    def _rewrite(self) -> None:
        assert self._conn is not None
        self._conn.close()
        fresh = self.path + ".rewriting"
        for leftover in (fresh, fresh + ".wal"):
            Path(leftover).unlink(missing_ok=True)
        with duckdb.connect(fresh) as conn:
            conn.execute("CREATE TABLE keys (key_id VARCHAR NOT NULL, key BLOB NOT NULL)")
            if self._keys:
                conn.executemany("INSERT INTO keys VALUES (?, ?)", [[k, v] for k, v in self._keys.items()])
            conn.execute("CHECKPOINT")
        Path(self.path + ".wal").unlink(missing_ok=True)
        os.replace(fresh, self.path)
        self._open()
