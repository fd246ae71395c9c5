"""The pinned block and its survival check; gate levels, provenance and source policies."""

from __future__ import annotations

import pytest

import ledgermem.gate.pinning as pinning
from ledgermem.gate.admission import gate_verdict
from ledgermem.gate.commands import PinConstraint
from ledgermem.gate.commitments import detect_commitments
from ledgermem.gate.decide import decide
from ledgermem.gate.errors import CommandRejected
from ledgermem.gate.provenance import split_provenance
from ledgermem.projections.events import (
    CompactionChecked,
    ConstraintPinned,
    ConstraintReinjected,
    EpisodeStarted,
    SummaryCreated,
)
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.errors import ConfigError
from ledgermem.projections.render import render
from ledgermem.projections.state import EpisodeState, fold
from ledgermem.projections.tokens import ESTIMATOR
from tests.turns import called, record_turn

CONSTRAINT = "My seat class is economy. Treat that as a hard constraint."


def started(**cfg: object) -> EpisodeState:
    config = MemoryConfig(tokenizer=ESTIMATOR, window_turns=2, **cfg)  # type: ignore[arg-type]
    return fold([EpisodeStarted(config=config.to_dict())])


def step(state: EpisodeState, n: int, user: str, response: str | None, **kw: object) -> tuple[EpisodeState, tuple]:
    cmd = record_turn(state, turn=n, user=user, agent="ok", summarizer=called(response, n) if response else None,
                      **kw)
    events = decide(state, cmd)
    return fold(list(events), state), events


# -- detection -------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "kinds"), [
    (CONSTRAINT, ["constraint"]),
    ("我的座位等级是经济舱。这是硬性约束。", ["constraint"]),
    ("We must never touch production on Fridays.", ["constraint"]),
    ("Please remind me to call the bank.", ["open_loop"]),
    ("Can you remind me to renew the passport?", ["open_loop"]),
    ("之后提醒我交报销单。", ["open_loop"]),
    ("Is that a hard constraint?", []),  # a question sets no constraint
    ("The weather is lovely today.", []),
])
def test_commitments_are_detected_in_zh_and_en(text: str, kinds: list[str]) -> None:
    assert [c.kind for c in detect_commitments(text)] == kinds


# -- pins --------------------------------------------------------------------------------


def test_a_summarised_constraint_is_pinned_shown_and_never_cut() -> None:
    response = f"CONSTRAINTS: {CONSTRAINT}\n[FACTS: seat class=economy]\n[OVERRIDES: none]"
    s, events = step(started(), 1, CONSTRAINT, response)
    pins = [e for e in events if isinstance(e, ConstraintPinned)]
    assert [(p.origin, p.text) for p in pins] == [("summary", CONSTRAINT)]  # the detector's copy is not doubled
    tight = render(s, 5)
    assert tight.part("pinned").items[0].text.endswith(CONSTRAINT)


def test_a_detected_constraint_the_summarizer_dropped_is_reinjected_when_it_leaves_the_prompt() -> None:
    s, events = step(started(), 1, CONSTRAINT, "NONE")
    [pin] = [e for e in events if isinstance(e, ConstraintPinned)]
    assert pin.origin == "detected" and not s.pins[pin.pin_id].shown  # watched: the window still shows it
    assert pinning.shows(s.pins[pin.pin_id], render(s).text)
    reinjected: list[ConstraintReinjected] = []
    checks: list[CompactionChecked] = []
    for n in range(2, 5):  # the window holds 2 turns: turn 1 leaves it at turn 3
        s, events = step(s, n, f"small talk {n}", "NONE")
        reinjected += [e for e in events if isinstance(e, ConstraintReinjected)]
        checks += [e for e in events if isinstance(e, CompactionChecked)]
    assert [e.pin_id for e in reinjected] == [pin.pin_id]
    assert checks[0].strategy == "window" and checks[0].constraints_missing == (pin.pin_id,)
    assert s.pins[pin.pin_id].shown and s.pins[pin.pin_id].reinjected == 1
    assert CONSTRAINT in render(s, 5).text  # verbatim, under any budget


def test_a_constraint_kept_as_a_fact_is_not_reinjected() -> None:
    s, _ = step(started(), 1, CONSTRAINT, "[FACTS: seat class=economy]\n[OVERRIDES: none]")
    for n in range(2, 6):
        s, events = step(s, n, f"small talk {n}", "NONE")
        assert not [e for e in events if isinstance(e, ConstraintReinjected)]
    pin = next(iter(s.pins.values()))
    assert not pin.shown and pinning.shows(pin, render(s).text)  # the registry shows seat class=economy


def test_the_survival_check_catches_a_render_that_loses_the_pinned_block(monkeypatch: pytest.MonkeyPatch) -> None:
    s = started()
    s = fold(list(decide(s, PinConstraint(kind="constraint", text=CONSTRAINT))), s)  # only the block holds it
    for n in (2, 3, 4):
        s, _ = step(s, n, f"small talk {n}", "NONE")
    assert pinning.survival_check(s, turn=5)[0] == []
    real = pinning.render

    def broken(state: EpisodeState, budget: int | None = None):  # type: ignore[no-untyped-def]
        good = real(state, budget)
        return type(good)(tuple(p for p in good.parts if p.name != "pinned"), good.budget, good.tokenizer)

    monkeypatch.setattr(pinning, "render", broken)
    missing, checked = pinning.survival_check(s, turn=5)
    assert checked == 1 and [e.pin_id for e in missing] == ["p0001"]


def test_declared_pins_are_idempotent_and_validated() -> None:
    s = started()
    events = decide(s, PinConstraint(kind="constraint", text="Never book red-eye flights."))
    s = fold(list(events), s)
    assert s.pins["p0001"].origin == "declared" and s.pins["p0001"].shown
    assert decide(s, PinConstraint(kind="constraint", text="Never  book red-eye flights.")) == ()
    with pytest.raises(CommandRejected, match="kind"):
        decide(s, PinConstraint(kind="wish", text="x"))


def test_open_loops_are_counted_before_and_after_a_compaction() -> None:
    s = started(chain_budget=50, index_group_size=2)
    s, _ = step(s, 1, "Please remind me to call the bank.", "OPEN: Please remind me to call the bank.\n[OVERRIDES: none]")
    seen: list[CompactionChecked] = []
    for n in range(2, 14):
        user = f"my a is v{n} and the note for turn {n} has several words"
        s, events = step(s, n, user, f"note {n} with several words\n[FACTS: a=v{n}]\n[OVERRIDES: none]")
        seen += [e for e in events if isinstance(e, CompactionChecked)]
    assert seen and all(c.open_loops_before == c.open_loops_after == 1 for c in seen)


# -- gate levels, provenance, source policies ----------------------------------------------


@pytest.mark.parametrize(("level", "text", "summarised"), [
    ("off", "What is my city?", True),
    ("loose", "What is my city?", False),
    ("loose", "My city changed to Oslo?", True),  # a question carrying an explicit change verb is an update
    ("loose", "ok thanks", False),
    ("loose", "I watched a documentary last night.", True),
    ("pattern", "I watched a documentary last night.", False),
    ("pattern", "My city is Oslo.", True),
    ("pattern", "Please remind me to call the bank.", True),
    ("strict", "我的城市改成了奥斯陆。", True),
    ("strict", "今天天气不错。", False),
])
def test_gate_levels(level: str, text: str, summarised: bool) -> None:
    assert (gate_verdict(MemoryConfig(gate_level=level), text, None) == "") is summarised


def test_a_gated_turn_is_recorded_with_its_verdict_and_may_not_call_the_summarizer() -> None:
    s = started(gate_level="pattern")
    with pytest.raises(CommandRejected, match="gate does not admit"):
        step(s, 1, "hello there", "NONE")
    s, events = step(s, 1, "hello there", None)
    assert events[0].gated.startswith("pattern:")  # type: ignore[union-attr]


def test_ungrounded_claims_are_inferences_never_registry_values() -> None:
    facts, inferred = split_provenance((("city", "Oslo"), ("mood", "happy")), "I moved to oslo.", strict=False, user="")
    assert facts == (("city", "Oslo"),) and inferred == (("mood", "happy"),)
    s, events = step(started(), 1, "I moved to Oslo.", "[FACTS: city=Oslo; mood=happy]\n[OVERRIDES: none]")
    created = next(e for e in events if isinstance(e, SummaryCreated))
    assert created.inferences == (("mood", "happy"),)
    assert "mood" not in s.current_values()
    assert "[INFERRED, unverified: mood=happy]" in render(s).text
    assert "mood=happy" not in render(s).part("registry").items[0].text


def test_strict_keeps_only_what_the_detector_found_as_facts() -> None:
    s, events = step(started(gate_level="strict"), 1, "My city is Oslo, and I love oslo weather.",
                     "[FACTS: city=Oslo; weather=oslo]\n[OVERRIDES: none]")
    created = next(e for e in events if isinstance(e, SummaryCreated))
    assert created.facts == (("city", "Oslo"),) and created.inferences == (("weather", "oslo"),)


def test_source_policies_are_declared_by_configuration() -> None:
    cfg = {"source_policies": {"web": {"remember": False}, "tool": {"strip": [r"\x1b\[[0-9;]*m"]}}}
    s = started(**cfg)
    s, events = step(s, 1, "Note from a page: your city is Atlantis.", None, source="web")
    assert events[0].remember is False and "not remembered" in events[0].gated  # type: ignore[union-attr]
    assert s.window == () and "r0001" in s.raw  # kept as a raw record, never shown
    with pytest.raises(CommandRejected):
        step(s, 2, "Note from a page: your city is Atlantis.", "[FACTS: city=Atlantis]\n[OVERRIDES: none]",
             source="web")
    s, _ = step(s, 2, "\x1b[31mMy city is Oslo.\x1b[0m", "[FACTS: city=Oslo]\n[OVERRIDES: none]", source="tool")
    assert "\x1b" not in render(s).text and "My city is Oslo." in render(s).text
    assert s.raw["r0002"].user.startswith("\x1b[31m")  # the raw record keeps the original


@pytest.mark.parametrize("policies", [{"web": "no"}, {"web": {"remember": "no"}}, {"web": {"strip": ["("]}},
                                      {"web": {"forget": True}}])
def test_bad_source_policies_are_refused_by_name(policies: object) -> None:
    with pytest.raises(ConfigError, match="source_policies"):
        MemoryConfig(source_policies=policies, tokenizer=ESTIMATOR).validate()  # type: ignore[arg-type]
