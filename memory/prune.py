"""Dedup before summarising: the cheap, near-lossless rung of the compression ladder. Pure.

A tool dump pasted into a turn often repeats: the same line, or the same
block of lines, many times over. Before a turn reaches the summarizer each
run of consecutive repeats of a block is collapsed to the block once and a
note line saying how many more times it came, so the summarizer reads the
signal once and is told the rest was a repetition. Order is kept and
nothing that is said only once is touched: a value that changes and comes
back (`9am`, `10am`, `9am`) is three different lines, never collapsed.

Only the prompt is pruned: the raw record keeps the turn as it was said,
and the count of lines pruned is recorded with the summarizer call
(`usage["pruned_lines"]` of its `llm_called` event).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The longest block (in lines) looked for as a repeat.
MAX_BLOCK = 40
#: The usage key of an `llm_called` event that counts the lines pruned from its prompt.
PRUNED_KEY = "pruned_lines"


@dataclass(frozen=True, slots=True)
class Pruned:
    text: str
    lines: int  # lines removed (the note lines that replace them not counted)


def repeat_note(block: int, more: int) -> str:
    what = "the line above" if block == 1 else f"the {block} lines above"
    return f"[{what} came {more} more time{'s' if more > 1 else ''}, not repeated here]"


def prune_repeats(text: str) -> Pruned:
    """`text` with every run of consecutive repeats of a block of lines collapsed to one copy and a note.

    Lines compare with their whitespace normalised. The shortest repeating
    block wins; a collapse is made only when it makes the text shorter.
    """
    lines = text.split("\n")
    key = [" ".join(line.split()) for line in lines]
    n = len(lines)
    out: list[str] = []
    removed = 0
    i = 0
    while i < n:
        found = _repeat_at(key, i)
        if found is not None:
            block, more = found
            note = repeat_note(block, more)
            saved = sum(len(line) + 1 for line in lines[i + block: i + block * (more + 1)])
            if saved > len(note) + 1:
                out += lines[i: i + block]
                out.append(note)
                removed += block * more
                i += block * (more + 1)
                continue
        out.append(lines[i])
        i += 1
    return Pruned("\n".join(out), removed) if removed else Pruned(text, 0)


def _repeat_at(key: list[str], i: int) -> tuple[int, int] | None:
    """(block length, further repeats) of the shortest block starting at `i` that repeats right after itself."""
    n = len(key)
    if not key[i]:
        return None  # a blank line never starts a block
    for block in range(1, min(MAX_BLOCK, (n - i) // 2) + 1):
        if key[i + block] != key[i] or key[i: i + block] != key[i + block: i + 2 * block]:
            continue
        more = 1
        while i + block * (more + 2) <= n and key[i + block * (more + 1): i + block * (more + 2)] == key[i: i + block]:
            more += 1
        return block, more
    return None


def prune_turn(user: str, agent: str) -> tuple[str, str, int]:
    """A turn's two texts as the summarizer gets them, and how many lines were pruned from them."""
    u, a = prune_repeats(user), prune_repeats(agent)
    return u.text, a.text, u.lines + a.lines
