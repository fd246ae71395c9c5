"""Multimodal blocks: an image (or any typed content) a turn carries beside its text.

A block is its MIME type, its bytes, where it came from (`source`: a URL or
a file name) and a caption. The bytes never go into an event: they are
stored once per key in the ledger's `blobs` table under their SHA-256, and
the event that carries the block holds a reference (`block_ref`) in its
`blocks` field: the hash, the type, the size, the source and the caption. The hash chain covers the event,
so it covers the bytes by their hash, and `Ledger.verify` checks every
readable blob against it.

A block may have no bytes (a dataset names an image by URL only): its
reference then has `sha256` and `size` null and keeps the source, so the
block is still a block, not text.

In a ledger holding personal data the caption and source are sealed with
the turn's other values and the bytes are encrypted under the same key;
erasing the turn shreds that key, and the bytes become unreadable with the
text. The hash, type and size stay readable: they address the bytes and let
the chain vouch for them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Reference keys that are never sealed: they address the bytes, they do not describe the person.
PUBLIC_KEYS = frozenset({"sha256", "mime", "size", "side"})
REF_KEYS = ("sha256", "mime", "size", "source", "caption", "side")
SIDES = ("user", "agent")
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """One block as a dataset gives it; `data` is None when only its source is known."""

    mime: str
    source: str | None = None
    caption: str = ""
    data: bytes | None = None
    #: Whose utterance the block belongs to: "user" or "agent".
    side: str = "user"

    def __post_init__(self) -> None:
        if not isinstance(self.mime, str) or "/" not in self.mime or any(c.isspace() for c in self.mime):
            raise ValueError(f"block: mime must be a MIME type like image/png, got {self.mime!r}")
        if self.data is not None and not isinstance(self.data, bytes):
            raise ValueError(f"block: data must be bytes, got {type(self.data).__name__}")
        if self.data is None and not (self.source or self.caption):
            raise ValueError("block: a block without bytes needs a source (a URL or file name) or a caption")
        if self.side not in SIDES:
            raise ValueError(f"block: side must be one of {', '.join(SIDES)}, got {self.side!r}")

    @property
    def sha256(self) -> str | None:
        return hashlib.sha256(self.data).hexdigest() if self.data is not None else None

    def ref(self) -> dict[str, Any]:
        """What the event stores: everything but the bytes."""
        return {
            "sha256": self.sha256,
            "mime": self.mime,
            "size": len(self.data) if self.data is not None else None,
            "source": self.source,
            "caption": self.caption,
            "side": self.side,
        }


def block_id(ref: Mapping[str, Any], record_id: str, index: int) -> str:
    """The id tools take: the content hash when there are bytes, else `<record>#<n>` (1-based)."""
    sha = ref.get("sha256")
    return sha if isinstance(sha, str) and sha else f"{record_id}#{index + 1}"


def check_ref(ref: Any, where: str) -> dict[str, Any]:
    """A stored reference, checked: exactly the reference keys, a 64-hex hash with a size, or neither."""
    if not isinstance(ref, Mapping) or set(ref) != set(REF_KEYS):
        raise ValueError(f"{where}: a block reference has exactly the keys {', '.join(REF_KEYS)}")
    sha, size = ref["sha256"], ref["size"]
    if ref["side"] not in SIDES:
        raise ValueError(f"{where}: side must be one of {', '.join(SIDES)}, got {ref['side']!r}")
    if sha is not None and not is_sha256(sha):
        raise ValueError(f"{where}: sha256 must be 64 lower-case hex digits, got {sha!r}")
    if (sha is None) != (size is None) or (size is not None and (not isinstance(size, int) or size < 0)):
        raise ValueError(f"{where}: sha256 and size are given together (size a non-negative integer) or not at all")
    return dict(ref)


#: The event field that holds block references; the ledger finds blocks by it, whatever the event's type.
BLOCKS_FIELD = "blocks"
#: SQL over the `events` table: rows whose payload holds at least one block reference.
HAS_BLOCKS_SQL = "contains(payload, '\"blocks\":[{')"


def referenced_blobs(payload: str) -> set[str]:
    """The sha256 of every block a stored payload references (a block without bytes has none)."""
    refs = json.loads(payload).get(BLOCKS_FIELD, ())
    return {r["sha256"] for r in refs if isinstance(r, dict) and "mime" in r and isinstance(r.get("sha256"), str)}


def is_sha256(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


def caption_text(refs: Sequence[Mapping[str, Any]], side: str = "user") -> str:
    """How the window and the summarizer see one side's blocks: `[image: caption]` per block."""
    out = []
    for ref in refs:
        if ref.get("side", "user") != side:
            continue
        kind = str(ref.get("mime") or "").split("/", 1)[0] or "block"
        caption = str(ref.get("caption") or "")
        out.append(f"[{kind}: {caption}]" if caption else f"[{kind}]")
    return " ".join(out)


def with_captions(text: str, refs: Sequence[Mapping[str, Any]], side: str = "user") -> str:
    """One side's text followed by its blocks' captions (the text alone when it has none)."""
    shown = caption_text(refs, side)
    if not shown:
        return text
    return f"{text} {shown}" if text else shown


def blob_map(blocks: Sequence[Block]) -> dict[str, bytes]:
    """sha256 -> bytes of the blocks that have bytes."""
    return {b.sha256: b.data for b in blocks if b.data is not None and b.sha256 is not None}
