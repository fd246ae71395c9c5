"""The pinned block: hard constraints and open loops, kept verbatim, checked after every compaction. Pure.

Pins come from three places: the application declares them; the
summarizer lists them (CONSTRAINTS / OPEN sections); the lexical detector
finds them in the user's own words. Declared and summarised pins are shown
in the pinned block from the start. Detected pins form the out-of-band
list (seed 002): they are watched, and after every compaction — a capacity
pass, or a watched turn leaving the window — a survival check renders the
prompt under its budget and asks whether each pin still shows there. A pin
that does not is re-injected verbatim (`constraint_reinjected`: shown in
the pinned block from then on) and counted. The open loops the prompt shows
are counted before and after each compaction.

A pin "shows" when every one of its anchors is in the rendered prompt: the
slot and value of the facts stated in the same message (so the registry's
`slot=value` counts), else the verbatim text itself.
"""

from __future__ import annotations

from ledgermem.gate.commitments import detect_commitments
from ledgermem.gate.lexicon import detect_facts
from ledgermem.projections.events import ConstraintPinned, ConstraintReinjected
from ledgermem.projections.render import render
from ledgermem.projections.state import EpisodeState, Pin


def anchors_for(text: str) -> tuple[str, ...]:
    facts = detect_facts(text)
    if facts:
        return tuple(dict.fromkeys(a for f in facts for a in (f.slot, f.value)))
    return (" ".join(text.split()),)


def _known(state: EpisodeState, kind: str, text: str) -> bool:
    return any(p.kind == kind and p.text == text for p in state.pins.values())


def detected_pins(state: EpisodeState, *, turn: int, record_id: str, user: str) -> list[ConstraintPinned]:
    """Watched pins for the constraints and open loops the user's message sets."""
    out: list[ConstraintPinned] = []
    n = len(state.pins)
    for c in detect_commitments(user):
        if _known(state, c.kind, c.text):
            continue
        n += 1
        out.append(ConstraintPinned(turn=turn, pin_id=f"p{n:04d}", kind=c.kind, text=c.text, origin="detected",
                                    record_id=record_id, anchors=anchors_for(c.text)))
    return out


def summary_pins(
    state: EpisodeState, *, turn: int, record_id: str, summary_id: str, items: tuple[tuple[str, str], ...]
) -> list[ConstraintPinned]:
    """Shown pins for the (kind, text) items a summary lists in its CONSTRAINTS / OPEN sections."""
    out: list[ConstraintPinned] = []
    n = len(state.pins)
    for kind, text in items:
        if _known(state, kind, text):
            continue
        n += 1
        out.append(ConstraintPinned(turn=turn, pin_id=f"p{n:04d}", kind=kind, text=text, origin="summary",
                                    record_id=record_id, summary_id=summary_id, anchors=(text,)))
    return out


def shows(pin: Pin, prompt: str) -> bool:
    return all(a in prompt for a in pin.anchors) if pin.anchors else pin.text in prompt


def live_pins(state: EpisodeState) -> list[Pin]:
    return [p for p in state.pins.values() if not p.redacted]


def open_loops_shown(state: EpisodeState, prompt: str | None = None) -> int:
    text = render(state).text if prompt is None else prompt
    return sum(1 for p in live_pins(state) if p.kind == "open_loop" and shows(p, text))


def survival_check(state: EpisodeState, *, turn: int) -> tuple[list[ConstraintReinjected], int]:
    """Re-injection events for every pin the rendered prompt no longer shows, and how many were checked."""
    prompt = render(state).text
    pins = live_pins(state)
    missing = [p for p in pins if not shows(p, prompt)]
    reason = "not in the rendered prompt after compaction"
    return [ConstraintReinjected(turn=turn, pin_id=p.pin_id, reason=reason) for p in missing], len(pins)
