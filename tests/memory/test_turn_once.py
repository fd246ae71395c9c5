"""One turn through `Memory`: which packages it runs in, and each question about it asked once.

Measured, not read from the source: a profiler hook records every Python
function called while `add_turn` or `respond` runs, and which module called it.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from ledgermem.gate.admission import gate_verdict
from ledgermem.gate.summary_format import parse_summary
from ledgermem.gate.validation import validate_summary
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.render import clean_text
from ledgermem.projections.tokens import ESTIMATOR

STREAM = StreamKey("run", "three_layer", "ep")
CONFIG = MemoryConfig(tokenizer=ESTIMATOR, personal_data=True, gate_level="loose",
                      source_policies={"tool": {"strip": [r"\x1b\[[0-9;]*m"]}})
WATCHED = {f.__code__: f.__name__ for f in (clean_text, gate_verdict, parse_summary, validate_summary)}


#: The render of the window cleans the stored records it shows (the capacity measure and the pin checks
#: inside `decide` draw it too): that is the prompt being drawn, not the turn being read.
RENDER = "ledgermem.projections.render"


def module_of(frame: FrameType | None) -> str:
    return str(frame.f_globals.get("__name__", "")) if frame is not None else ""


class Calls:
    """Every call seen: the packages whose functions ran, and (callee, calling module) of the watched ones."""

    def __init__(self) -> None:
        self.packages: set[str] = set()
        self.watched: Counter[tuple[str, str]] = Counter()
        self.texts: Counter[str] = Counter()  # what `clean_text` cleaned for anyone but the render

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = module_of(frame)
        if module.startswith("ledgermem."):
            self.packages.add(module.split(".")[1])
        name = WATCHED.get(frame.f_code)
        if name is not None:
            caller = module_of(frame.f_back)
            self.watched[name, caller] += 1
            if name == "clean_text" and caller != RENDER:
                self.texts[frame.f_locals["text"]] += 1

    def count(self, name: str) -> int:
        return sum(n for (callee, _), n in self.watched.items() if callee == name)

    def callers(self, name: str) -> set[str]:
        return {caller for (callee, caller) in self.watched if callee == name}


@contextmanager
def watching() -> Iterator[Calls]:
    calls = Calls()
    sys.setprofile(calls.hook)
    try:
        yield calls
    finally:
        sys.setprofile(None)


def measured(memory: Memory, step: Callable[[], object]) -> Calls:
    with watching() as calls:
        step()
    return calls


def test_one_turn_runs_in_four_packages_and_is_read_once(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.duckdb") as ledger:
        m = Memory(ledger, STREAM, HeuristicBackend(tokenizer=ESTIMATOR), config=CONFIG)
        m.add_turn("My office floor is 3F.", "Noted.")
        user, agent = "\x1b[31mMy office floor changed to 7F.\x1b[0m", "Noted, 7F."
        calls = measured(m, lambda: m.add_turn(user, agent, source="tool"))
        assert calls.packages == {"memory", "gate", "projections", "ledger"}
        assert calls.count("gate_verdict") == 1 and calls.callers("gate_verdict") == {"ledgermem.gate.plan"}
        # Once per text: the user's words, the reply, and both as the grounds of the summary's claims.
        assert calls.texts == Counter({user: 1, agent: 1, f"{user}\n{agent}": 1})
        assert calls.callers("clean_text") - {RENDER} == {"ledgermem.gate.plan"}
        assert not {c for c in calls.callers("parse_summary") | calls.callers("validate_summary")
                    if c.startswith("ledgermem.memory")}  # memory never parses a summary
        assert m.state.current_values()["office floor"][0] == "7F"


def test_a_gated_turn_asks_no_summarizer_and_the_gate_once(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.duckdb") as ledger:
        m = Memory(ledger, STREAM, HeuristicBackend(tokenizer=ESTIMATOR), config=CONFIG)
        calls = measured(m, lambda: m.add_turn("Nice weather.", "Indeed."))
        assert calls.count("gate_verdict") == 1 and calls.count("parse_summary") == 0
        assert [r.event.event_type for r in ledger.read(stream=STREAM)][1:] == ["turn_recorded"]


def test_a_live_turn_is_read_once_too(tmp_path: Path) -> None:
    """`respond`: the reply's block is reviewed by the gate, not parsed by memory; admission asked once."""
    block = "Noted.\n<MEMORY_UPDATE>\nThe office is on 3F.\n[FACTS: office floor=3F]\n[OVERRIDES: none]\n</MEMORY_UPDATE>"
    backend = ScriptedBackend(lambda messages, purpose: block if purpose == "respond" else "NONE")
    with Ledger(tmp_path / "l.duckdb") as ledger:
        m = Memory(ledger, STREAM, backend, config=CONFIG)
        with watching() as calls:
            reply = m.respond("My office floor is 3F.")
        assert reply.self_written and reply.text == "Noted."
        assert calls.count("gate_verdict") == 1
        assert calls.texts == Counter({"My office floor is 3F.": 1, "Noted.": 1, "My office floor is 3F.\nNoted.": 1})
        assert not {c for c in calls.callers("parse_summary") | calls.callers("validate_summary")
                    if c.startswith("ledgermem.memory")}
