"""The phrasing corpus: how people state, update and ask about their own attributes.

``datasets/phrasing/{en,zh}.{dev,heldout}.json`` hold frames in families
(see ``datasets/phrasing/README.md``). The held-out half was written before
the fact grammar and the question parser and is never used to tune them;
this module only loads frames and checks their shape. The grammar is measured
on either half by ``evaluation.phrasing``.

The synthetic generator (``datasets.synthetic``) samples its user turns
and questions from the same families.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from ledgermem.datasets.errors import PhrasingError

__all__ = ["HALVES", "PARTS", "Corpus", "Frame", "PhrasingError", "load_corpus"]

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
    folder = resources.files("ledgermem.datasets").joinpath("phrasing")
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
        raw = resources.files("ledgermem.datasets").joinpath("phrasing", name).read_text(encoding="utf-8")
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise PhrasingError(f"{name}: not valid JSON: {exc}") from None
        _check(name, data)
        frames += [Frame(family=family["family"], kind=family["kind"], text=frame["text"], asks=frame.get("asks"))
                   for family in data["families"] for frame in family["frames"]]
        slots += [(s["slot"], tuple(s["values"])) for s in data["slots"]]
    return Corpus(lang=lang, half=half, slots=tuple(slots), frames=tuple(frames))
