"""What a clause says, as either clause grammar reads it (``gate.grammar_en``, ``gate.grammar_zh``). Pure.

* ``Found``: a fact, ``slot = value`` ("my desk is 7F");
* ``Topic``: the user's slot named without its value ("my desk changed"), which
  a value in the next clause may answer;
* ``Anaphor``: a value without its slot ("it's 7F now"), which binds to the
  turn's open topic;
* ``Blocked``: a clause that rules out a fact, and why (someone else's, a plan);
* ``None``: nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Anaphor", "Blocked", "Clause", "Found", "Topic"]


@dataclass(frozen=True, slots=True)
class Found:
    slot: str
    value: str
    change: bool


@dataclass(frozen=True, slots=True)
class Topic:
    slot: str
    change: bool
    bare: bool = False  # "my locker? C12": the next clause may be the bare value
    back: bool = False  # "C12, that's my locker": the value stands in the clause before


@dataclass(frozen=True, slots=True)
class Anaphor:
    value: str
    change: bool


@dataclass(frozen=True, slots=True)
class Blocked:
    reason: str


Clause = Found | Topic | Anaphor | Blocked | None
