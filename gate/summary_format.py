"""The summary contract and its parser.

A summarizer answers either `NONE` (nothing worth remembering) or a
task-structured state (seed 002: preserve, do not narrate), every section
optional:

    DECISIONS: <choice — reason>; ...
    OPEN: <unfinished task, verbatim>; ...
    ERRORS: <failure — root cause>; ...
    CONSTRAINTS: <rule that must still hold, verbatim>; ...
    [FACTS: slot=value; slot2=value2]
    [OVERRIDES: s0003, s0007 | none]

A line without a section header is kept as a note in front (older
summaries were one line of prose). The stored text is the sections on one
line, `DECISIONS: ... | OPEN: ...`; OPEN and CONSTRAINTS items are pinned.

The parser is lenient about layout (tags anywhere, fullwidth punctuation,
short ids like `s3`) and strict about meaning: it never invents a fact.

A model answering a live turn may write the same contract itself, after its
reply, as one block

    <MEMORY_UPDATE>
    ...the contract above, or NONE...
    </MEMORY_UPDATE>

`split_memory_update` separates the visible reply from such blocks. A block
is usable only when it is `NONE` or carries an `[OVERRIDES: ...]` tag: a
model that forgot the tag may also have forgotten what to override, and the
summarizer call that replaces it sees the whole chain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ledgermem.projections.events import Fact

_FACTS = re.compile(r"\[\s*FACTS\s*[:：]\s*(.*?)\]", re.IGNORECASE | re.DOTALL)
_OVERRIDES = re.compile(r"\[\s*OVERRIDES\s*[:：]\s*(.*?)\]", re.IGNORECASE | re.DOTALL)
#: The two tags, for checks that look at the text outside them (`gate.validation`).
FACTS_TAG, OVERRIDES_TAG = _FACTS, _OVERRIDES
_SUMMARY_ID = re.compile(r"^[sS]0*(\d+)$")
_NONE_WORDS = {"", "none", "无", "null", "n/a", "-"}

NONE_UPDATE = "NONE"
# A block's inner text may not hold another opening tag, so a stray opener
# before a block never swallows it. No pattern starts with a repeat: model
# output can be huge, and the scan must stay linear.
_BLOCK = re.compile(
    r"<\s*MEMORY_UPDATE\b[^<>]*>((?:(?!<\s*MEMORY_UPDATE).)*?)<\s*/\s*MEMORY_UPDATE\s*>",
    re.IGNORECASE | re.DOTALL,
)
_UNTERMINATED = re.compile(r"<\s*MEMORY_UPDATE.*\Z", re.IGNORECASE | re.DOTALL)
_STRAY_CLOSE = re.compile(r"<\s*/\s*MEMORY_UPDATE\s*>?", re.IGNORECASE)
_CUT = "\x00"  # marks where a block was, so the gap can be closed


SECTIONS: tuple[str, ...] = ("DECISIONS", "OPEN", "ERRORS", "CONSTRAINTS")
_SECTION = re.compile(r"^\s*\[?\s*(DECISIONS|OPEN|ERRORS|CONSTRAINTS)\s*[:：]\s*(.*?)\]?\s*$",
                      re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryDraft:
    text: str
    facts: tuple[Fact, ...]
    overrides: tuple[str, ...]
    has_overrides_tag: bool
    sections: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def items(self, name: str) -> tuple[str, ...]:
        return dict(self.sections).get(name, ())

    def pinned_items(self) -> tuple[tuple[str, str], ...]:
        """(kind, text) of every CONSTRAINTS and OPEN item: what the pinned block takes from this summary."""
        return (*(("constraint", t) for t in self.items("CONSTRAINTS")), *(("open_loop", t) for t in self.items("OPEN")))


def _section_items(body: str) -> tuple[str, ...]:
    items = [" ".join(i.split()) for i in re.split(r"[;；]", body)]
    return tuple(i for i in dict.fromkeys(items) if i and i.lower() not in _NONE_WORDS)


def structured_text(sections: tuple[tuple[str, tuple[str, ...]], ...], note: str = "") -> str:
    """The one-line stored form of a structured summary."""
    parts = [note] if note else []
    parts += [f"{name}: {'; '.join(items)}" for name, items in sections if items]
    return " | ".join(parts)


def normalise_summary_id(raw: str) -> str:
    m = _SUMMARY_ID.match(raw.strip())
    return f"s{int(m.group(1)):04d}" if m else raw.strip()


def parse_facts(body: str) -> tuple[Fact, ...]:
    facts: dict[str, str] = {}
    for chunk in re.split(r"[;；\n]", body):
        if "=" not in chunk:
            continue
        slot, _, value = chunk.partition("=")
        slot, value = slot.strip(), value.strip().rstrip("。.")
        if slot and value and slot.lower() not in _NONE_WORDS:
            facts.pop(slot, None)  # a later restatement wins and moves to the end
            facts[slot] = value
    return tuple(facts.items())


def parse_overrides(body: str) -> tuple[str, ...]:
    ids: list[str] = []
    for raw in re.split(r"[,，\s|]+", body):
        if raw.strip().lower() in _NONE_WORDS:
            continue
        sid = normalise_summary_id(raw)
        if sid not in ids:
            ids.append(sid)
    return tuple(ids)


def parse_summary(response: str) -> SummaryDraft | None:
    """The draft in a summarizer response, or None when it declares nothing to remember."""
    text = response.strip()
    if text.upper() == "NONE" or not text:
        return None
    facts_m, over_m = _FACTS.search(text), _OVERRIDES.search(text)
    facts = parse_facts(facts_m.group(1)) if facts_m else ()
    overrides = parse_overrides(over_m.group(1)) if over_m else ()
    rest = _OVERRIDES.sub(" ", _FACTS.sub(" ", text))
    found: dict[str, list[str]] = {}
    for m in _SECTION.finditer(rest):
        found.setdefault(m.group(1).upper(), []).extend(_section_items(m.group(2)))
    sections = tuple((name, tuple(dict.fromkeys(found[name]))) for name in SECTIONS if found.get(name))
    note = " ".join(_SECTION.sub(" ", rest).split())
    if not note and not facts and not sections:
        return None
    body = structured_text(sections, note) or "; ".join(f"{k}={v}" for k, v in facts)
    return SummaryDraft(text=body, facts=facts, overrides=overrides, has_overrides_tag=over_m is not None,
                        sections=sections)


def format_summary(
    text: str, facts: tuple[Fact, ...], overrides: tuple[str, ...],
    sections: tuple[tuple[str, tuple[str, ...]], ...] = (),
) -> str:
    """The contract's own spelling of a draft (used by the heuristic backend)."""
    fact_body = "; ".join(f"{k}={v}" for k, v in facts)
    lines = [text] if text else []
    lines += [f"{name}: {'; '.join(items)}" for name, items in sections if items]
    lines += [f"[FACTS: {fact_body}]", f"[OVERRIDES: {', '.join(overrides) if overrides else 'none'}]"]
    return "\n".join(lines)


@dataclass(frozen=True, slots=True, kw_only=True)
class SelfWrite:
    """A reply split into what the user sees and the memory update it carried.

    `update` is the inner text of the last usable block (`NONE` for a NONE
    block), or None when no block was usable; `blocks` counts every block
    removed, usable or not, an unterminated one included.
    """

    visible: str
    update: str | None
    blocks: int


def is_valid_update(inner: str) -> bool:
    """A self-written update is `NONE`, or a summary that parses and has an `[OVERRIDES: ...]` tag."""
    if inner.strip().upper() == NONE_UPDATE:
        return True
    draft = parse_summary(inner)
    return draft is not None and draft.has_overrides_tag


def split_memory_update(text: str) -> SelfWrite:
    """Every `<MEMORY_UPDATE>` block removed from `text` (tags in any case, an unterminated trailing
    block running to the end); the update is the last terminated block that is valid."""
    inner = [m.group(1).strip() for m in _BLOCK.finditer(text)]
    usable = [NONE_UPDATE if b.upper() == NONE_UPDATE else b for b in inner if is_valid_update(b)]
    visible, blocks = text.replace(_CUT, ""), 0
    while True:  # closing one gap can join the halves of another tag: repeat until none is left
        visible, n_block = _BLOCK.subn(_CUT, visible)
        visible, n_open = _UNTERMINATED.subn(_CUT, visible)
        visible, n_close = _STRAY_CLOSE.subn(_CUT, visible)
        blocks += n_block + n_open
        if not n_block + n_open + n_close:
            break
        visible = _close_gaps(visible.split(_CUT))
    return SelfWrite(visible=_tidy(visible), update=usable[-1] if usable else None, blocks=blocks)


def format_memory_update(summary: str | None) -> str:
    """The block a model appends after its reply: a summary in the contract's spelling, or NONE."""
    return f"<MEMORY_UPDATE>\n{summary}\n</MEMORY_UPDATE>" if summary else f"<MEMORY_UPDATE>{NONE_UPDATE}</MEMORY_UPDATE>"


def _close_gaps(pieces: list[str]) -> str:
    """Join the text around removed blocks: one space inside a line, nothing at a line break."""
    last = len(pieces) - 1
    out: list[str] = []
    for i, piece in enumerate(pieces):
        piece = piece.lstrip(" \t") if i > 0 else piece
        piece = piece.rstrip(" \t") if i < last else piece
        if not piece:
            continue
        if out and not out[-1].endswith("\n") and not piece.startswith("\n"):
            out.append(" ")
        out.append(piece)
    return "".join(out)


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
