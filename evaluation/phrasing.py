"""The fact grammar measured on the phrasing corpus (``datasets.phrasing``), on either half:

* ``measure_detector(lang, half)``: precision and recall of
  ``gate.lexicon.detect_facts`` over every statement, update and distractor
  frame filled with every slot of that half (each frame with a few values);
* ``measure_questions(lang, half)``: how often ``gate.lexicon.parse_question``
  reads a question frame's slot and what it asks.

The held-out half was written before the grammar and is never used to tune it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ledgermem.datasets.phrasing import Corpus, Frame, load_corpus
from ledgermem.gate.lexicon import detect_facts, normalise_slot, parse_question

__all__ = ["DetectorScore", "QuestionScore", "measure_detector", "measure_questions"]


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
