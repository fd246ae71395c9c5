"""Memory settings from the command line, the environment and `.env`: flag > env > .env > default."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.projections.events import EpisodeStarted
from ledgermem.ledger.store import Ledger
from ledgermem.memory.errors import ConfigError
from ledgermem.memory.settings import (
    MEMORY_FIELDS,
    memory_env_name,
    parse_memory_options,
    resolve_memory_settings,
)
from ledgermem.projections.config import MemoryConfig

BASE = MemoryConfig()


def _dotenv(tmp_path: Path, **values: str) -> Path:
    path = tmp_path / ".env"
    path.write_text("".join(f"{memory_env_name(k)}={v}\n" for k, v in values.items()), encoding="utf-8")
    return path


def test_every_source_sets_a_setting_and_says_so(tmp_path: Path) -> None:
    dotenv = _dotenv(tmp_path, registry_max_slots="7")
    env = {"LEDGERMEM_HIGH_WATER": "0.9", "LEDGERMEM_REGISTRY_ENABLED": "false"}
    config, sources = resolve_memory_settings(BASE, flags={"merge_min_gain": "0.3"}, environ=env, dotenv=dotenv)
    assert (config.merge_min_gain, config.high_water, config.registry_enabled, config.registry_max_slots) == \
        (0.3, 0.9, False, 7)
    assert (sources["merge_min_gain"], sources["high_water"], sources["registry_enabled"],
            sources["registry_max_slots"], sources["window_turns"]) == ("flag", "env", "env", ".env", "default")
    assert config.window_turns == BASE.window_turns


def test_precedence_is_flag_then_environment_then_dotenv_then_default(tmp_path: Path) -> None:
    dotenv = _dotenv(tmp_path, index_group_size="5")
    env = {"LEDGERMEM_INDEX_GROUP_SIZE": "6"}
    resolve = resolve_memory_settings
    assert resolve(BASE, flags={}, environ={}, dotenv=None)[0].index_group_size == BASE.index_group_size
    assert resolve(BASE, flags={}, environ={}, dotenv=dotenv)[0].index_group_size == 5
    assert resolve(BASE, flags={}, environ=env, dotenv=dotenv)[0].index_group_size == 6
    assert resolve(BASE, flags={"index_group_size": 8}, environ=env, dotenv=dotenv)[0].index_group_size == 8
    # an empty value counts as not set: it hides nothing set further down
    assert resolve(BASE, flags={"index_group_size": ""}, environ={"LEDGERMEM_INDEX_GROUP_SIZE": " "},
                   dotenv=dotenv)[0].index_group_size == 5


@pytest.mark.parametrize("key, value, says", [
    ("window_turns", "four", "window_turns 'four' from environment variable LEDGERMEM_WINDOW_TURNS is not a whole"),
    ("high_water", "high", "high_water 'high' (str) from environment variable LEDGERMEM_HIGH_WATER is not a number"),
    ("registry_enabled", "maybe", "registry_enabled 'maybe' from environment variable LEDGERMEM_REGISTRY_ENABLED"),
    ("registry_max_slots", "-2", "registry_max_slots=-2 must be a whole number >= 0"),
    ("chain_strategy", "spiral", "chain_strategy='spiral'"),
    ("low_water", "0.95", "low_water from environment variable LEDGERMEM_LOW_WATER"),
])
def test_a_bad_value_is_one_line_naming_the_key_and_where_it_came_from(key: str, value: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_memory_settings(BASE, flags={}, environ={memory_env_name(key): value}, dotenv=None)
    message = str(caught.value)
    assert says in message and "\n" not in message


def test_a_bad_value_in_dotenv_names_the_file(tmp_path: Path) -> None:
    dotenv = _dotenv(tmp_path, context_budget="lots")
    with pytest.raises(ConfigError, match=r"context_budget 'lots' from LEDGERMEM_CONTEXT_BUDGET in .*\.env"):
        resolve_memory_settings(BASE, flags={}, environ={}, dotenv=dotenv)


def test_memory_options_parse_and_refuse_what_they_cannot_read() -> None:
    assert parse_memory_options(["registry-max-slots=20", "HIGH_WATER = 0.9"]) == \
        {"registry_max_slots": "20", "high_water": "0.9"}
    for bad, says in (("colour=blue", "KEY one of"), ("registry_max_slots", "KEY=VALUE"),
                      ("system=full_context", "KEY one of")):
        with pytest.raises(ConfigError, match=says):
            parse_memory_options([bad])
    with pytest.raises(ConfigError, match="given twice"):
        parse_memory_options(["window_turns=2", "window_turns=3"])
    assert {"high_water", "low_water", "index_group_size", "merge_min_gain", "registry_max_slots",
            "registry_enabled", "registry_budget_share"} <= set(MEMORY_FIELDS)
    with pytest.raises(ConfigError, match="unknown memory setting"):
        resolve_memory_settings(BASE, flags={"tokenizer": "x"}, environ={}, dotenv=None)


# -- through `ledgermem run` -------------------------------------------------------------


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, dict[str, object]]:
    runs = tmp_path / "runs"
    result = CliRunner().invoke(cli, ["run", "--episodes", "1", "--turns", "4", "--systems", "three_layer",
                                      "--runs-dir", str(runs), "--run-id", "m", "--force",
                                      "--env-file", str(tmp_path / ".env"), *args], env=env or {})
    if result.exit_code != 0:
        return result.exit_code, result.output, {}
    with Ledger(runs / "m" / "ledger.duckdb") as ledger:
        started = next(r.event for r in ledger.read() if isinstance(r.event, EpisodeStarted))
    return 0, result.output, started.config


def test_run_records_settings_from_each_source_in_order(tmp_path: Path) -> None:
    _dotenv(tmp_path, registry_max_slots="5", high_water="0.8")
    code, out, config = _run(tmp_path, env={"LEDGERMEM_REGISTRY_MAX_SLOTS": "6", "LEDGERMEM_MERGE_MAX_GROUP": "3"})
    assert code == 0, out
    assert (config["registry_max_slots"], config["high_water"], config["merge_max_group"]) == (6, 0.8, 3)
    code, out, config = _run(tmp_path, "--memory-option", "registry_max_slots=9", "--window-turns", "2",
                             env={"LEDGERMEM_REGISTRY_MAX_SLOTS": "6", "LEDGERMEM_WINDOW_TURNS": "3"})
    assert code == 0, out
    assert (config["registry_max_slots"], config["window_turns"], config["high_water"]) == (9, 2, 0.8)
    # a flag left at its default does not hide the environment
    code, out, config = _run(tmp_path, env={"LEDGERMEM_WINDOW_TURNS": "3"})
    assert code == 0 and config["window_turns"] == 3


def test_run_refuses_a_bad_value_and_a_contradiction_in_one_line(tmp_path: Path) -> None:
    code, out, _ = _run(tmp_path, "--memory-option", "registry_budget_share=2")
    assert code == 2 and "registry_budget_share=2.0 must be in [0, 1]" in out and "command line" in out
    code, out, _ = _run(tmp_path, "--memory-option", "context_budget=900", "--context-budget", "800")
    assert code == 2 and "--memory-option context_budget=900 contradicts --context-budget 800" in out
    code, out, _ = _run(tmp_path, env={"LEDGERMEM_GATE_LEVEL": "sometimes"})
    assert code == 2 and "gate_level='sometimes'" in out and "LEDGERMEM_GATE_LEVEL" in out
    help_text = CliRunner().invoke(cli, ["run", "--help"]).output
    assert "--memory-option" in help_text and "LEDGERMEM_<KEY>" in help_text
