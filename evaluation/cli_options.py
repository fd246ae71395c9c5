"""Command-line options shared by `run` and `sweep`: gate level, context budget, source policies.

`--source-policy SOURCE=SETTING` is repeatable; the settings of one source
add up:

    --source-policy web=remember:false          keep the source's turns as raw records only
    --source-policy web=strip:'^Note from.*?\\.'  remove matches from its text before the window and
                                                summarizer see it (repeatable: every pattern applies)

The result is `MemoryConfig.source_policies`, recorded in the run's
configuration like every other memory setting, so a resumed run with other
policies is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import click

from projections.config import GATE_LEVELS, MemoryConfig

__all__ = ["SourcePolicyError", "context_options", "gate_level_option", "parse_source_policies"]

_SOURCE = re.compile(r"[A-Za-z0-9_.:-]+")
_BOOLS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


class SourcePolicyError(ValueError):
    """A `--source-policy` value that cannot be read; the message names the value and the fix."""


def _one(text: str) -> tuple[str, str, Any]:
    source, sep, setting = text.partition("=")
    source = source.strip()
    if not sep or not _SOURCE.fullmatch(source):
        raise SourcePolicyError(f"{text!r}: expected SOURCE=remember:false or SOURCE=strip:REGEX, where SOURCE is "
                                "a source name such as web (letters, digits, _ . : -)")
    key, sep, value = setting.partition(":")
    key = key.strip()
    if key == "remember" and sep:
        flag = _BOOLS.get(value.strip().lower())
        if flag is None:
            raise SourcePolicyError(f"{text!r}: remember takes true or false, not {value!r}")
        return source, key, flag
    if key == "strip" and sep:
        try:
            re.compile(value)
        except re.error as exc:
            raise SourcePolicyError(f"{text!r}: strip takes a regular expression; {value!r} is not one ({exc})") \
                from None
        if not value:
            raise SourcePolicyError(f"{text!r}: strip needs a non-empty regular expression")
        return source, key, value
    raise SourcePolicyError(f"{text!r}: unknown setting {setting!r}; use remember:true|false or strip:REGEX")


def parse_source_policies(values: Iterable[str]) -> dict[str, dict[str, Any]]:
    """`{"<source>": {"remember": bool, "strip": [regex, ...]}}` from repeated `SOURCE=SETTING` values."""
    policies: dict[str, dict[str, Any]] = {}
    for text in values:
        source, key, value = _one(text)
        policy = policies.setdefault(source, {})
        if key == "strip":
            policy.setdefault("strip", []).append(value)
        elif policy.get("remember", value) != value:
            raise SourcePolicyError(f"{text!r}: {source}'s remember is given twice with different values")
        else:
            policy["remember"] = value
    return policies


def _policies(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    try:
        return parse_source_policies(values)
    except SourcePolicyError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def gate_level_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--gate-level", type=click.Choice(GATE_LEVELS), default="off", show_default=True,
                        help="Which turns three_layer summarises: off (all), loose, pattern, strict.")(fn)


def context_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--context-budget` and `--source-policy` (parsed into a policies dict)."""
    fn = click.option("--source-policy", "source_policies", multiple=True, callback=_policies,
                      metavar="SOURCE=remember:false|strip:REGEX",
                      help="Per-source behaviour of three_layer (repeatable), e.g. web=remember:false keeps "
                           "web turns as raw records only. Baselines ignore sources.")(fn)
    return click.option("--context-budget", type=click.IntRange(min=1), default=MemoryConfig().context_budget,
                        show_default=True, help="Token budget of the whole rendered memory in an answer prompt.")(fn)
