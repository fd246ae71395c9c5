"""Backend settings: flag > environment > .env > preset > default, with sources and clear errors."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from ledgermem.ledger.errors import LedgermemError
from ledgermem.memory.http_backend import PRESETS, HttpSettings
from ledgermem.memory.errors import ConfigError
from ledgermem.memory.settings import env_names, redact, resolve_http_settings

NO_FLAGS: Mapping[str, object | None] = {}


def write_env(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".env"
    path.write_text(text, encoding="utf-8")
    return path


def resolve(
    purpose: str = "answer",
    preset: str = "deepseek",
    *,
    flags: Mapping[str, object | None] = NO_FLAGS,
    environ: Mapping[str, str] | None = None,
    dotenv: Path | None = None,
) -> tuple[HttpSettings, dict[str, str]]:
    return resolve_http_settings(purpose, preset, flags=flags, environ=environ or {}, dotenv=dotenv)


# -- precedence -----------------------------------------------------------------------

FIELD_VALUES = {
    # field: (env suffix, flag value, env value, .env value)
    "base_url": ("BASE_URL", "http://flag/v1", "http://env/v1", "http://dotenv/v1"),
    "model": ("MODEL", "flag-model", "env-model", "dotenv-model"),
    "api_key": ("API_KEY", "flag-key", "env-key", "dotenv-key"),
    "timeout_s": ("TIMEOUT", 7.0, "8", "9.5"),
    "max_retries": ("MAX_RETRIES", 1, "2", "3"),
    "backoff_base_s": ("BACKOFF_BASE", "0.1", "0.2", "0.3"),
    "backoff_max_s": ("BACKOFF_MAX", 4, "5", "6.5"),
    "temperature": ("TEMPERATURE", 0.7, "0.8", "1"),
    "max_tokens": ("MAX_TOKENS", "64", "65", "66"),
    "stop": ("STOP", ["</s>", "\\n\\n"], '["END"]', "###"),
}
PARSED = {"timeout_s": (7.0, 8.0, 9.5), "max_retries": (1, 2, 3), "backoff_base_s": (0.1, 0.2, 0.3),
          "backoff_max_s": (4.0, 5.0, 6.5), "temperature": (0.7, 0.8, 1.0), "max_tokens": (64, 65, 66),
          "stop": (("</s>", "\n\n"), ("END",), ("###",))}
#: What each field is when nothing sets it, for the answer purpose of the deepseek preset.
UNSET = {"base_url": ("https://api.deepseek.com/v1", "preset"), "model": ("deepseek-chat", "preset"),
         "api_key": (None, "default"), "timeout_s": (60.0, "default"), "max_retries": (4, "default"),
         "backoff_base_s": (0.5, "default"), "backoff_max_s": (30.0, "default"), "temperature": (0.0, "default"),
         "max_tokens": (512, "default"), "stop": ((), "default")}
SOURCES = ["flag", "purpose env", "env", "purpose .env", ".env", "unset"]
LOSERS = {"base_url": "http://loser/v1", "model": "loser", "api_key": "loser", "timeout_s": "99",
          "max_retries": "9", "backoff_base_s": "9", "backoff_max_s": "99", "temperature": "1.5", "max_tokens": "999",
          "stop": "LOSER"}


def _sources_for(field: str, source: str, tmp_path: Path) -> tuple[dict[str, object], dict[str, str], Path]:
    """Flags, environment and .env in which `source` is the most specific place that sets `field`."""
    suffix, flag, env, dot = FIELD_VALUES[field]
    purpose_name, global_name = f"LEDGERMEM_SUMMARIZE_{suffix}", f"LEDGERMEM_{suffix}"
    flags: dict[str, object] = {"api_key": "k"} if field != "api_key" else {}
    environ: dict[str, str] = {"DEEPSEEK_API_KEY": "k"} if field == "api_key" and source == "unset" else {}
    lines: list[str] = []
    order = SOURCES.index(source)
    # Every place less specific than `source` is set too, with a value that must lose.
    loser = LOSERS[field]
    if order <= 4:
        lines.append(f"{global_name}={dot if order == 4 else loser}")
    if order <= 3:
        lines.append(f"{purpose_name}={dot}")
    if order <= 2:
        environ[global_name] = str(env) if order == 2 else loser
    if order <= 1:
        environ[purpose_name] = str(env)
    if order == 0:
        flags[field] = flag
    return flags, environ, write_env(tmp_path, "\n".join(lines) + "\n")


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("field", list(FIELD_VALUES))
def test_every_field_from_every_source(tmp_path: Path, field: str, source: str) -> None:
    """Flag > LEDGERMEM_SUMMARIZE_<F> > LEDGERMEM_<F> > the same in .env > preset > the purpose's default."""
    flags, environ, dotenv = _sources_for(field, source, tmp_path)
    s, src = resolve("summarize", flags=flags, environ=environ, dotenv=dotenv)
    parsed = PARSED.get(field, FIELD_VALUES[field][1:])
    expected = {"flag": (parsed[0], "flag"), "purpose env": (parsed[1], "env"), "env": (parsed[1], "env"),
                "purpose .env": (parsed[2], ".env"), ".env": (parsed[2], ".env")}.get(source)
    if source == "unset":
        value, where = UNSET[field]
        expected = (256 if field == "max_tokens" else "k" if field == "api_key" else value,
                    "env" if field == "api_key" else where)
    assert (getattr(s, field), src[field]) == expected


@pytest.mark.parametrize("field", [f for f in FIELD_VALUES if f != "api_key"])
def test_a_per_purpose_variable_alone_takes_effect_for_its_purpose_only(field: str) -> None:
    suffix, _, env, _ = FIELD_VALUES[field]
    environ = {f"LEDGERMEM_SUMMARIZE_{suffix}": str(env), "DEEPSEEK_API_KEY": "k"}
    summarize, src = resolve("summarize", environ=environ)
    answer, _ = resolve("answer", environ=environ)
    assert (getattr(summarize, field), src[field]) == (PARSED.get(field, FIELD_VALUES[field][1:])[1], "env")
    assert getattr(answer, field) == UNSET[field][0]


def test_summarize_model_from_the_environment_alone_reaches_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reported bug: LEDGERMEM_SUMMARIZE_MODEL without a --summarize-* flag was ignored by the run."""
    from ledgermem.evaluation.runner import RunOptions, build_backends

    monkeypatch.setenv("LEDGERMEM_SUMMARIZE_MODEL", "small-summarizer")
    monkeypatch.setenv("LEDGERMEM_JUDGE_TIMEOUT", "7")
    monkeypatch.delenv("LEDGERMEM_MODEL", raising=False)
    backends = build_backends(RunOptions(run_id="r", backend="llamacpp", judge="llm", env_file=None), "estimate")
    routed = backends.memory
    assert routed.for_purpose("summarize").model == "small-summarizer"  # type: ignore[attr-defined]
    assert routed.for_purpose("answer").model == "local"  # type: ignore[attr-defined]
    assert backends.judge.settings.timeout_s == 7.0  # type: ignore[attr-defined]
    assert backends.described["summarize"]["model"] == "small-summarizer"
    assert backends.described["summarize"]["sources"]["model"] == "env"
    assert backends.described["summarize"]["max_tokens"] == 256 and backends.described["judge"]["max_tokens"] == 16


def test_purpose_flags_beat_common_flags_in_the_run() -> None:
    from ledgermem.evaluation.runner import RunOptions, build_backends

    opts = RunOptions(run_id="r", backend="llamacpp", env_file=None, max_retries=2,
                      llm_flags={"all": {"max_tokens": 100, "stop": ["</s>"]},
                                 "summarize": {"max_tokens": "50", "model": "s"}})
    backends = build_backends(opts, "estimate")
    answer, summarize = backends.described["answer"], backends.described["summarize"]
    assert (answer["max_tokens"], answer["stop"], answer["max_retries"], answer["model"]) == (100, ["</s>"], 2, "local")
    assert (summarize["max_tokens"], summarize["stop"], summarize["model"]) == (50, ["</s>"], "s")
    assert backends.described["respond"]["max_tokens"] == 100


def test_purpose_defaults_cap_every_completion() -> None:
    caps = {p: resolve(p, "llamacpp")[0].max_tokens for p in ("answer", "respond", "summarize", "judge")}
    assert caps == {"answer": 512, "respond": 1024, "summarize": 256, "judge": 16}
    assert resolve("summarize", "llamacpp")[0].temperature == 0.0


@pytest.mark.parametrize("value, expected", [
    ("</s>", ("</s>",)), ("\\n\\n", ("\n\n",)), ('["a", "b\\n"]', ("a", "b\n")), (" ", (" ",)),
    ("a\\\\n", ("a\\n",)),
])
def test_stop_sequences_from_a_variable(value: str, expected: tuple[str, ...]) -> None:
    s, _ = resolve(preset="llamacpp", environ={"LEDGERMEM_STOP": value})
    assert s.stop == expected


@pytest.mark.parametrize("value, fragment", [
    ('["a", 1]', "is not a list of strings"), ("[a", "starts like a JSON array"), ('[""]', "empty stop sequence"),
])
def test_bad_stop_sequences_are_clear_errors(value: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=r"stop .*environment variable LEDGERMEM_STOP"):
        resolve(preset="llamacpp", environ={"LEDGERMEM_STOP": value})
    with pytest.raises(ConfigError, match=fragment.replace("[", "\\[")):
        resolve(preset="llamacpp", environ={"LEDGERMEM_STOP": value})


def test_preset_and_default_fill_the_rest() -> None:
    s, src = resolve(preset="deepseek", environ={"DEEPSEEK_API_KEY": "k"})
    assert (s.base_url, s.model, s.timeout_s, s.max_retries) == ("https://api.deepseek.com/v1", "deepseek-chat", 60.0, 4)
    assert (s.backoff_base_s, s.backoff_max_s, s.temperature, s.max_tokens, s.stop) == (0.5, 30.0, 0.0, 512, ())
    assert src == {"base_url": "preset", "model": "preset", "api_key": "env", "timeout_s": "default",
                   "max_retries": "default", "backoff_base_s": "default", "backoff_max_s": "default",
                   "temperature": "default", "max_tokens": "default", "stop": "default"}


@pytest.mark.parametrize(
    "preset, base_url, model",
    [("openai", "https://api.openai.com/v1", "gpt-4o-mini"), ("llamacpp", "http://127.0.0.1:8080/v1", "local")],
)
def test_presets_with_a_default_model(preset: str, base_url: str, model: str) -> None:
    s, _ = resolve(preset=preset, environ={"OPENAI_API_KEY": "k"})
    assert (s.preset, s.base_url, s.model) == (preset, base_url, model)


def test_local_presets_need_no_key() -> None:
    for preset, url in [("vllm", "http://127.0.0.1:8000/v1"), ("ollama", "http://127.0.0.1:11434/v1")]:
        s, src = resolve(preset=preset, flags={"model": "llama3.1"})
        assert (s.base_url, s.model, s.api_key, src["api_key"]) == (url, "llama3.1", None, "default")


def test_numeric_fields_from_flags() -> None:
    flags = {"backoff_base_s": "0.1", "backoff_max_s": 2, "temperature": 0.7, "max_tokens": "256", "api_key": "k"}
    s, src = resolve(flags=flags)
    assert (s.backoff_base_s, s.backoff_max_s, s.temperature, s.max_tokens) == (0.1, 2.0, 0.7, 256)
    assert {src[f] for f in ("backoff_base_s", "backoff_max_s", "temperature", "max_tokens")} == {"flag"}


def test_per_purpose_env_beats_global_env_and_purposes_are_apart(tmp_path: Path) -> None:
    environ = {"LEDGERMEM_MODEL": "global", "LEDGERMEM_JUDGE_MODEL": "judge-model", "LEDGERMEM_API_KEY": "k"}
    dotenv = write_env(tmp_path, "LEDGERMEM_ANSWER_MODEL=dotenv-answer\n")
    judge, _ = resolve("judge", flags={}, environ=environ, dotenv=dotenv)
    summarize, _ = resolve("summarize", flags={}, environ=environ, dotenv=dotenv)
    answer, src = resolve("answer", flags={}, environ=environ, dotenv=dotenv)
    assert (judge.model, summarize.model) == ("judge-model", "global")
    # The environment beats the file even when the file's name is the more specific one.
    assert (answer.model, src["model"]) == ("global", "env")


def test_per_purpose_dotenv_beats_global_dotenv(tmp_path: Path) -> None:
    dotenv = write_env(tmp_path, "LEDGERMEM_MODEL=global\nLEDGERMEM_SUMMARIZE_MODEL=small\nLEDGERMEM_API_KEY=k\n")
    assert resolve("summarize", dotenv=dotenv)[0].model == "small"
    assert resolve("answer", dotenv=dotenv)[0].model == "global"


def test_preset_key_variable_comes_after_ours(tmp_path: Path) -> None:
    s, src = resolve(preset="deepseek", environ={"DEEPSEEK_API_KEY": "provider"})
    assert (s.api_key, src["api_key"]) == ("provider", "env")
    s, _ = resolve(preset="deepseek", environ={"DEEPSEEK_API_KEY": "provider", "LEDGERMEM_API_KEY": "ours"})
    assert s.api_key == "ours"
    s, _ = resolve(preset="deepseek", environ={"DEEPSEEK_API_KEY": "provider", "LEDGERMEM_ANSWER_API_KEY": "mine"})
    assert s.api_key == "mine"
    # From the file too, and the environment's provider variable still beats the file.
    dotenv = write_env(tmp_path, "DEEPSEEK_API_KEY=from-file\n")
    s, src = resolve(preset="deepseek", dotenv=dotenv)
    assert (s.api_key, src["api_key"]) == ("from-file", ".env")
    s, src = resolve(preset="deepseek", environ={"DEEPSEEK_API_KEY": "env"}, dotenv=dotenv)
    assert (s.api_key, src["api_key"]) == ("env", "env")
    # Another provider's variable is not read.
    with pytest.raises(ConfigError):
        resolve(preset="deepseek", environ={"OPENAI_API_KEY": "wrong provider"})


def test_env_names() -> None:
    assert env_names("judge", "api_key", PRESETS["openai"]) == (
        "LEDGERMEM_JUDGE_API_KEY", "LEDGERMEM_API_KEY", "OPENAI_API_KEY")
    assert env_names("answer", "timeout_s", PRESETS["openai"]) == ("LEDGERMEM_ANSWER_TIMEOUT", "LEDGERMEM_TIMEOUT")


def test_empty_values_count_as_not_set(tmp_path: Path) -> None:
    dotenv = write_env(tmp_path, "LEDGERMEM_API_KEY=\nLEDGERMEM_MODEL=\n")
    s, src = resolve(flags={"model": "", "api_key": None}, environ={"LEDGERMEM_MODEL": "  ", "DEEPSEEK_API_KEY": "k"},
                     dotenv=dotenv)
    assert (s.model, src["model"], s.api_key) == ("deepseek-chat", "preset", "k")


def test_the_real_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGERMEM_SUMMARIZE_MODEL", "from-os-environ")
    s, src = resolve_http_settings("summarize", "llamacpp", flags={}, dotenv=None)
    assert (s.model, src["model"]) == ("from-os-environ", "env")


# -- .env parsing ---------------------------------------------------------------------


def test_dotenv_quotes_comments_and_export(tmp_path: Path) -> None:
    dotenv = write_env(tmp_path, "\n".join([
        "# the answer model",
        'export LEDGERMEM_MODEL="quoted model"  # trailing comment',
        "LEDGERMEM_BASE_URL='http://127.0.0.1:9/v1'",
        "LEDGERMEM_TIMEOUT=12 # seconds",
        "LEDGERMEM_API_KEY=\"a#b ${NOT_EXPANDED}\"",
        "",
        "LEDGERMEM_MAX_RETRIES",  # a name without a value is not set
    ]) + "\n")
    s, src = resolve(preset="http", dotenv=dotenv)
    assert (s.model, s.base_url, s.timeout_s, s.api_key, s.max_retries) == (
        "quoted model", "http://127.0.0.1:9/v1", 12.0, "a#b ${NOT_EXPANDED}", 4)
    assert [src[f] for f in ("model", "base_url", "timeout_s", "api_key", "max_retries")] == [
        ".env", ".env", ".env", ".env", "default"]


def test_dotenv_does_not_touch_os_environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LEDGERMEM_JUDGE_MODEL", raising=False)
    dotenv = write_env(tmp_path, "LEDGERMEM_JUDGE_MODEL=m\n")
    resolve_http_settings("judge", "llamacpp", flags={}, environ={}, dotenv=dotenv)
    import os

    assert "LEDGERMEM_JUDGE_MODEL" not in os.environ


def test_a_missing_dotenv_file_reads_as_empty(tmp_path: Path) -> None:
    s, src = resolve(preset="llamacpp", dotenv=tmp_path / "absent.env")
    assert (s.model, src["model"]) == ("local", "preset")


def test_no_dotenv_path_reads_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_env(tmp_path, "LEDGERMEM_MODEL=from-file\n")
    monkeypatch.chdir(tmp_path)
    assert resolve(preset="llamacpp", dotenv=None)[0].model == "local"
    assert resolve_http_settings("answer", "llamacpp", flags={}, environ={})[0].model == "from-file"  # default ./.env


# -- errors ---------------------------------------------------------------------------


def test_unknown_preset_lists_the_presets() -> None:
    with pytest.raises(ConfigError) as err:
        resolve(preset="anthropic")
    msg = str(err.value)
    assert "'anthropic'" in msg and "deepseek, http, llamacpp, ollama, openai, vllm" in msg
    assert isinstance(err.value, LedgermemError) and isinstance(err.value, ValueError)


def test_unknown_purpose_and_unknown_flag() -> None:
    with pytest.raises(ConfigError, match="'chat'.*answer, respond, summarize, judge"):
        resolve("chat")
    with pytest.raises(ConfigError, match="'timeout'.*timeout_s"):
        resolve(preset="llamacpp", flags={"timeout": 3})


@pytest.mark.parametrize("preset", ["vllm", "ollama", "http"])
def test_missing_model_names_where_it_looked(tmp_path: Path, preset: str) -> None:
    flags = {"base_url": "http://127.0.0.1:1/v1"}
    with pytest.raises(ConfigError) as err:
        resolve("summarize", preset, flags=flags, dotenv=tmp_path / ".env")
    msg = str(err.value)
    assert f"preset '{preset}'" in msg and "needs a model name" in msg
    assert "LEDGERMEM_SUMMARIZE_MODEL, LEDGERMEM_MODEL" in msg and "flag model" in msg
    assert str(tmp_path / ".env") in msg and "does not exist" in msg


def test_http_preset_needs_a_base_url() -> None:
    with pytest.raises(ConfigError, match="needs a base URL.*LEDGERMEM_ANSWER_BASE_URL, LEDGERMEM_BASE_URL"):
        resolve(preset="http", flags={"model": "m"})


def test_missing_key_names_the_variables_and_the_dotenv_path(tmp_path: Path) -> None:
    dotenv = write_env(tmp_path, "LEDGERMEM_MODEL=deepseek-chat\n")
    with pytest.raises(ConfigError) as err:
        resolve("judge", "deepseek", environ={"OPENAI_API_KEY": "x"}, dotenv=dotenv)
    msg = str(err.value)
    assert "the judge backend (preset 'deepseek') needs an API key" in msg
    assert "LEDGERMEM_JUDGE_API_KEY, LEDGERMEM_API_KEY, DEEPSEEK_API_KEY" in msg
    assert str(dotenv) in msg and "does not exist" not in msg


@pytest.mark.parametrize(
    "environ, dotenv_text, where",
    [
        ({"LEDGERMEM_ANSWER_TIMEOUT": "soon"}, "", "environment variable LEDGERMEM_ANSWER_TIMEOUT"),
        ({}, "LEDGERMEM_TIMEOUT=1m\n", "LEDGERMEM_TIMEOUT in "),
    ],
)
def test_non_numeric_timeout_names_the_variable_and_its_place(
    tmp_path: Path, environ: dict[str, str], dotenv_text: str, where: str
) -> None:
    dotenv = write_env(tmp_path, dotenv_text)
    with pytest.raises(ConfigError) as err:
        resolve(preset="llamacpp", environ=environ, dotenv=dotenv)
    msg = str(err.value)
    assert "is not a number" in msg and where in msg
    if dotenv_text:
        assert str(dotenv) in msg


@pytest.mark.parametrize(
    "flags, fragment",
    [
        ({"timeout_s": "abc"}, "timeout 'abc' (str) from flag timeout_s is not a number"),
        ({"timeout_s": 0}, "timeout 0 from flag timeout_s must be a finite number greater than 0"),
        ({"timeout_s": "inf"}, "must be a finite number"),
        ({"timeout_s": True}, "is not a number"),
        ({"max_retries": "2.5"}, "max_retries '2.5' (str) from flag max_retries is not a whole number"),
        ({"max_retries": -1}, "must be at least 0"),
        ({"max_tokens": 0}, "max_tokens 0 from flag max_tokens must be at least 1"),
        ({"backoff_max_s": -1.0}, "must be a finite number 0 or more"),
        ({"base_url": "api.example.com/v1"}, "is not an http:// or https:// URL"),
    ],
)
def test_bad_values_are_clear_errors(flags: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        resolve(preset="llamacpp", flags=flags)
    assert fragment in str(err.value)


def test_env_max_retries_must_be_whole() -> None:
    with pytest.raises(ConfigError, match="max_retries 'three' .*environment variable LEDGERMEM_JUDGE_MAX_RETRIES"):
        resolve("judge", "llamacpp", environ={"LEDGERMEM_JUDGE_MAX_RETRIES": "three"})


# -- redaction ------------------------------------------------------------------------


def test_redact_keeps_only_set_or_unset_and_the_sources(tmp_path: Path) -> None:
    secret = "sk-live-abcdef123456"
    s, src = resolve(preset="deepseek", environ={"DEEPSEEK_API_KEY": secret})
    out = redact(s, src)
    dumped = json.dumps(out)
    assert secret not in dumped and secret not in repr(s)
    assert out["api_key"] == "set" and out["model"] == "deepseek-chat" and out["preset"] == "deepseek"
    assert out["sources"] == src and src["api_key"] == "env"
    # Plain dicts, nested per purpose, and the settings objects inside them.
    local, _ = resolve(preset="llamacpp")
    nested = redact({"answer": {"api_key": secret, "access_token": secret, "max_tokens": 5},
                     "judge": local, "summarize": s.redacted()})
    assert secret not in json.dumps(nested)
    assert nested["answer"] == {"api_key": "set", "access_token": "set", "max_tokens": 5}
    assert nested["judge"]["api_key"] == "unset"  # type: ignore[index]
    assert nested["summarize"]["api_key"] == "set"  # type: ignore[index]
    assert redact({"api_key": None})["api_key"] == "unset"
