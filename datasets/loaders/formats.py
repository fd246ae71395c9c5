"""Which format a dataset file is in, judged by its structure alone, and the loader for it.

The file name plays no part: a LoCoMo sample is an object with a
``conversation`` object (or ``qa`` beside LoCoMo's own sample keys), a
LongMemEval question has ``haystack_*`` fields, a seed episode has
``dialogues``, and a MEME episode has a dialogue, facts or probes under one
of the aliases in ``meme.ALIASES``.  In a list, each record votes; a list
mixing seed and MEME records is MEME (its loader reads the seed names too).
A document that matches nothing is ``unknown`` and goes to the seed loader,
whose messages say what a seed file would need.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ledgermem.datasets.loaders import locomo, longmemeval, meme, seed
from ledgermem.datasets.loaders.common import Loaded, LoadOptions, kind_of

__all__ = ["FORMATS", "Detection", "detect", "load_document"]

FORMATS = ("seed", "locomo-list", "locomo-single", "longmemeval", "meme")

# Ties go to the earlier format.
_ORDER = ("locomo", "longmemeval", "meme", "seed")
_RECORD_LABELS = {
    "locomo": ("LoCoMo sample", "LoCoMo samples"),
    "longmemeval": ("LongMemEval question", "LongMemEval questions"),
    "meme": ("MEME episode", "MEME episodes"),
    "seed": ("seed episode", "seed episodes"),
}
_MEME_ONLY = tuple(a for role in ("dialogues", "facts", "probes") for a in meme.ALIASES[role][1:])


@dataclass(frozen=True, slots=True)
class Detection:
    """What a document was recognised as (one of ``FORMATS``, or ``unknown``) and why."""

    kind: str
    reason: str


def _record_kind(record: Mapping[str, Any]) -> str | None:
    # A MEME episode may use `sample_id` and `qa` too, so LoCoMo's weaker sign (qa beside
    # its own sample keys, as in a sample that lost its conversation) is tried after MEME.
    if isinstance(record.get("conversation"), dict):
        return "locomo"
    if longmemeval.looks_like_question(record):
        return "longmemeval"
    if meme.looks_like_record(record):
        return "meme"
    if locomo.looks_like_sample(record):
        return "locomo"
    if "dialogues" in record:
        return "seed"
    return None


def _aliases(records: Iterable[object]) -> str:
    used = sorted({key for r in records if isinstance(r, dict) for key in r if key in _MEME_ONLY})
    return f" using {', '.join(used)}" if used else ""


def _counted(count: int, kind: str) -> str:
    one, many = _RECORD_LABELS[kind]
    return f"{count} {one if count == 1 else many}"


def _vote(records: list[object]) -> tuple[str | None, str]:
    """The format most records are in, and a description such as "2 LoCoMo samples"."""
    votes = Counter(k for r in records if isinstance(r, dict) and (k := _record_kind(r)) is not None)
    if "meme" in votes:
        votes["meme"] += votes.pop("seed", 0)
    if not votes:
        return None, ""
    kind = max(_ORDER, key=lambda k: (votes[k], -_ORDER.index(k)))
    others = len(records) - votes[kind]
    detail = _counted(votes[kind], kind) + (_aliases(records) if kind == "meme" else "")
    return kind, detail + (f" and {others} other record{'s' if others != 1 else ''}" if others else "")


def _locomo_conversation(document: Mapping[str, Any]) -> bool:
    sessions = any(locomo.SESSION_KEY.fullmatch(key) for key in document)
    return sessions or "speaker_a" in document or isinstance(document.get("conversation"), dict)


def detect(document: object) -> Detection:
    """Recognise a parsed dataset document by its structure."""
    if isinstance(document, list):
        if not document:
            return Detection("unknown", "an empty list")
        kind, detail = _vote(document)
        if kind is None:
            return Detection("unknown", f"a list of {len(document)} records, none of them a LoCoMo sample, "
                                        "a LongMemEval question, a seed episode or a MEME episode")
        return Detection("locomo-list" if kind == "locomo" else kind, f"a list of {detail}")
    if not isinstance(document, dict):
        return Detection("unknown", f"the top level is {kind_of(document)}, not an object or a list")
    if isinstance(document.get("episodes"), list):
        kind, detail = _vote(document["episodes"])
        if kind == "meme":
            return Detection("meme", f"an object with 'episodes' holding {detail}")
        return Detection("seed", f"an object with 'episodes' holding {detail or 'no recognisable record'}")
    if "episodes" in document:
        return Detection("seed", "an object with 'episodes'")
    if _locomo_conversation(document):
        where = "under 'conversation'" if isinstance(document.get("conversation"), dict) else "at the top level"
        return Detection("locomo-single", f"one LoCoMo conversation {where}")
    if longmemeval.looks_like_question(document):
        return Detection("longmemeval", "one LongMemEval question object")
    container = next((a for a in meme.ALIASES["episodes"] if isinstance(document.get(a), list)), None)
    if container is not None:
        return Detection("meme", f"an object with MEME episodes under '{container}'{_aliases(document[container])}")
    if meme.looks_like_record(document):
        return Detection("meme", f"one MEME episode{_aliases([document])}")
    if locomo.looks_like_sample(document):
        return Detection("locomo-single", "one LoCoMo sample without a conversation")
    keys = ", ".join(f"'{k}'" for k in list(document)[:8]) or "no keys"
    return Detection("unknown", f"an object with {keys}: no 'episodes' (seed), no conversation or session_N "
                                "(LoCoMo), no haystack_sessions (LongMemEval), no dialogue or episode list "
                                "under a MEME alias")


def load_document(path: str, document: object, options: LoadOptions) -> Loaded:
    """Load a parsed document with the loader its structure calls for."""
    kind = detect(document).kind
    if kind == "locomo-list":
        assert isinstance(document, list)
        return locomo.load_list(path, document, options)
    if kind == "locomo-single":
        assert isinstance(document, dict)
        return locomo.load_single(path, document, options)
    if kind == "longmemeval":
        return longmemeval.load(path, document if isinstance(document, list) else [document], options)
    if kind == "meme":
        return meme.load(path, document, options)
    return seed.load(path, document, options)
