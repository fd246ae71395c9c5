"""Signed checkpoints: the chain's head anchored outside the ledger.

The hash chain proves that no row was changed *unless every hash after it was
recomputed too*: anyone who can write the ledger file can rewrite an event and
re-hash everything after it, or drop the newest events and lower the `streams`
table to match, and the chain verifies again. A checkpoint closes that gap the
way a transparency log's signed tree head or a ledger database's saved digest
does: a small statement, "this ledger had `events` events and the event at
`seq` had hash `head_hash`", signed with an Ed25519 key that is kept outside
the ledger and outside the run folder. A rewrite changes the hash at every
later seq, so it changes the signed head; a truncation removes the signed seq.
Neither can be hidden without the private key.

Checkpoints are JSON lines appended to `<ledger stem>.checkpoints.jsonl`
beside the ledger (and to any other file the caller names, e.g. one on
another machine). What one protects, and what it does not, is in the
docs/security.md: a checkpoint says nothing about events written
after it, and a forger who holds the private key can sign anything.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ledgermem.ledger.errors import CheckpointError
from ledgermem.ledger.schema import canonical_json
from ledgermem.ledger.store import Ledger

FORMAT = "ledgermem-checkpoint/1"
KEY_ENV = "LEDGERMEM_CHECKPOINT_KEY"  # the private key's path
OUT_ENV = "LEDGERMEM_CHECKPOINT_OUT"  # a file every run-end checkpoint is also appended to


def default_key_path(env: Mapping[str, str] | None = None) -> Path:
    """`$LEDGERMEM_CHECKPOINT_KEY`, else `$XDG_CONFIG_HOME/ledgermem/checkpoint.key` (default `~/.config`)."""
    env = os.environ if env is None else env
    if env.get(KEY_ENV):
        return Path(env[KEY_ENV]).expanduser()
    config = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "ledgermem" / "checkpoint.key"


def checkpoint_path(ledger_path: str | os.PathLike[str]) -> Path:
    """Where a ledger file's checkpoints are appended: `<stem>.checkpoints.jsonl` beside it."""
    p = Path(ledger_path)
    return p.with_name(p.stem + ".checkpoints.jsonl")


def public_key_path(key_path: str | os.PathLike[str]) -> Path:
    """The public half written beside a private key: `<key>.pub`, to copy to whoever verifies."""
    return Path(str(key_path) + ".pub")


# --- keys ---------------------------------------------------------------------------------------


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public: Ed25519PublicKey) -> str:
    """A short name of a public key: the first 16 hex digits of the SHA-256 of its raw bytes."""
    return hashlib.sha256(_raw(public)).hexdigest()[:16]


def load_signing_key(path: str | os.PathLike[str], *, create: bool = True) -> Ed25519PrivateKey:
    """The Ed25519 private key at `path`; made (mode 0600, with `<path>.pub` beside it) if absent and `create`."""
    p = Path(path)
    if not p.exists():
        if not create:
            raise CheckpointError(f"{p}: no checkpoint signing key here")
        return _create_key(p)
    mode = p.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise CheckpointError(f"{p}: the checkpoint signing key is accessible to other users "
                              f"(mode {stat.S_IMODE(mode):o}); run chmod 600 on it")
    try:
        key = serialization.load_pem_private_key(p.read_bytes(), password=None)
    except (ValueError, TypeError, OSError) as exc:
        raise CheckpointError(f"{p}: not a readable PEM private key: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise CheckpointError(f"{p}: a {type(key).__name__}, not an Ed25519 private key")
    return key


def _create_key(p: Path) -> Ed25519PrivateKey:
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    try:
        p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never readable by others, not even briefly
    except FileExistsError:
        return load_signing_key(p, create=False)  # another process made it first
    except OSError as exc:
        raise CheckpointError(f"{p}: cannot create the checkpoint signing key: {exc.strerror}") from exc
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
        fh.flush()
        os.fsync(fh.fileno())
    public_key_path(p).write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return key


def load_public_key(path: str | os.PathLike[str]) -> Ed25519PublicKey:
    """A trusted public key from a PEM public key, a PEM private key (its public half) or raw base64."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise CheckpointError(f"{p}: cannot read the public key: {exc.strerror}") from exc
    try:
        if b"PRIVATE KEY" in data:
            return load_signing_key(p, create=False).public_key()
        if b"PUBLIC KEY" in data:
            key = serialization.load_pem_public_key(data)
            if not isinstance(key, Ed25519PublicKey):
                raise CheckpointError(f"{p}: a {type(key).__name__}, not an Ed25519 public key")
            return key
        return Ed25519PublicKey.from_public_bytes(base64.b64decode(data.strip(), validate=True))
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"{p}: not an Ed25519 public key (PEM, or 32 raw bytes in base64): {exc}") from exc


# --- checkpoints ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One signed statement: the ledger had `events` events and the one at `seq` had `head_hash`."""

    seq: int
    head_hash: str
    events: int
    runs: tuple[str, ...]
    time: str  # UTC, ISO 8601
    public_key: str  # base64 of the 32 raw bytes
    signature: str = ""  # base64 Ed25519 signature over `signed_bytes()`

    def body(self) -> dict[str, Any]:
        return {"format": FORMAT, "seq": self.seq, "head_hash": self.head_hash, "events": self.events,
                "runs": list(self.runs), "time": self.time, "public_key": self.public_key}

    def signed_bytes(self) -> bytes:
        return canonical_json(self.body()).encode("utf-8")

    def to_line(self) -> str:
        return canonical_json({**self.body(), "signature": self.signature})

    def signed_by(self, trusted: Ed25519PublicKey) -> bool:
        """Whether the signature holds under `trusted` (the key written in the line is never trusted)."""
        if self.public_key != base64.b64encode(_raw(trusted)).decode("ascii"):
            return False
        try:
            trusted.verify(base64.b64decode(self.signature, validate=True), self.signed_bytes())
        except (InvalidSignature, ValueError):
            return False
        return True


def sign_head(ledger: Ledger, key: Ed25519PrivateKey, *, now: datetime | None = None) -> Checkpoint:
    """A checkpoint of the ledger's head, signed; only a ledger that verifies is signed."""
    report = ledger.verify()
    if not report.ok:
        raise CheckpointError(f"{ledger.path}: will not sign a ledger that does not verify: "
                              f"seq {report.first_broken_seq}: {report.reason}")
    with ledger.conn.cursor() as cur:
        head = cur.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        runs = tuple(r[0] for r in cur.execute("SELECT DISTINCT run_id FROM streams ORDER BY run_id").fetchall())
    if head is None:
        raise CheckpointError(f"{ledger.path}: the ledger holds no events; there is no head to sign")
    when = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).isoformat(timespec="seconds")
    public = base64.b64encode(_raw(key.public_key())).decode("ascii")
    unsigned = Checkpoint(int(head[0]), str(head[1]), report.events, runs, when, public)
    signature = base64.b64encode(key.sign(unsigned.signed_bytes())).decode("ascii")
    return Checkpoint(unsigned.seq, unsigned.head_hash, unsigned.events, runs, when, public, signature)


def append_checkpoint(checkpoint: Checkpoint, files: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Append the checkpoint's line to every file (made if absent), each flushed to disk."""
    written = []
    for f in files:
        p = Path(f)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            with p.open("a", encoding="utf-8") as fh:
                fh.write(checkpoint.to_line() + "\n")
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise CheckpointError(f"{p}: cannot append the checkpoint: {exc.strerror}") from exc
        written.append(p)
    return written


def write_checkpoint(ledger: Ledger, key: Ed25519PrivateKey, *, copies: Sequence[str | os.PathLike[str]] = (),
                     now: datetime | None = None) -> tuple[Checkpoint, list[Path]]:
    """Sign the ledger's head and append it beside the ledger and to every copy."""
    checkpoint = sign_head(ledger, key, now=now)
    return checkpoint, append_checkpoint(checkpoint, [checkpoint_path(ledger.path), *copies])


def read_checkpoints(path: str | os.PathLike[str]) -> list[tuple[int, Checkpoint]]:
    """(line number, checkpoint) for every line of a checkpoint file; a malformed line is an error naming it."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise CheckpointError(f"{p}: no checkpoint file here (`ledgermem checkpoint RUN` writes one)") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{p}: cannot read the checkpoint file: {exc}") from exc
    out = []
    for n, line in enumerate(lines, 1):
        if line.strip():
            out.append((n, _parse(line, f"{p}:{n}")))
    return out


def _parse(line: str, where: str) -> Checkpoint:
    try:
        doc = json.loads(line)
    except ValueError as exc:
        raise CheckpointError(f"{where}: not a JSON line: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CheckpointError(f"{where}: not a {FORMAT} line")
    fields: dict[str, type] = {"seq": int, "head_hash": str, "events": int, "runs": list, "time": str,
                               "public_key": str, "signature": str}
    for name, kind in fields.items():
        if not isinstance(doc.get(name), kind) or isinstance(doc.get(name), bool):
            raise CheckpointError(f"{where}: field {name!r} is missing or not a {kind.__name__}: {doc.get(name)!r}")
    return Checkpoint(doc["seq"], doc["head_hash"], doc["events"], tuple(map(str, doc["runs"])), doc["time"],
                      doc["public_key"], doc["signature"])


# --- verification ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckpointReport:
    """What every checkpoint of a file says about the ledger now."""

    source: str
    key_id: str  # of the trusted public key
    checked: int
    problems: tuple[str, ...]
    newest_seq: int | None  # of the newest checkpoint that holds
    last_seq: int  # the ledger's head now

    @property
    def ok(self) -> bool:
        return self.checked > 0 and not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "key_id": self.key_id, "ok": self.ok, "checked": self.checked,
                "problems": list(self.problems), "newest_seq": self.newest_seq, "last_seq": self.last_seq}


def verify_checkpoints(ledger: Ledger, checkpoints: Sequence[tuple[int, Checkpoint]], trusted: Ed25519PublicKey,
                       source: str) -> CheckpointReport:
    """Check each checkpoint's signature under `trusted`, then that the ledger still has its head.

    A head hash that differs means an event at or before that seq was
    rewritten (the chain may still verify if the hashes after it were
    recomputed); a missing seq means the newest events were removed.
    """
    with ledger.conn.cursor() as cur:
        tail = cur.execute("SELECT max(seq) FROM events").fetchone()
        last = int(tail[0]) if tail and tail[0] is not None else 0
        wanted = sorted({c.seq for _, c in checkpoints})
        stored: dict[int, list[str]] = {}
        for seq, h in cur.execute("SELECT seq, hash FROM events WHERE list_contains(?, seq)", [wanted]).fetchall():
            stored.setdefault(int(seq), []).append(str(h))
    problems: list[str] = []
    held = [c.seq for _, c in checkpoints if c.signed_by(trusted) and stored.get(c.seq) == [c.head_hash]]
    for n, c in checkpoints:
        where = f"{source}:{n}: checkpoint of seq {c.seq} ({c.time})"
        if not c.signed_by(trusted):
            problems.append(f"{where}: the signature does not verify under the trusted key {key_id(trusted)}: "
                            "the line was altered or signed by another key")
        elif c.seq not in stored:
            problems.append(f"{where}: seq {c.seq} is missing, the ledger ends at seq {last}: "
                            f"the events after seq {last} were removed (the checkpoint signed {c.events} events)")
        elif stored[c.seq] != [c.head_hash]:
            after = max((s for s in held if s < c.seq), default=0)
            problems.append(f"{where}: the hash at seq {c.seq} is {stored[c.seq][0][:16]}…, the signed head is "
                            f"{c.head_hash[:16]}…: an event between seq {after + 1} and seq {c.seq} was rewritten "
                            "and the hashes after it recomputed")
    return CheckpointReport(source, key_id(trusted), len(checkpoints), tuple(problems), max(held, default=None), last)


def sign_finished_run(ledger: Ledger, env: Mapping[str, str] | None = None) -> str:
    """The checkpoint written when a run finishes, with the default key; a one-line note of what was done.

    The run is complete whether or not it can be signed, so a key or file
    problem is reported in the note (to be shown to the user), not raised.
    """
    env = os.environ if env is None else env
    try:
        key = load_signing_key(default_key_path(env))
        checkpoint, files = write_checkpoint(ledger, key, copies=[env[OUT_ENV]] if env.get(OUT_ENV) else [])
    except CheckpointError as exc:
        return f"NOT written: {exc}"
    return (f"seq {checkpoint.seq} signed with key {key_id(key.public_key())} "
            f"({', '.join(str(f) for f in files)})")
