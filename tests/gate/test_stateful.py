"""A real, file-backed `Memory` driven by a state machine against a plain-Python model.

The machine chooses every summarizer response (well-formed contracts with
overrides of real, archived and hallucinated ids; hostile responses), erases
by slot, by value, by raw record and by data subject, crashes between the two
commits of a turn, between `key_shredded` and the key file's rewrite and
between that rewrite and the projection rebuild (then reopens the files), lets
the same writes fail with an error the process survives (then carries on or
retries), and reads the memory back through its exact-id tools. After every step the
registry must equal the model's newest surviving value of every slot, and the
whole audit (I1-I5, hash chain, SCD-2, replay) must pass.

    fast variant   runs in the default test run (dev and ci profiles)
    deep variant   HYPOTHESIS_PROFILE=deep python -m pytest tests/gate/test_stateful.py -m slow -s
                   (at least 10,000 stateful steps; prints the count and the time)
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    precondition,
    rule,
)

from ledgermem.gate.errors import CommandRejected
from ledgermem.gate.invariants import audit
from ledgermem.ledger.events import Event
from ledgermem.projections.events import (
    OverrideRejected,
    PagedIn,
    SummaryCreated,
    SummaryOverridden,
    SummaryRejected,
    SummarySkipped,
    ToolCalled,
)
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import Message, ScriptedBackend
from ledgermem.memory.erasure import scan
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore, projection_path
from ledgermem.projections.tokens import ESTIMATOR, count_tokens

STREAM = StreamKey("run-sm", "three_layer", "ep-1")
CONFIG = MemoryConfig(
    tokenizer=ESTIMATOR, chain_budget=90, index_group_size=2, window_turns=2, personal_data=True,
)

SLOTS = ("office floor", "meeting time", "team size", "pet name")
# Values are chosen so that none is a token of another, none occurs in the fixed
# texts of the machine, and some are long enough (>= 8 bytes) for the residue
# scan of raw file bytes. Digits, capitals and non-ASCII characters never occur
# in the filler or garbage texts below.
VALUES = ("3F", "7F", "12F", "blue-heron", "copper-kettle-42", "Zürich-9", "七楼")
BASES = ("GDPR Art. 17 request #101", "CCPA deletion ticket 7", "Art. 17(1)(b) withdrawal")
FILLER_WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit")
GARBAGE_ALPHABET = "abcdxyz !?;:,.=-\n\t"
NONE_WORDS = {"", "none", "无", "null", "n/a", "-"}
HUGE = 100_000
#: Words of a long summary that is not a repetition: over the summary limit (cut) and under the refusal cap.
_RNG = random.Random(7)
LONG_WORDS = tuple("".join(_RNG.choice("bcdfghjklmnpqrstvwxz") + _RNG.choice("aeiou") for _ in range(3))
                   for _ in range(120))
#: The same generic reply every turn: erasing one raw record must not take every other turn with it.
AGENT = "Noted."

#: Stateful steps executed by any variant in this process (each rule counts one).
STEPS = {"count": 0}


T = TypeVar("T")


class SimulatedCrash(Exception):
    """The process dies here."""


def _dead(*args: Any, **kwargs: Any) -> NoReturn:
    """A write by a process that has died: nothing reaches the file any more."""
    raise SimulatedCrash("the process died here")


def _crash_once(original: Callable[..., T]) -> Callable[..., T]:
    """`original`, except that its next call fails (an error the process survives)."""
    calls = {"n": 0}

    def failing(*args: Any, **kwargs: Any) -> T:
        calls["n"] += 1
        if calls["n"] == 1:
            raise SimulatedCrash("simulated crash")
        return original(*args, **kwargs)

    return failing


def _token_in(value: str, text: str) -> bool:
    """`value` occurs in `text` as a whole token (no ASCII letter or digit glued to its edges)."""
    def glued(ch: str) -> bool:
        return ch.isascii() and ch.isalnum()

    start = text.find(value)
    while start >= 0:
        end = start + len(value)
        left_ok = not glued(value[0]) or start == 0 or not glued(text[start - 1])
        right_ok = not glued(value[-1]) or end == len(text) or not glued(text[end])
        if left_ok and right_ok:
            return True
        start = text.find(value, start + 1)
    return False


def _canonical_id(raw: str) -> str:
    m = re.fullmatch(r"[sS]0*(\d+)", raw.strip())
    return f"s{int(m.group(1)):04d}" if m else raw.strip()


def _requested(spellings: Sequence[str]) -> list[str]:
    """The override ids a response asks for, in order, once each (the contract's reading)."""
    out: list[str] = []
    for raw in spellings:
        if raw.strip().lower() in NONE_WORDS:
            continue
        sid = _canonical_id(raw)
        if sid not in out:
            out.append(sid)
    return out


def _facts_tag(facts: Sequence[tuple[str, str]]) -> str:
    return "[FACTS: " + "; ".join(f"{k}={v}" for k, v in facts) + "]" if facts else "[FACTS: none]"


#: Other names a summarizer writes a slot under: the gate stores them as the slot (`gate.attributes`), so the
#: model keeps one name per slot. Which name is written depends on the value, so runs mix them.
WRITTEN = {"office floor": ("office floor", "floor of my office", "Desk Floor"), "meeting time": ("meeting time",)}


def written_as(slot: str, value: str) -> str:
    names = WRITTEN.get(slot, (slot,))
    return names[VALUES.index(value) % len(names)] if value in VALUES else slot


def contract(prose: str, facts: Sequence[tuple[str, str]], overrides: Sequence[str] | None) -> str:
    """A summarizer response in the contract's layout; `overrides=None` leaves the tag out."""
    out = f"{prose}\n[FACTS: {'; '.join(f'{written_as(k, v)}={v}' for k, v in facts)}]"
    if overrides is not None:
        out += f"\n[OVERRIDES: {', '.join(overrides) if overrides else 'none'}]"
    return out


# --- the model ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnRef:
    """What a turn produced: its raw record and the summary written from it, if any."""

    record_id: str
    summary_id: str | None

    def override_id(self) -> str:
        # A turn without a summary offers its record id: a realistic hallucinated override.
        return self.summary_id or self.record_id


@dataclass
class MTurn:
    turn: int
    record_id: str
    user: str
    agent: str
    response: str
    summary_id: str | None = None
    shredded: bool = False


@dataclass
class MSummary:
    summary_id: str
    turn: int
    facts: tuple[tuple[str, str], ...]
    live: bool = True
    superseded_by: str | None = None
    redacted: bool = False


@dataclass(frozen=True)
class Obs:
    turn: int
    value: str
    summary_id: str
    erased: bool


@dataclass(frozen=True)
class ErasePlan:
    values: frozenset[str]
    turns: frozenset[int]
    summaries: tuple[str, ...]
    records: tuple[str, ...]
    facts: tuple[tuple[str, str, bool], ...]


@dataclass
class Model:
    turn: int = 0
    erasures: int = 0
    turns: dict[int, MTurn] = field(default_factory=dict)
    summaries: dict[str, MSummary] = field(default_factory=dict)
    rejected: int = 0

    def observations(self, slot: str) -> list[Obs]:
        """Every observation of `slot`, oldest first."""
        return [
            Obs(s.turn, v, s.summary_id, s.redacted)
            for s in self.summaries.values() for k, v in s.facts if k == slot
        ]

    def slots(self) -> list[str]:
        return sorted({k for s in self.summaries.values() for k, _ in s.facts})

    def current_values(self) -> dict[str, tuple[str, str]]:
        """Slot -> (value, summary_id) of its newest surviving (non-erased) observation, live or archived.

        Without erasures that is the newest live observation (overrides never orphan a slot's newest
        value; the invariant checks it); after one, the slot falls back to the newest value that survives.
        """
        out: dict[str, tuple[str, str]] = {}
        for slot in self.slots():
            obs = [o for o in self.observations(slot) if not o.erased]
            if obs:
                out[slot] = (obs[-1].value, obs[-1].summary_id)
        return out

    def newest_live_values(self) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for slot in self.slots():
            live = [o for o in self.observations(slot) if not o.erased and self.summaries[o.summary_id].live]
            if live:
                out[slot] = (live[-1].value, live[-1].summary_id)
        return out

    def erasable_slots(self) -> list[str]:
        return sorted({k for s in self.summaries.values() if not s.redacted for k, _ in s.facts})

    def surviving_values(self, slot: str) -> list[str]:
        return sorted({o.value for o in self.observations(slot) if not o.erased})

    def next_summary_id(self) -> str:
        return f"s{len(self.summaries) + 1:04d}"

    def validate_overrides(self, facts: Sequence[tuple[str, str]], requested: Sequence[str]) -> tuple[list[str], int]:
        """Applied ids and the number rejected: an id must be live and orphan no slot's newest value."""
        holders = self.current_values()
        new_slots = {k for k, _ in facts}
        applied, rejected = [], 0
        for oid in requested:
            s = self.summaries.get(oid)
            orphans = s is not None and any(sid == oid and slot not in new_slots for slot, (_, sid) in holders.items())
            if s is None or not s.live or orphans:
                rejected += 1
            else:
                applied.append(oid)
        return applied, rejected

    def plan_erase(self, *, slot: str | None = None, value: str | None = None, record_id: str | None = None,
                   subject: bool = False) -> ErasePlan:
        by_record = {t.record_id: t for t in self.turns.values()}
        if subject:
            targets = {(s.summary_id, k) for s in self.summaries.values() for k, _ in s.facts}
            values = {v for s in self.summaries.values() if not s.redacted for _, v in s.facts}
            turns = set(self.turns)
        elif record_id is not None:
            t = by_record[record_id]
            cited = [self.summaries[t.summary_id]] if t.summary_id else []
            targets = {(s.summary_id, k) for s in cited for k, _ in s.facts}
            values = {v for s in cited if not s.redacted for _, v in s.facts}
            if not t.shredded:
                values |= {t.user} - {""}  # the user's own words; the agent's reply is not looked for
            turns = {t.turn}
        else:
            targets = {
                (s.summary_id, k) for s in self.summaries.values() if not s.redacted
                for k, v in s.facts if k == slot and (value is None or v == value)
            }
            values = {v for s in self.summaries.values() if not s.redacted
                      for k, v in s.facts if k == slot and (value is None or v == value)}
            turns = {self.summaries[sid].turn for sid, _ in targets}
        # Anything still readable that mentions a value being erased goes with it.
        turns |= {
            t.turn for t in self.turns.values()
            if not t.shredded and any(_token_in(v, text) for v in values for text in (t.user, t.agent, t.response))
        }
        summaries = tuple(sorted(sid for t in turns if (sid := self.turns[t].summary_id) is not None))
        facts = tuple(
            (sid, k, (sid, k) not in targets)
            for sid in summaries if not self.summaries[sid].redacted for k, _ in self.summaries[sid].facts
        )
        records = tuple(sorted(self.turns[t].record_id for t in turns))
        return ErasePlan(frozenset(values), frozenset(turns), summaries, records, facts)

    def apply_erase(self, plan: ErasePlan) -> None:
        self.erasures += 1
        for t in plan.turns:
            self.turns[t].shredded = True
        for sid in plan.summaries:
            self.summaries[sid].redacted = True

    def predecessor(self, slot: str, exclude: str) -> Obs | None:
        """The value `slot` had just before it (last) became `exclude`; the newest value if it never was."""
        obs = [o for o in self.observations(slot) if not o.erased]
        values = [o.value for o in obs]
        if exclude in values:
            i = len(values) - 1 - values[::-1].index(exclude)
            while i > 0 and values[i - 1] == exclude:
                i -= 1
            obs = obs[:i]
        return obs[-1] if obs else None


# --- strategies --------------------------------------------------------------------------

fact_lists = st.lists(
    st.tuples(st.sampled_from(SLOTS), st.sampled_from(VALUES)), min_size=1, max_size=2, unique_by=lambda f: f[0]
)
#: (canonical id, spelling) of ids that name no summary of this episode.
hallucinated = st.sampled_from([
    ("s0999", "s0999"), ("s0999", "s999"), ("s0000", "s0"), ("s12345", "S12345"), ("r0001", "r0001"),
    ("x12", "x12"), ("s0077", "S077"),
])
NEXT_ID = ("<next>", "<next>")  # the id the summary being written will get
#: References to a turn that never happened, for the reading rules.
ghosts = st.sampled_from([TurnRef("r9999", None), TurnRef("r0000", "s0999")])


def _spellings(sid: str) -> list[str]:
    m = re.fullmatch(r"s0*(\d+)", sid)
    if not m:
        return [sid]
    n = m.group(1)
    return [sid, f"s{n}", f"S{sid[1:]}", f"s0{n}" if len(n) < 4 else sid]


class MemoryMachine(RuleBasedStateMachine):
    turns = Bundle("turns")

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="ledgermem-sm-")
        self.path = os.path.join(self.dir, "memory.duckdb")
        self.model = Model()
        self.response = "NONE"
        self.answer_tool: str | None = None
        self.answer_final = ""
        self.backend = ScriptedBackend(self._script)
        self.ledger = Ledger(self.path)
        self.projections = ProjectionStore(projection_path(self.path))
        self.memory: Memory | None = self._open_memory()

    # -- plumbing ---------------------------------------------------------------------

    def _open_memory(self) -> Memory:
        return Memory(self.ledger, STREAM, self.backend, config=CONFIG, projections=self.projections, strict=True)

    def _script(self, messages: Sequence[Message], purpose: str) -> str:
        if purpose == "summarize":
            return self.response
        if self.answer_tool and not any(m["content"].startswith("[TOOL RESULT") for m in messages):
            return self.answer_tool
        return self.answer_final

    @property
    def mem(self) -> Memory:
        assert self.memory is not None
        return self.memory

    def _reopen(self) -> None:
        """The process died: drop everything in memory and open the files again."""
        self.memory = None
        self.ledger.close()
        self.projections.close()
        self.ledger = Ledger(self.path)
        self.projections = ProjectionStore(projection_path(self.path))
        self.memory = self._open_memory()

    def teardown(self) -> None:
        self.memory = None
        for closeable in (self.ledger, self.projections):
            with contextlib.suppress(Exception):  # already closed after a failed step
                closeable.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @staticmethod
    def _step() -> None:
        STEPS["count"] += 1

    def _new_events(self, after_seq: int) -> list[Event]:
        return [r.event for r in self.ledger.read(stream=STREAM, from_seq=after_seq + 1)]

    # -- turns --------------------------------------------------------------------------

    def _turn(self, user: str, agent: str, response: str, *, facts: Sequence[tuple[str, str]] = (),
              requested: Sequence[str] = (), created: bool, truncated: bool = False,
              failure: str | None = None, refused: str | None = None) -> TurnRef:
        """Record a turn; `failure` makes its projection write fail: "crash" (the process dies) or
        "transient" (the error is raised and the memory carries on). `refused` names a validation reason
        the response must be rejected for: then nothing is written and the turn falls back to its raw record."""
        t = self.model.turn + 1
        user, agent = user.format(t=t), agent.format(t=t)
        self.response = response.replace("<next>", self.model.next_summary_id())
        requested = [self.model.next_summary_id() if r == "<next>" else r for r in requested]
        before = self.ledger.last_seq
        if failure == "crash":
            store = self.projections
            store.write = store.replace_stream = store.rebuild_from = _dead  # type: ignore[method-assign]
            with pytest.raises(SimulatedCrash):
                self.mem.add_turn(user, agent)
            assert store.last_seq(STREAM) < self.ledger.last_seq, "the ledger commit should have happened"
        elif failure == "transient":
            self.projections.write = _crash_once(self.projections.write)  # type: ignore[method-assign]
            with pytest.raises(SimulatedCrash):
                self.mem.add_turn(user, agent)
        else:
            self.mem.add_turn(user, agent)
        events = self._new_events(before)
        mt = MTurn(turn=t, record_id=f"r{t:04d}", user=user, agent=agent, response=self.response)
        written = [e for e in events if isinstance(e, SummaryCreated)]
        overridden = [e.summary_id for e in events if isinstance(e, SummaryOverridden)]
        rejected = sum(len(e.rejected) for e in events if isinstance(e, OverrideRejected))
        skipped = [e for e in events if isinstance(e, SummarySkipped)]
        if refused is not None:
            assert not created and len(skipped) == 1 and refused in skipped[0].reasons, (refused, skipped)
            assert all(isinstance(e, SummaryRejected) and refused in e.reasons
                       for e in events if isinstance(e, SummaryRejected))
            event(f"turn: refused for {refused}")
        else:
            assert not skipped, skipped
        if created:
            sid = self.model.next_summary_id()
            applied, n_rejected = self.model.validate_overrides(facts, requested)
            assert [e.summary_id for e in written] == [sid]
            assert written[0].facts == tuple(facts)
            assert written[0].overrides == tuple(applied) and overridden == applied
            assert rejected == n_rejected, (rejected, n_rejected, requested)
            assert written[0].truncated == truncated
            if truncated:
                assert count_tokens(written[0].text, ESTIMATOR) <= CONFIG.summary_max_tokens
            event("turn: an override was applied" if applied else "turn: no override applied")
            if n_rejected:
                event("turn: an override was rejected")
            for old in applied:
                self.model.summaries[old].live = False
                self.model.summaries[old].superseded_by = sid
            self.model.summaries[sid] = MSummary(summary_id=sid, turn=t, facts=tuple(facts))
            self.model.rejected += n_rejected
            mt.summary_id = sid
        else:
            assert not written and not overridden and not rejected, events
        self.model.turns[t] = mt
        self.model.turn = t
        if failure == "crash":
            self._reopen()
            assert self.projections.last_seq(STREAM) == self.ledger.last_seq, "resume did not catch up"
        return TurnRef(mt.record_id, mt.summary_id)

    def _overrides(self, refs: Sequence[TurnRef | tuple[str, str]], duplicate: bool) -> tuple[list[str], list[str]]:
        """Spellings to put in OVERRIDES and the canonical ids they ask for."""
        spellings: list[str] = []
        for ref in refs:
            if isinstance(ref, TurnRef):
                sid = ref.override_id()
                forms = _spellings(sid)
                spellings += forms[:3] if duplicate else forms[:1]
            else:
                spellings.append(ref[1])
        return spellings, _requested(spellings)

    @rule(
        target=turns,
        facts=fact_lists,
        refs=st.lists(st.one_of(turns, hallucinated, st.just(NEXT_ID)), max_size=3),
        duplicate=st.booleans(),
        restate=st.booleans(),
    )
    def fact_turn(self, facts: list[tuple[str, str]], refs: list[TurnRef | tuple[str, str]],
                  duplicate: bool, restate: bool) -> object:
        """A turn stating 1-2 facts; the summary overrides ids from the bundle (live, archived or not summaries).

        With `restate`, it also overrides every live summary all of whose slots it restates, as a good
        summarizer would: that is what archives values and makes A->B->A reverts reach the archive.
        """
        self._step()
        said = "; ".join(f"my {k} is {v}" for k, v in facts)
        if restate:
            slots = {k for k, _ in facts}
            refs = [*refs, *((s.summary_id, s.summary_id) for s in self.model.summaries.values()
                             if s.live and s.facts and {k for k, _ in s.facts} <= slots)]
        spellings, requested = self._overrides(refs, duplicate)
        response = contract(f"The user said {said}.", facts, spellings)
        return multiple(self._turn("Turn {t}: " + said + ".", AGENT, response,
                                   facts=facts, requested=requested, created=True))

    @rule(target=turns)
    def distractor_turn(self) -> object:
        self._step()
        return multiple(self._turn("Turn {t}: nice weather today, nothing to note.", AGENT, "NONE",
                                   created=False))

    @rule(
        target=turns,
        kind=st.sampled_from(["prose only", "no overrides tag", "none", "empty", "tags only", "garbage",
                              "hallucinated", "duplicates", "long", "huge"]),
        facts=fact_lists,
        ref=st.one_of(turns, hallucinated),
        garbage=st.text(alphabet=GARBAGE_ALPHABET, max_size=60),
        none_word=st.sampled_from(["NONE", " none\n", "None", "nOnE"]),
        blank=st.sampled_from(["", " ", "\n\t  \n"]),
        huge_facts=st.booleans(),
    )
    def hostile_turn(self, kind: str, facts: list[tuple[str, str]], ref: TurnRef | tuple[str, str],
                     garbage: str, none_word: str, blank: str, huge_facts: bool) -> object:
        """A summarizer that breaks the contract; the memory must neither invent nor lose anything."""
        self._step()
        said = "; ".join(f"my {k} is {v}" for k, v in facts)
        user, agent = "Turn {t}: " + said + ".", AGENT
        if kind == "prose only":
            return multiple(self._turn(user, agent, "the user talked about their week", created=True))
        if kind == "no overrides tag":
            return multiple(self._turn(user, agent, contract(f"User said: {said}", facts, None), facts=facts,
                                       created=True))
        if kind == "none":
            return multiple(self._turn(user, agent, none_word, created=False))
        if kind == "empty":
            return multiple(self._turn(user, agent, blank, created=False))
        if kind == "tags only":
            spellings, _ = self._overrides([ref], False)
            return multiple(self._turn(user, agent, contract("", (), spellings), created=False))
        if kind == "garbage":
            text = garbage.strip()
            if not text or text.upper() == "NONE":
                return multiple(self._turn(user, agent, garbage, created=False))
            if not any(c.isalnum() for c in text):  # no word at all: refused, never stored as a note
                return multiple(self._turn(user, agent, garbage, created=False, refused="garbage"))
            # Letters: a note, unless it repeats a line or copies the format's '; ...' (also refused).
            lines = [" ".join(x.split()).casefold() for x in garbage.splitlines()]
            repeated = any(len(x) >= 8 and lines.count(x) >= 3 for x in lines)
            ellipsis = re.search(r"[;]\s*\.\.\.\s*$", garbage, re.MULTILINE) is not None
            if repeated or ellipsis:
                return multiple(self._turn(user, agent, garbage, created=False,
                                           refused="repetition" if repeated else "placeholder"))
            return multiple(self._turn(user, agent, garbage, created=True))
        if kind == "hallucinated":
            ids = [h for h in (ref,) if isinstance(h, tuple)] or [("s0999", "s999")]
            spellings, requested = self._overrides([*ids, ("s4242", "s4242"), NEXT_ID], False)
            return multiple(self._turn(user, agent, contract(f"User said: {said}", facts, spellings), facts=facts,
                                       requested=requested, created=True))
        if kind == "duplicates":
            spellings, requested = self._overrides([ref, ref], True)
            assert len(requested) <= 1
            return multiple(self._turn(user, agent, contract(f"User said: {said}", facts, spellings), facts=facts,
                                       requested=requested, created=True))
        if kind == "long":  # over the summary limit, not a repetition: cut and counted
            kept = facts if huge_facts else []
            response = contract("", kept, ["none"]) + "\n" + " ".join(LONG_WORDS)
            assert CONFIG.summary_max_tokens < count_tokens(response, ESTIMATOR) < 4 * CONFIG.summary_max_tokens
            return multiple(self._turn(user, agent, response, facts=kept, created=True, truncated=True))
        assert kind == "huge"  # one phrase until 100k characters: refused whole, its facts with it
        kept = facts if huge_facts else []
        head = contract("", kept, ["none"]) + "\n"
        filler = " ".join(FILLER_WORDS[i % len(FILLER_WORDS)] for i in range(HUGE))
        response = (head + filler)[:HUGE]
        assert len(response) == HUGE
        return multiple(self._turn(user, agent, response, created=False, refused="too_long"))

    @rule(target=turns, facts=fact_lists, refs=st.lists(st.one_of(turns, hallucinated), max_size=2))
    def crash_between_the_two_commits(self, facts: list[tuple[str, str]],
                                      refs: list[TurnRef | tuple[str, str]]) -> object:
        """The ledger commits the turn, the process dies before the projection write; reopening catches up."""
        self._step()
        said = "; ".join(f"my {k} is {v}" for k, v in facts)
        spellings, requested = self._overrides(refs, False)
        response = contract(f"The user said {said}.", facts, spellings)
        return multiple(self._turn("Turn {t}: " + said + ".", AGENT, response,
                                   facts=facts, requested=requested, created=True, failure="crash"))

    @rule(target=turns, facts=fact_lists, refs=st.lists(st.one_of(turns, hallucinated), max_size=2))
    def projection_write_fails_and_the_memory_carries_on(self, facts: list[tuple[str, str]],
                                                         refs: list[TurnRef | tuple[str, str]]) -> object:
        """The projection write raises, the same Memory goes on: by the next commit nothing is lost."""
        self._step()
        said = "; ".join(f"my {k} is {v}" for k, v in facts)
        spellings, requested = self._overrides(refs, False)
        response = contract(f"The user said {said}.", facts, spellings)
        failed = self._turn("Turn {t}: " + said + ".", AGENT, response,
                            facts=facts, requested=requested, created=True, failure="transient")
        after = self._turn("Turn {t}: nothing new.", AGENT, "NONE", created=False)
        return multiple(failed, after)

    @rule()
    def reopen(self) -> None:
        """A clean restart resumes the stream without writing anything."""
        self._step()
        before = self.ledger.last_seq
        self._reopen()
        assert self.ledger.last_seq == before

    # -- erasure --------------------------------------------------------------------------

    def _erase(self, basis: str, *, slot: str | None = None, value: str | None = None,
               record_id: str | None = None, subject: bool = False, failure: str | None = None) -> None:
        """Erase and check the receipt against the model.

        `failure`: "shred crash" (the process dies between `key_shredded` and the key file's rewrite),
        "rebuild crash" (it dies after the key rewrite, before the projection file is rebuilt), or
        "shred transient" (the key rewrite raises, the caller retries the same request).
        """
        plan = self.model.plan_erase(slot=slot, value=value, record_id=record_id, subject=subject)
        request: dict[str, Any] = {"legal_basis": basis, "slot": slot, "value": value, "record_id": record_id,
                                   "subject": subject}
        if failure is not None:
            keys = self.ledger.keys
            assert keys is not None
            if failure == "shred crash":
                keys.shred = _dead  # type: ignore[method-assign]
            elif failure == "rebuild crash":
                self.projections.rebuild_from = _dead  # type: ignore[method-assign]
            else:
                keys.shred = _crash_once(keys.shred)  # type: ignore[method-assign]
            with pytest.raises(SimulatedCrash):
                self.mem.erase(**request)
            pending = [k for k in self.mem.state.shredded_keys if k in keys]
            assert bool(pending) == (failure != "rebuild crash"), pending
            if failure == "shred transient":
                with contextlib.suppress(CommandRejected):  # what is left to erase may be nothing now
                    self.mem.erase(**request)
            else:
                self._reopen()
            assert self.ledger.keys is not None
            left = [k for k in self.mem.state.shredded_keys if k in self.ledger.keys]
            assert not left, f"the erasure was not finished: {left}"
            residue, _, _ = scan(self.ledger, STREAM, self.projections, self.mem.render().text, set(plan.values))
            assert not any(residue.values()), residue
        else:
            receipt = self.mem.erase(**request)
            assert receipt.clean, json.dumps(receipt.as_dict(), indent=1, ensure_ascii=False)
            assert receipt.legal_basis == basis
            assert receipt.summaries == plan.summaries, (receipt.summaries, plan)
            assert receipt.records == plan.records, (receipt.records, plan)
            assert sorted(receipt.facts) == sorted(plan.facts), (receipt.facts, plan)
        self.model.apply_erase(plan)
        event("erase: " + ("subject" if subject else "record" if record_id else "value" if value else "slot")
              + (f" ({failure})" if failure else ""))
        if len(plan.turns) > 1:
            event("erase: more than one turn shredded")
        self._assert_unreadable(plan.values)
        registry = self.mem.state.current_values()
        if slot is not None and value is None:
            assert slot not in registry
        if slot is not None and value is not None:
            assert registry.get(slot, (None,))[0] != value

    def _assert_unreadable(self, values: frozenset[str]) -> None:
        """No exact-id tool shows an erased value any more."""
        state = self.mem.state
        calls: list[tuple[str, dict[str, str]]] = [
            *(("get_archived_summary", {"summary_id": sid}) for sid in state.summaries),
            *(("get_raw_record", {"reference_id": rid}) for rid in state.raw),
            *(("expand_index", {"index_id": iid}) for iid in state.indexes),
            *(("get_predecessor_summary", {"fact_key": k, "exclude_value": v}) for k in SLOTS for v in VALUES),
        ]
        for name, args in calls:
            text = self.mem.tool(name, args).text
            leaked = [v for v in values if _token_in(v, text)]
            assert not leaked, f"{name}({args}) still shows an erased value: {text!r}"

    @precondition(lambda self: bool(self.model.erasable_slots()))
    @rule(data=st.data(), by_value=st.booleans(), basis=st.sampled_from(BASES))
    def erase_fact(self, data: st.DataObject, by_value: bool, basis: str) -> None:
        """Erase a slot, or one value of it."""
        self._step()
        slot = data.draw(st.sampled_from(self.model.erasable_slots()), label="slot")
        value = data.draw(st.sampled_from(self.model.surviving_values(slot)), label="value") if by_value else None
        self._erase(basis, slot=slot, value=value)

    @rule(ref=turns, basis=st.sampled_from(BASES), subject=st.integers(0, 9).map(lambda n: n == 9))
    def erase_record(self, ref: TurnRef, basis: str, subject: bool) -> None:
        """Erase one raw record (even one already erased), or rarely the whole data subject."""
        self._step()
        if subject:
            self._erase(basis, subject=True)
        else:
            self._erase(basis, record_id=ref.record_id)

    @precondition(lambda self: bool(self.model.erasable_slots()))
    @rule(data=st.data(), by_value=st.booleans(), basis=st.sampled_from(BASES),
          failure=st.sampled_from(["shred crash", "rebuild crash", "shred transient"]))
    def erasure_interrupted(self, data: st.DataObject, by_value: bool, basis: str, failure: str) -> None:
        """`key_shredded` is committed and then the erasure is cut short; reopening (after a crash) or
        retrying (after an error) finishes it: no shredded key left, no residue anywhere."""
        self._step()
        slot = data.draw(st.sampled_from(self.model.erasable_slots()), label="slot")
        value = data.draw(st.sampled_from(self.model.surviving_values(slot)), label="value") if by_value else None
        self._erase(basis, slot=slot, value=value, failure=failure)

    @rule(slot=st.sampled_from(SLOTS), value=st.sampled_from(VALUES), blank=st.sampled_from(["", "  \t"]))
    def erase_rejected(self, slot: str, value: str, blank: str) -> None:
        """Impossible requests are refused before anything is written."""
        self._step()
        before = self.ledger.last_seq
        with pytest.raises(CommandRejected):
            self.mem.erase(legal_basis=blank, slot=slot)
        if value not in self.model.surviving_values(slot):
            with pytest.raises(CommandRejected):
                self.mem.erase(legal_basis=BASES[0], slot=slot, value=value)
        with pytest.raises(CommandRejected):
            self.mem.erase(legal_basis=BASES[0], record_id="r9999")
        assert self.ledger.last_seq == before

    # -- reading ------------------------------------------------------------------------------

    @rule(slot=st.sampled_from(SLOTS), exclude=st.sampled_from(VALUES), ref=st.one_of(turns, ghosts))
    def read_tools(self, slot: str, exclude: str, ref: TurnRef) -> None:
        """The exact-id tools answer what the model says."""
        self._step()
        current = self.model.current_values().get(slot)
        for excluded in ([current[0]] if current else []) + [exclude]:
            got = self.mem.tool("get_predecessor_summary", {"fact_key": slot, "exclude_value": excluded})
            want = self.model.predecessor(slot, excluded)
            if want is None:
                assert not got.ok, got.text
            else:
                assert got.ok and got.text.startswith(
                    f"fact_key={slot}; value={want.value}; from {want.summary_id} "), (got.text, want)
        self._check_archived(ref.override_id())
        raw = self.mem.tool("get_raw_record", {"reference_id": ref.record_id})
        mt = self.model.turns.get(int(ref.record_id[1:]))
        assert raw.ok == (mt is not None and not mt.shredded), raw.text
        if mt is not None and raw.ok:
            assert f"USER: {mt.user}\nAGENT: {mt.agent}" in raw.text

    def _check_archived(self, sid: str) -> None:
        got = self.mem.tool("get_archived_summary", {"summary_id": sid})
        s = self.model.summaries.get(sid)
        if s is None or s.redacted:
            assert not got.ok, got.text
            return
        assert got.ok, got.text
        first = got.text.splitlines()[0]
        assert first.startswith(f"{sid} [turn {s.turn}; ") and first.endswith(_facts_tag(s.facts)), first
        assert ("archived (overridden)" in first) == (not s.live)
        end, seen = s, {sid}
        while end.superseded_by and end.superseded_by not in seen:
            seen.add(end.superseded_by)
            end = self.model.summaries[end.superseded_by]
        if end is not s:
            assert got.text.splitlines()[-1].endswith(f" from {end.summary_id}"), got.text

    @rule(slot=st.sampled_from(SLOTS), ref=st.one_of(turns, ghosts), use_tool=st.booleans())
    def ask(self, slot: str, ref: TurnRef, use_tool: bool) -> None:
        """A current-value question through the answer loop; the answer is recorded (sealed per answer)."""
        self._step()
        current = self.model.current_values().get(slot)
        sid = ref.override_id()
        self.answer_tool = f'get_archived_summary(summary_id="{sid}")' if use_tool else None
        self.answer_final = current[0] if current else "I don't know."
        before = self.ledger.last_seq
        answer = self.mem.ask(f"What is my {slot} now?")
        assert answer.text == self.answer_final
        assert answer.tool_calls == (1 if use_tool else 0)
        registry = "\n".join(i.text for i in answer.rendered.part("registry").items)
        for k, (v, _) in self.model.current_values().items():
            assert f"{k}={v}" in registry.splitlines()
        called = [e for e in self._new_events(before) if isinstance(e, ToolCalled)]
        if use_tool:
            direct = self.mem.tool("get_archived_summary", {"summary_id": sid})
            assert [(c.ok, c.text) for c in called] == [(direct.ok, direct.text)]
            self._check_archived(sid)
        else:
            assert not called

    @rule(ref=st.one_of(turns, ghosts), raw=st.booleans())
    def page_in(self, ref: TurnRef, raw: bool) -> None:
        """The page-in tool: an archived or indexed summary, or a record out of the window, comes back into the
        prompt as a `paged_in` event; an id never issued, an erased item or one already shown is refused."""
        self._step()
        item = ref.record_id if raw or ref.summary_id is None else ref.summary_id
        state = self.mem.state
        if item.startswith("s"):
            ms = self.model.summaries.get(item)
            can = ms is not None and not ms.redacted and state.summaries[item].status != "active"
        else:
            mt = self.model.turns.get(int(item[1:]))
            can = mt is not None and not mt.shredded and item not in state.window
        before = self.ledger.last_seq
        result = self.mem.tool("page_in", {"item_id": item})
        assert result.ok == can, (item, result.text)
        new = self._new_events(before)
        if not can:
            assert new == [], new
            return
        event("page_in: paged in")
        assert [(type(e), e.item_id, e.until_turn) for e in new if isinstance(e, PagedIn)] == [
            (PagedIn, item, state.turn + CONFIG.page_in_turns)]
        shown = self.mem.render().part("paged_in")
        assert item in shown.ids or item in shown.dropped, shown

    # -- after every step ---------------------------------------------------------------------

    @invariant()
    def agrees_with_the_model_and_the_audit(self) -> None:
        state = self.mem.state
        assert state.turn == self.model.turn
        assert state.current_values() == self.model.current_values(), (
            state.current_values(), self.model.current_values())
        if not self.model.erasures:
            assert self.model.current_values() == self.model.newest_live_values()
        assert list(state.summaries) == list(self.model.summaries)
        for sid, ms in self.model.summaries.items():
            s = state.summaries[sid]
            assert (s.status != "archived", s.redacted) == (ms.live, ms.redacted), (sid, s, ms)
        for t, mt in self.model.turns.items():
            assert (state.raw[mt.record_id].user == "[erased]") == mt.shredded, (t, mt)
        assert state.overrides_rejected == self.model.rejected
        if state.indexes:
            event("state: index titles exist")
        if any(not self.model.summaries[sid].live for _, sid in self.model.current_values().values()):
            event("state: a current value falls back to an archived summary")
        report = audit(self.ledger, self.projections)
        assert report.ok, json.dumps(report.as_dict(), indent=1, ensure_ascii=False, default=str)
        verified = self.ledger.verify()
        assert verified.ok, verified


_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]

FAST = settings(
    max_examples=min(settings().max_examples, 15),  # settings() is the loaded profile
    stateful_step_count=25,
    suppress_health_check=_QUIET,
)
# Hypothesis ends some runs early (about 15% of the nominal steps are not run), so the deep
# variant asks for ~14,850 steps to be sure of the 10,000 it must reach.
DEEP = settings(
    max_examples=450,
    stateful_step_count=33,
    suppress_health_check=_QUIET,
)
DEEP_FLOOR = 10_000


class TestMemoryStateMachine(MemoryMachine.TestCase):  # type: ignore[misc,valid-type]
    settings = FAST

    def runTest(self) -> None:
        start, t0 = STEPS["count"], time.perf_counter()
        super().runTest()
        print(f"\nstateful (fast): {STEPS['count'] - start} steps in {time.perf_counter() - t0:.1f}s")

    runTest.is_hypothesis_test = True  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("HYPOTHESIS_PROFILE") != "deep", reason="deep profile: HYPOTHESIS_PROFILE=deep")
class TestMemoryStateMachineDeep(MemoryMachine.TestCase):  # type: ignore[misc,valid-type]
    settings = DEEP

    def runTest(self) -> None:
        start, t0 = STEPS["count"], time.perf_counter()
        super().runTest()
        ran, took = STEPS["count"] - start, time.perf_counter() - t0
        print(f"\nstateful (deep): {ran} steps in {took:.1f}s")
        assert ran >= DEEP_FLOOR, f"the deep run executed {ran} stateful steps, fewer than {DEEP_FLOOR}"

    runTest.is_hypothesis_test = True  # type: ignore[attr-defined]


# --- regressions, outside the machine ------------------------------------------------------------
#
# Minimal reproductions of interrupted commits and erasures, each of which once left the memory
# inconsistent; the machine above explores the same failures at random.


def _memory_at(directory: str, response: dict[str, str]) -> tuple[Ledger, ProjectionStore, Memory]:
    path = os.path.join(directory, "memory.duckdb")
    ledger, store = Ledger(path), ProjectionStore(projection_path(path))
    backend = ScriptedBackend(lambda messages, purpose: response["text"])
    return ledger, store, Memory(ledger, STREAM, backend, config=CONFIG, projections=store)


def test_a_failed_projection_write_is_not_lost_when_the_memory_carries_on(tmp_path: object) -> None:
    """The projection write of a committed turn raises and the same Memory goes on.

    The projector must not keep the batch the store never got: otherwise the next write moves the
    stream's high-water mark past it and its rows are never written, not even on reopen.
    """
    response = {"text": contract("a", [("office floor", "3F")], [])}
    ledger, store, memory = _memory_at(str(tmp_path), response)
    try:
        memory.add_turn("my office floor is 3F", "ok")
        store.write = _crash_once(store.write)  # type: ignore[method-assign]
        response["text"] = contract("b", [("office floor", "7F")], ["s0001"])
        with pytest.raises(SimulatedCrash):
            memory.add_turn("my office floor is 7F", "ok")  # committed to the ledger, not to the projections
        response["text"] = contract("c", [("team size", "12F")], [])
        memory.add_turn("my team size is 12F", "ok")
        report = audit(ledger, store)
        assert report.ok, report.failed()
    finally:
        ledger.close()
        store.close()


def test_a_failed_key_shred_is_finished_without_reopening(tmp_path: object) -> None:
    """The key rewrite raises inside `erase`; the caller retries (refused: the facts already read as
    erased) and carries on. The keys named by `key_shredded` must not outlive the process."""
    response = {"text": contract("a", [("pet name", "copper-kettle-42")], [])}
    ledger, store, memory = _memory_at(str(tmp_path), response)
    try:
        memory.add_turn("my pet name is copper-kettle-42", "ok")
        keys = ledger.keys
        assert keys is not None
        keys.shred = _crash_once(keys.shred)  # type: ignore[method-assign]
        with pytest.raises(SimulatedCrash):
            memory.erase(legal_basis=BASES[0], slot="pet name")
        with contextlib.suppress(CommandRejected):
            memory.erase(legal_basis=BASES[0], slot="pet name")  # the caller retries
        response["text"] = "NONE"
        memory.add_turn("hello again", "ok")
        left = [k for k in memory.state.shredded_keys if k in keys]
        assert not left, f"keys named by key_shredded still exist: {left}"
        assert audit(ledger, store).ok
    finally:
        ledger.close()
        store.close()


def test_a_crash_between_key_rewrite_and_projection_rebuild_is_finished_on_reopen(tmp_path: object) -> None:
    """The keys are gone but the process dies before the projection file is rebuilt: the old file
    still holds the erased plaintext, and reopening must rebuild it although no key is pending."""
    response = {"text": contract("a", [("pet name", "copper-kettle-42")], [])}
    ledger, store, memory = _memory_at(str(tmp_path), response)
    store.rebuild_from = _dead  # type: ignore[method-assign]
    memory.add_turn("my pet name is copper-kettle-42", "ok")
    with pytest.raises(SimulatedCrash):
        memory.erase(legal_basis=BASES[0], slot="pet name")  # the process dies here
    ledger.close()
    store.close()
    ledger, store, memory = _memory_at(str(tmp_path), response)
    try:
        assert ledger.keys is not None
        assert not [k for k in memory.state.shredded_keys if k in ledger.keys]
        residue, _, _ = scan(ledger, STREAM, store, memory.render().text, {"copper-kettle-42"})
        assert not any(residue.values()), residue
        report = audit(ledger, store)
        assert report.ok, report.failed()
    finally:
        ledger.close()
        store.close()
