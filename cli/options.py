"""Command-line options shared by the commands: every option two commands take is declared here once.

`--runs-dir`, `--json` and `--keys` mean the same in every command that
takes them; `run` and `sweep` share the gate level, context budget and
source policies.

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
from pathlib import Path
from typing import Any

import click

from ledgermem.evaluation.errors import SourcePolicyError
from ledgermem.projections.config import GATE_LEVELS, MemoryConfig

__all__ = ["SourcePolicyError", "context_options", "gate_level_option", "json_option", "keys_option",
           "kept_runs_dir_option", "memory_options", "parse_source_policies", "run_id_option", "runs_dir_option"]

_SOURCE = re.compile(r"[A-Za-z0-9_.:-]+")
_BOOLS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


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


def run_id_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--run-id` callback: a run id is a name, never a path (memory.names); a usage error otherwise."""
    from ledgermem.memory.errors import InvalidRunId
    from ledgermem.memory.names import validate_run_id

    try:
        return None if value is None else validate_run_id(value)
    except InvalidRunId as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


# -- where runs are, how results are printed -------------------------------------------


def _runs_dir(default: str | None, help: str | None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option("--runs-dir", default=default, show_default=default is not None,
                        type=click.Path(file_okay=False), help=help)


#: `--runs-dir`: the folder a RUN id is looked up in (and a new run is written to).
runs_dir_option = _runs_dir("runs", None)
#: `--runs-dir` of `sweep`, which makes its runs in a temporary folder unless told to keep them.
kept_runs_dir_option = _runs_dir(None, "Keep the sweep's runs here (default: a temporary folder, removed afterwards).")
#: `--keys`: the key store of a Parquet export of a run with personal data.
keys_option = click.option("--keys", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
                           help="Key store for a Parquet export of a run with personal data.")


def json_option(help: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--json` (the `as_json` parameter): the command's result as JSON on stdout instead of tables."""
    return click.option("--json", "as_json", is_flag=True, help=help)


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


# -- LLM backend settings ---------------------------------------------------------------

#: `--PURPOSE-opt FIELD=VALUE` field names, and the settings field each sets (memory.settings.FIELDS).
OPT_FIELDS = {"base_url": "base_url", "model": "model", "timeout": "timeout_s", "max_retries": "max_retries",
              "backoff_base": "backoff_base_s", "backoff_max": "backoff_max_s", "temperature": "temperature",
              "max_tokens": "max_tokens", "stop": "stop"}
OPT_PURPOSES = ("answer", "respond", "summarize", "judge")
_LLM_META = "ledgermem.llm_flags"


def parse_backend_opts(purpose: str, values: Iterable[str]) -> dict[str, Any]:
    """`{"model": "m", "stop": ["a", "b"], ...}` (settings field names) from repeated `FIELD=VALUE`."""
    out: dict[str, Any] = {}
    for text in values:
        name, sep, value = text.partition("=")
        name = name.strip().replace("-", "_")
        if name == "api_key":
            raise SourcePolicyError("api_key=...: keys are not taken on the command line (they would stay in the "
                                    f"shell's history); set LEDGERMEM_{purpose.upper()}_API_KEY in the environment "
                                    "or the .env file")
        if not sep or name not in OPT_FIELDS:
            raise SourcePolicyError(f"{text!r}: expected FIELD=VALUE with FIELD one of {', '.join(OPT_FIELDS)}")
        field = OPT_FIELDS[name]
        if field == "stop":
            out.setdefault("stop", []).append(value)
        elif field in out:
            raise SourcePolicyError(f"{text!r}: {name} is given twice for {purpose}")
        else:
            out[field] = value
    return out


def _store(purpose: str, field: str | None) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        flags: dict[str, dict[str, Any]] = ctx.meta.setdefault(_LLM_META, {})
        if field is None:  # a --PURPOSE-opt option
            try:
                parsed = parse_backend_opts(purpose, value)
            except SourcePolicyError as exc:
                raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
            if parsed:
                flags.setdefault(purpose, {}).update(parsed)
        elif value not in (None, ()):
            flags.setdefault(purpose, {})[field] = list(value) if isinstance(value, tuple) else value
        return value
    return callback


def llm_flags(ctx: click.Context) -> dict[str, dict[str, Any]]:
    """What `llm_options` collected: {"all": {...}, "<purpose>": {...}} by settings field name."""
    return {k: dict(v) for k, v in ctx.meta.get(_LLM_META, {}).items()}


def llm_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Backend settings for every purpose, and `--PURPOSE-opt FIELD=VALUE` for one purpose.

    Collected into `llm_flags(ctx)` rather than passed as parameters, so
    the command's signature does not grow by four purposes times nine
    fields. A per-purpose value beats the one for every purpose; both beat
    the environment and the .env file (see memory.settings).
    """
    for purpose in reversed(OPT_PURPOSES):
        fn = click.option(f"--{purpose}-opt", multiple=True, expose_value=False, callback=_store(purpose, None),
                          metavar="FIELD=VALUE",
                          help=f"A backend setting for {purpose} calls only (repeatable): "
                               f"{', '.join(OPT_FIELDS)}; e.g. max_tokens=128, stop=</s>.")(fn)
    for flag, field, kind, text in reversed((
        ("--max-tokens", "max_tokens", click.IntRange(min=1),
         "Cap on each completion's tokens (default: answer 512, respond 1024, summarize 256, judge 16)."),
        ("--temperature", "temperature", click.FloatRange(min=0), "Sampling temperature (default 0)."),
        ("--backoff-base", "backoff_base_s", click.FloatRange(min=0),
         "Seconds: first retry's backoff ceiling, doubled per retry (default 0.5)."),
        ("--backoff-max", "backoff_max_s", click.FloatRange(min=0),
         "Seconds: cap on any wait before a retry, Retry-After and timeouts included (default 30)."),
    )):
        fn = click.option(flag, type=kind, default=None, expose_value=False, callback=_store("all", field),
                          help=text)(fn)
    return click.option("--stop", multiple=True, expose_value=False, callback=_store("all", "stop"),
                        metavar="TEXT", help="A stop sequence (repeatable; \\n is a newline).")(fn)


# -- memory settings --------------------------------------------------------------------


def _memory_opts(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    from ledgermem.memory.errors import ConfigError
    from ledgermem.memory.settings import parse_memory_options

    try:
        return parse_memory_options(values)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def memory_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--memory-option KEY=VALUE` (repeatable), parsed into `{key: text}`; resolved by memory.settings."""
    from ledgermem.memory.settings import MEMORY_FIELDS

    return click.option("--memory-option", "memory_option", multiple=True, callback=_memory_opts,
                        metavar="KEY=VALUE",
                        help="A memory setting (repeatable); beats LEDGERMEM_<KEY> in the environment, which beats "
                             f"the .env file. KEY: {', '.join(MEMORY_FIELDS)}. "
                             "E.g. registry_max_slots=20, registry_enabled=false, high_water=0.9.")(fn)


def given_flags(ctx: click.Context, names: Iterable[str]) -> dict[str, Any]:
    """The values of the options among `names` that were given on the command line (not left at their default)."""
    from click.core import ParameterSource

    return {n: ctx.params[n] for n in names
            if n in ctx.params and ctx.get_parameter_source(n) not in (ParameterSource.DEFAULT, None)}
