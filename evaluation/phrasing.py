"""The phrasing corpus: how people state, update and ask about their own attributes.

``evaluation/phrasing/{en,zh}.{dev,heldout}.json`` hold frames in families
(see ``evaluation/phrasing/README.md``). The held-out half was written before
the fact grammar and the question parser and is never used to tune them;
this module only loads frames, fills them with slots and values, and measures
the grammar on either half:

* ``measure_detector(lang, half)``: precision and recall of
  ``gate.lexicon.detect_facts`` over every statement, update and distractor
  frame filled with every slot of that half (each frame with a few values);
* ``measure_questions(lang, half)``: how often ``gate.lexicon.parse_question``
  reads a question frame's slot and what it asks.

The synthetic generator (``evaluation.synthetic``) samples its user turns
and questions from the same families.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from evaluation.errors import PhrasingError
from gate.lexicon import detect_facts, normalise_slot, parse_question

__all__ = ["HALVES", "PARTS", "Corpus", "Frame", "load_corpus", "measure_detector", "measure_questions"]

HALVES = ("dev", "heldout")
#: The halves, and "extra": more development phrasing by other writers (``{lang}.devN.json``), used to widen the
#: rules beyond the dev half's author; like the dev half it may be read while writing rules, unlike the held-out.
PARTS = ("dev", "extra", "heldout")
Half = Literal["dev", "extra", "heldout"]
Kind = Literal["statement", "update", "question", "distractor"]
_KINDS = ("statement", "update", "question", "distractor")
_ASKS = ("current", "previous", "before", "original")


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    family: str
    kind: Kind
    text: str
    asks: str | None = None

    def fill(self, *, slot: str, value: str = "", old: str = "", anchor: str = "") -> str:
        return (self.text.replace("{slot}", slot).replace("{value}", value)
                .replace("{old}", old).replace("{anchor}", anchor))


@dataclass(frozen=True, slots=True, kw_only=True)
class Corpus:
    lang: str
    half: str
    slots: tuple[tuple[str, tuple[str, ...]], ...]
    frames: tuple[Frame, ...]

    def of(self, kind: str, asks: str | None = None) -> tuple[Frame, ...]:
        return tuple(f for f in self.frames if f.kind == kind and (asks is None or f.asks == asks))


def _check(name: str, data: Any) -> None:
    if not isinstance(data, dict) or not isinstance(data.get("families"), list):
        raise PhrasingError(f"{name}: expected an object with 'families'")
    for family in data["families"]:
        kind = family.get("kind")
        if kind not in _KINDS:
            raise PhrasingError(f"{name}: family {family.get('family')!r}: kind {kind!r} is not one of {_KINDS}")
        for frame in family.get("frames", []):
            text = frame.get("text", "")
            if "{slot}" not in text:
                raise PhrasingError(f"{name}: family {family['family']!r}: frame {text!r} has no {{slot}}")
            if kind == "question" and frame.get("asks") not in _ASKS:
                raise PhrasingError(f"{name}: family {family['family']!r}: frame {text!r}: asks must be one of {_ASKS}")
            if kind == "question" and frame["asks"] == "before" and "{anchor}" not in text:
                raise PhrasingError(f"{name}: family {family['family']!r}: frame {text!r} asks 'before' without {{anchor}}")
            if kind in ("statement", "update") and "{value}" not in text:
                raise PhrasingError(f"{name}: family {family['family']!r}: frame {text!r} has no {{value}}")


def _files(lang: str, half: str) -> list[str]:
    """The corpus files of a part: ``{lang}.dev.json``, ``{lang}.heldout.json``, or every ``{lang}.devN.json``."""
    folder = resources.files("evaluation").joinpath("phrasing")
    names = sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".json"))
    if half == "extra":
        return [n for n in names if n.startswith(f"{lang}.dev") and n[len(lang) + 4:-5].isdigit()]
    return [n for n in names if n == f"{lang}.{half}.json"]


@cache
def load_corpus(lang: str, half: str) -> Corpus:
    """The frames and slots of one language and half (a half may span several files)."""
    if half not in PARTS:
        raise PhrasingError(f"phrasing half must be one of {PARTS}, got {half!r}")
    names = _files(lang, half)
    if not names:
        raise PhrasingError(f"no phrasing corpus {lang}.{half}.json (languages: en, zh)")
    frames: list[Frame] = []
    slots: list[tuple[str, tuple[str, ...]]] = []
    for name in names:
        raw = resources.files("evaluation").joinpath("phrasing", name).read_text(encoding="utf-8")
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise PhrasingError(f"{name}: not valid JSON: {exc}") from None
        _check(name, data)
        frames += [Frame(family=family["family"], kind=family["kind"], text=frame["text"], asks=frame.get("asks"))
                   for family in data["families"] for frame in family["frames"]]
        slots += [(s["slot"], tuple(s["values"])) for s in data["slots"]]
    return Corpus(lang=lang, half=half, slots=tuple(slots), frames=tuple(frames))


@dataclass(frozen=True, slots=True, kw_only=True)
class DetectorScore:
    lang: str
    half: str
    expected: int      # statement and update sentences
    found: int         # of those, the (slot, value) detected exactly
    reported: int      # every mention the detector returned, distractors included
    correct: int       # mentions that are the expected fact
    distractors: int
    distractor_hits: int
    misses: tuple[str, ...]
    false_positives: tuple[str, ...]

    @property
    def recall(self) -> float:
        return self.found / self.expected if self.expected else 0.0

    @property
    def precision(self) -> float:
        return self.correct / self.reported if self.reported else 1.0


def _cases(corpus: Corpus, per_frame: int, seed: int) -> list[tuple[Frame, str, str, str]]:
    """(frame, slot, value, old) for every frame × slot, ``per_frame`` values each."""
    rng = random.Random(seed)
    cases = []
    for frame in corpus.frames:
        if frame.kind == "question":
            continue
        for slot, values in corpus.slots:
            for value in rng.sample(values, min(per_frame, len(values))):
                old = rng.choice([v for v in values if v != value])
                cases.append((frame, slot, value, old))
    return cases


def measure_detector(lang: str, half: str, *, per_frame: int = 2, seed: int = 11) -> DetectorScore:
    """Precision and recall of ``detect_facts`` on one half of the corpus."""
    corpus = load_corpus(lang, half)
    expected = found = reported = correct = distractors = hits = 0
    misses: list[str] = []
    false: list[str] = []
    for frame, slot, value, old in _cases(corpus, per_frame, seed):
        text = frame.fill(slot=slot, value=value, old=old)
        mentions = detect_facts(text)
        reported += len(mentions)
        if frame.kind == "distractor":
            distractors += 1
            if any(m.value in (value, old) or normalise_slot(slot) == m.slot for m in mentions):
                hits += 1
            false.extend(f"{text!r} -> {m.slot}={m.value}" for m in mentions)
            continue
        expected += 1
        target = (normalise_slot(slot), value)
        good = [m for m in mentions if (m.slot, m.value) == target]
        correct += len(good)
        if good:
            found += 1
        else:
            misses.append(f"{text!r} -> {[(m.slot, m.value) for m in mentions]}")
        false.extend(f"{text!r} -> {m.slot}={m.value}" for m in mentions if (m.slot, m.value) != target)
    return DetectorScore(lang=lang, half=half, expected=expected, found=found, reported=reported,
                         correct=correct, distractors=distractors, distractor_hits=hits,
                         misses=tuple(misses), false_positives=tuple(false))


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionScore:
    lang: str
    half: str
    asked: int
    understood: int
    misses: tuple[str, ...]

    @property
    def accuracy(self) -> float:
        return self.understood / self.asked if self.asked else 0.0


def measure_questions(lang: str, half: str, *, seed: int = 11) -> QuestionScore:
    """How often ``parse_question`` reads a question frame's slot, what it asks, and its anchor.

    The parser is told only the slot's current value, as a prompt shows it: an
    anchor ("before 7F") must be read from the question itself.
    """
    corpus = load_corpus(lang, half)
    rng = random.Random(seed)
    slots = [normalise_slot(s) for s, _ in corpus.slots]
    asked = understood = 0
    misses: list[str] = []
    for frame in corpus.of("question"):
        for slot, values in corpus.slots:
            history = rng.sample(values, 3)
            anchor = history[1]
            text = frame.fill(slot=slot, anchor=anchor)
            known = {normalise_slot(slot): history[2:]}  # what a prompt shows: the current value only
            intent = parse_question(text, slots, known)
            asked += 1
            want = (normalise_slot(slot), frame.asks, anchor if frame.asks == "before" else None)
            got = (intent.slot, intent.asks, intent.anchor) if intent else None
            if got == want:
                understood += 1
            else:
                misses.append(f"{text!r}: {got} != {want}")
    return QuestionScore(lang=lang, half=half, asked=asked, understood=understood, misses=tuple(misses))
