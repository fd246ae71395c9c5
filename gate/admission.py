"""Turn admission: which turns are summarised, by gate level and by source policy. Pure.

Levels (`MemoryConfig.gate_level`):

* `off`: every turn goes to the summarizer.
* `loose`: all but plain questions (a question is not an update unless it
  carries an explicit change verb) and small talk (three words or fewer with
  no fact, constraint or open loop).
* `pattern`: only turns where the lexical detectors find a fact, a hard
  constraint or an open loop.
* `strict`: as `pattern`; in addition, a summary fact the detector did not
  find in the turn is kept as an inference, never as a fact (see
  `gate.provenance`).

A source policy with `remember: false` keeps the source's turns as raw
records only, whatever the level.
"""

from __future__ import annotations

import re

from ledgermem.gate.commitments import detect_commitments
from ledgermem.gate.lexicon import detect_facts, is_question
from ledgermem.projections.config import MemoryConfig

_WORD = re.compile(r"[\w\u3400-\u9fff]")


def remembered(config: MemoryConfig, source: str | None) -> bool:
    policy = config.source_policies.get(source or "", {}) if source else {}
    return bool(policy.get("remember", True))


def gate_verdict(config: MemoryConfig, user: str, source: str | None) -> str:
    """Why this turn is not summarised, or "" when it is."""
    if not remembered(config, source):
        return f"source {source!r} is not remembered (source policy)"
    level = config.gate_level
    if level == "off":
        return ""
    facts = detect_facts(user)
    signal = bool(facts) or bool(detect_commitments(user))
    if level == "loose":
        if is_question(user) and not any(f.change for f in facts) and not signal:
            return "loose: a question without a change verb"
        if not signal and len(user.split()) <= 3 and len(_WORD.findall(user)) <= 16:
            return "loose: small talk"
        return ""
    if not signal:
        return f"{level}: no fact, constraint or open loop detected"
    return ""
