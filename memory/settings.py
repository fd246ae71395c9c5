"""Settings of the HTTP backends: CLI flag > environment > `.env` file > preset > default.

Each model call has a purpose (`answer`, `respond`, `summarize`, `judge`),
and each purpose may use its own server, model, key and limits. For every
field the first of these that is set wins:

    1. the flag (a value of None means "not given"); the caller merges a
       per-purpose flag over the flag for every purpose
    2. the environment: LEDGERMEM_<PURPOSE>_<FIELD>, then LEDGERMEM_<FIELD>
    3. the `.env` file: the same names
    4. the preset (its base URL, its default model)
    5. the purpose's default (`PURPOSE_DEFAULTS`: the `max_tokens` caps), then
       the default of `HttpSettings`

The environment fields are BASE_URL, MODEL, API_KEY, TIMEOUT, MAX_RETRIES,
BACKOFF_BASE, BACKOFF_MAX, TEMPERATURE, MAX_TOKENS and STOP. STOP is a JSON
array of strings (`["\\n\\n", "</s>"]`) or one plain stop sequence in which
`\\n`, `\\t` and `\\\\` stand for a newline, a tab and a backslash. For the key, the
provider's own variable (`DEEPSEEK_API_KEY`, `OPENAI_API_KEY`) is read after
ours, in the environment and then in `.env`. An empty value counts as not
set, so `LEDGERMEM_API_KEY=` in a `.env` file does not hide a key set
elsewhere. The `.env` file is read with python-dotenv without touching
`os.environ`, and its values are taken literally (no `${VAR}` expansion), so
the result depends only on the arguments.

The memory's own settings (`MemoryConfig`: window, hysteresis, index and
merge parameters, the registry's limits, budgets) resolve the same way,
without presets: `--memory-option KEY=VALUE` or the command's own flag >
LEDGERMEM_<KEY> in the environment > the same name in `.env` > the default
(`resolve_memory_settings`).

A setting that is missing, unknown or not a number raises `ConfigError`
(memory.errors; the one configuration error, defined in projections.errors).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dotenv import dotenv_values

from ledgermem.memory.errors import ConfigError
from ledgermem.memory.http_backend import PRESETS, HttpSettings, Preset
from ledgermem.projections.config import MemoryConfig

PURPOSES = ("answer", "respond", "summarize", "judge")
ENV_PREFIX = "LEDGERMEM"
#: Every settings field, and its variable suffix (LEDGERMEM_<PURPOSE>_<SUFFIX>, LEDGERMEM_<SUFFIX>).
ENV_FIELDS: Mapping[str, str] = {
    "base_url": "BASE_URL",
    "model": "MODEL",
    "api_key": "API_KEY",
    "timeout_s": "TIMEOUT",
    "max_retries": "MAX_RETRIES",
    "backoff_base_s": "BACKOFF_BASE",
    "backoff_max_s": "BACKOFF_MAX",
    "temperature": "TEMPERATURE",
    "max_tokens": "MAX_TOKENS",
    "stop": "STOP",
}
FIELDS = tuple(ENV_FIELDS)
#: Defaults that depend on the purpose: a cap on every completion, so a small model that never stops
#: cannot generate until its context is full. A summary is bounded by the chain's budget, an answer is
#: a sentence or a tool call, a reply also carries its memory-update block, a verdict is one word.
PURPOSE_DEFAULTS: Mapping[str, Mapping[str, object]] = {
    "answer": {"max_tokens": 512},
    "respond": {"max_tokens": 1024},
    "summarize": {"max_tokens": 256},
    "judge": {"max_tokens": 16},
}
Source = Literal["flag", "env", ".env", "preset", "default"]
#: Values a secret-named field may keep: the redaction itself, or a source name from a source map.
_SAFE_VALUES = frozenset({"set", "unset", "flag", "env", ".env", "preset", "default"})
_SECRET_NAME = re.compile(r"(?:^|_)(?:api_key|key|secret|password|token)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Found:
    value: object
    source: Source
    where: str  # for messages: "environment variable LEDGERMEM_TIMEOUT", "flag timeout_s", ...


def env_names(purpose: str, field: str, preset: Preset) -> tuple[str, ...]:
    """The variables read for `field`, first wins: per purpose, global, then the provider's key variable."""
    suffix = ENV_FIELDS[field]
    names = [f"{ENV_PREFIX}_{purpose.upper()}_{suffix}", f"{ENV_PREFIX}_{suffix}"]
    if field == "api_key" and preset.key_env:
        names.append(preset.key_env)
    return tuple(names)


def resolve_http_settings(
    purpose: str,
    preset: str,
    *,
    flags: Mapping[str, object | None],
    environ: Mapping[str, str] = os.environ,
    dotenv: Path | None = Path(".env"),
) -> tuple[HttpSettings, dict[str, str]]:
    """The settings of one purpose's backend, and where each field came from.

    `flags` holds CLI values by field name (`base_url`, `model`, `api_key`,
    `timeout_s`, `max_retries`, `backoff_base_s`, `backoff_max_s`,
    `temperature`, `max_tokens`, `stop`); None means not given. `dotenv=None` reads
    no file; a path that does not exist reads as empty.
    """
    if purpose not in PURPOSES:
        raise ConfigError(f"unknown backend purpose {purpose!r}; the purposes are: {', '.join(PURPOSES)}")
    spec = PRESETS.get(preset)
    if spec is None:
        raise ConfigError(f"unknown LLM preset {preset!r}; the presets are: {', '.join(sorted(PRESETS))}")
    unknown = sorted(set(flags) - set(FIELDS))
    if unknown:
        raise ConfigError(f"unknown backend flag(s) {', '.join(map(repr, unknown))}; "
                          f"the settable fields are: {', '.join(FIELDS)}")
    file_values = _read_dotenv(dotenv)
    defaults = {f.name: f.default for f in dataclasses.fields(HttpSettings)}
    defaults.update(PURPOSE_DEFAULTS.get(purpose, {}))
    found: dict[str, _Found] = {}
    for field in FIELDS:
        found[field] = _lookup(field, purpose, spec, flags, environ, file_values, dotenv, defaults[field])
    where = _Where(purpose, spec, dotenv)
    if found["base_url"].value is None:
        raise ConfigError(where.missing("a base URL", "base_url"))
    if found["model"].value is None:
        raise ConfigError(where.missing("a model name", "model"))
    if spec.requires_key and found["api_key"].value is None:
        raise ConfigError(where.missing("an API key", "api_key"))
    settings = HttpSettings(
        preset=spec.name,
        base_url=_url(found["base_url"]),
        model=str(found["model"].value),
        api_key=None if found["api_key"].value is None else str(found["api_key"].value),
        timeout_s=_number(found["timeout_s"], "timeout", positive=True),
        max_retries=_count(found["max_retries"], "max_retries", minimum=0),
        backoff_base_s=_number(found["backoff_base_s"], "backoff_base_s", positive=False),
        backoff_max_s=_number(found["backoff_max_s"], "backoff_max_s", positive=False),
        temperature=_number(found["temperature"], "temperature", positive=False),
        max_tokens=None if found["max_tokens"].value is None else _count(found["max_tokens"], "max_tokens", minimum=1),
        stop=_stops(found["stop"]),
    )
    return settings, {field: f.source for field, f in found.items()}


def _read_dotenv(path: Path | None) -> dict[str, str]:
    # Never call dotenv_values without a path: it would go looking for a file up the directory tree.
    if path is None or not path.is_file():
        return {}
    values = dotenv_values(path, interpolate=False)
    return {k: v for k, v in values.items() if v is not None}


def _given(value: object | None) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


def _lookup(
    field: str,
    purpose: str,
    preset: Preset,
    flags: Mapping[str, object | None],
    environ: Mapping[str, str],
    file_values: Mapping[str, str],
    dotenv: Path | None,
    default: object,
) -> _Found:
    if _given(flags.get(field)):
        return _Found(flags[field], "flag", f"flag {field}")
    names = env_names(purpose, field, preset)
    keep = (lambda v: v) if field == "stop" else str.strip  # a stop sequence may be all whitespace
    for name in names:
        if _given(environ.get(name)) or (field == "stop" and environ.get(name)):
            return _Found(keep(environ[name]), "env", f"environment variable {name}")
    for name in names:
        if _given(file_values.get(name)) or (field == "stop" and file_values.get(name)):
            return _Found(keep(file_values[name]), ".env", f"{name} in {dotenv}")
    if field == "base_url" and preset.base_url is not None:
        return _Found(preset.base_url, "preset", f"preset {preset.name}")
    if field == "model" and preset.default_model is not None:
        return _Found(preset.default_model, "preset", f"preset {preset.name}")
    return _Found(None if default is dataclasses.MISSING else default, "default", "default")


@dataclass(frozen=True, slots=True)
class _Where:
    purpose: str
    preset: Preset
    dotenv: Path | None

    def missing(self, what: str, field: str) -> str:
        names = ", ".join(env_names(self.purpose, field, self.preset))
        if self.dotenv is None:
            places = "in the environment (no .env file was read)"
        else:
            state = "" if self.dotenv.is_file() else ", which does not exist"
            places = f"in the environment and in the .env file {self.dotenv}{state}"
        return (f"the {self.purpose} backend (preset {self.preset.name!r}) needs {what}: "
                f"looked for the flag {field} and for {names} {places}; give the flag or set one of them")


def _url(found: _Found) -> str:
    url = str(found.value).strip()
    if not url.lower().startswith(("http://", "https://")):
        raise ConfigError(f"base URL {url!r} from {found.where} is not an http:// or https:// URL; "
                          "give the server's OpenAI-compatible root, e.g. http://127.0.0.1:8000/v1")
    return url


def _number(found: _Found, name: str, *, positive: bool) -> float:
    value = found.value
    number: float | None = None
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is None:
        raise ConfigError(f"{name} {value!r} ({type(value).__name__}) from {found.where} is not a number; "
                          f"give it as a number, e.g. {'60' if name == 'timeout' else '0.5'}")
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        bound = "greater than 0" if positive else "0 or more"
        raise ConfigError(f"{name} {value!r} from {found.where} must be a finite number {bound}")
    return number


def _count(found: _Found, name: str, *, minimum: int) -> int:
    value = found.value
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        number = int(value)
    else:
        raise ConfigError(f"{name} {value!r} ({type(value).__name__}) from {found.where} is not a whole number; "
                          f"give an integer of at least {minimum}")
    if number < minimum:
        raise ConfigError(f"{name} {value!r} from {found.where} must be at least {minimum}")
    return number


_ESCAPES = re.compile(r"\\(.)")
_ESCAPED = {"n": "\n", "t": "\t", "\\": "\\"}


def _stops(found: _Found) -> tuple[str, ...]:
    """Stop sequences from flags (a string or several) or a variable (a JSON array or one sequence).

    A plain sequence (not a JSON array) has its `\\n`, `\\t` and `\\\\` escapes
    turned into a newline, a tab and a backslash: a newline cannot be typed
    in a flag or on a `.env` line.
    """
    value = found.value
    if value is None:
        return ()
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            items = json.loads(value)
        except ValueError as exc:
            raise ConfigError(f"stop {value!r} from {found.where} starts like a JSON array but is not one "
                              f"({exc}); give a JSON array of strings, or one plain stop sequence") from None
    elif isinstance(value, str):
        items = [_unescape(value)]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = [_unescape(v) for v in value]
    else:
        items = value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise ConfigError(f"stop {value!r} ({type(value).__name__}) from {found.where} is not a list of strings; "
                          'give a JSON array such as ["\\n\\n", "</s>"] or one plain sequence')
    if any(not v for v in items):
        raise ConfigError(f"stop {value!r} from {found.where} holds an empty stop sequence; every one needs text")
    return tuple(items)


def _unescape(text: str) -> str:
    return _ESCAPES.sub(lambda m: _ESCAPED.get(m.group(1), m.group(0)), text)


def redact(
    settings: HttpSettings | Mapping[str, object], sources: Mapping[str, str] | None = None
) -> dict[str, object]:
    """Settings safe for `run_metadata.json`: every secret-named field is only "set" or "unset".

    Nested mappings (one per purpose, say) are redacted too; with `sources`,
    the result also says where each field came from.
    """
    raw = settings.redacted() if isinstance(settings, HttpSettings) else settings
    out = _redact_mapping(raw)
    if sources is not None:
        out["sources"] = dict(sources)
    return out


def _redact_mapping(values: Mapping[str, object]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in values.items():
        if isinstance(value, HttpSettings):
            out[key] = value.redacted()
        elif isinstance(value, Mapping):
            out[key] = _redact_mapping(value)
        elif _SECRET_NAME.search(str(key)):
            out[key] = value if value in _SAFE_VALUES else ("set" if _given(value) else "unset")
        else:
            out[key] = value
    return out


# -- memory settings ---------------------------------------------------------------------------

#: `MemoryConfig` fields settable by `--memory-option KEY=VALUE`, LEDGERMEM_<KEY> and `.env`, and their kinds.
#: Not here: `system` (set per stream), `source_policies` (`--source-policy`), `tokenizer` (resolved per run)
#: and `personal_data` (`--personal-data`, whose default depends on the dataset).
MEMORY_FIELDS: Mapping[str, str] = {
    f.name: str(f.type) for f in dataclasses.fields(MemoryConfig)
    if f.name not in {"system", "source_policies", "tokenizer", "personal_data"}
}
_BOOLS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def memory_env_name(key: str) -> str:
    return f"{ENV_PREFIX}_{key.upper()}"


def parse_memory_options(values: Iterable[str]) -> dict[str, str]:
    """`{"registry_max_slots": "20", ...}` from repeated `KEY=VALUE` (values are checked when resolved)."""
    out: dict[str, str] = {}
    for text in values:
        key, sep, value = text.partition("=")
        key = key.strip().replace("-", "_").lower()
        if not sep or key not in MEMORY_FIELDS:
            raise ConfigError(f"--memory-option {text!r}: expected KEY=VALUE with KEY one of {', '.join(MEMORY_FIELDS)}")
        if key in out and out[key] != value.strip():
            raise ConfigError(f"--memory-option {text!r}: {key} is given twice with different values")
        out[key] = value.strip()
    return out


def resolve_memory_settings(
    base: MemoryConfig,
    *,
    flags: Mapping[str, object | None],
    environ: Mapping[str, str] = os.environ,
    dotenv: Path | None = Path(".env"),
) -> tuple[MemoryConfig, dict[str, str]]:
    """`base` with every memory setting resolved, and where each came from: flag > env > `.env` > `base`.

    `flags` holds values by field name (None: not given), typed or as text;
    the environment and the `.env` file are read as LEDGERMEM_<FIELD>
    (LEDGERMEM_REGISTRY_MAX_SLOTS=20). A value that is not of its field's
    kind, or a configuration that does not validate, is a one-line
    `ConfigError` naming the key and where the value came from.
    """
    unknown = sorted(set(flags) - set(MEMORY_FIELDS))
    if unknown:
        raise ConfigError(f"unknown memory setting(s) {', '.join(map(repr, unknown))}; "
                          f"the settable ones are: {', '.join(MEMORY_FIELDS)}")
    file_values = _read_dotenv(dotenv)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    where: dict[str, str] = {}
    for key, kind in MEMORY_FIELDS.items():
        name = memory_env_name(key)
        if _given(flags.get(key)):
            found = _Found(flags[key], "flag", f"the command line ({key})")
        elif _given(environ.get(name)):
            found = _Found(environ[name].strip(), "env", f"environment variable {name}")
        elif _given(file_values.get(name)):
            found = _Found(file_values[name].strip(), ".env", f"{name} in {dotenv}")
        else:
            sources[key] = "default"
            continue
        values[key] = _memory_value(key, kind, found)
        sources[key] = found.source
        where[key] = found.where
    config = dataclasses.replace(base, **values)
    checked = config if config.tokenizer != "auto" else dataclasses.replace(config, tokenizer="unresolved")
    try:
        checked.validate()
    except ConfigError as exc:
        given = "; ".join(f"{k} from {w}" for k, w in where.items() if k in str(exc)) or "the defaults"
        raise ConfigError(f"{exc} (memory settings: {given})") from None
    return config, sources


def _memory_value(key: str, kind: str, found: _Found) -> object:
    value = found.value
    if kind == "bool":
        if isinstance(value, bool):
            return value
        flag = _BOOLS.get(str(value).strip().lower())
        if flag is None:
            raise ConfigError(f"memory setting {key} {value!r} from {found.where} is not true or false")
        return flag
    if kind == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
            return int(value)
        raise ConfigError(f"memory setting {key} {value!r} from {found.where} is not a whole number")
    if kind == "float":
        return _number(found, f"memory setting {key}", positive=False)
    return str(value).strip()
