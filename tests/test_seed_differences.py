"""docs/seed-differences.md: every default it states is the code's default, and the README links the page."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import click

from ledgermem.cli.commands import cli
from ledgermem.evaluation.runner import RunOptions
from ledgermem.memory.http_backend import HttpSettings
from ledgermem.memory.settings import PURPOSE_DEFAULTS
from ledgermem.projections.config import MemoryConfig

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "seed-differences.md"
CLASSES: dict[str, Any] = {"MemoryConfig": MemoryConfig, "RunOptions": RunOptions, "HttpSettings": HttpSettings}
FIELD = re.compile(r"(\w+)\.(\w+)")
OPTION = re.compile(r"([a-z][\w-]*) (--[a-z][\w-]*)")
PURPOSE = re.compile(r"PURPOSE_DEFAULTS\.(\w+)\.(\w+)")


def default_rows(text: str) -> list[tuple[str, str, list[str]]]:
    """(setting, stated default, where) for every row of the "Defaults" table."""
    section = text.split("\n## Defaults\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or cells[0] in ("setting", "") or set(cells[0]) <= {"-"}:
            continue
        assert len(cells) == 5, f"a Defaults row has 5 cells: {line}"
        rows.append((cells[0], cells[2].strip("`"), re.findall(r"`([^`]+)`", cells[3])))
    return rows


def code_default(where: str) -> Any:
    """The default of a dataclass field (`MemoryConfig.chain_budget`) or a CLI option (`run --chain-budget`)."""
    if (m := OPTION.fullmatch(where)) is not None:
        command = cli.commands.get(m.group(1))
        assert isinstance(command, click.Command), f"no command {m.group(1)!r}"
        param = next((p for p in command.params if m.group(2) in p.opts), None)
        assert param is not None, f"{m.group(1)} has no option {m.group(2)}"
        return param.default
    if (m := PURPOSE.fullmatch(where)) is not None:
        assert m.group(1) in PURPOSE_DEFAULTS, f"PURPOSE_DEFAULTS has no purpose {m.group(1)!r}"
        assert m.group(2) in PURPOSE_DEFAULTS[m.group(1)], f"PURPOSE_DEFAULTS[{m.group(1)!r}] has no {m.group(2)!r}"
        return PURPOSE_DEFAULTS[m.group(1)][m.group(2)]
    if (m := FIELD.fullmatch(where)) is not None and m.group(1) in CLASSES:
        field = {f.name: f for f in dataclasses.fields(CLASSES[m.group(1)])}.get(m.group(2))
        assert field is not None, f"{m.group(1)} has no field {m.group(2)!r}"
        if field.default is not dataclasses.MISSING:
            return field.default
        assert field.default_factory is not dataclasses.MISSING, f"{where} has no default"
        return field.default_factory()
    raise AssertionError(f"cannot resolve {where!r}: write `Class.field` or `command --option`")


def same(stated: str, actual: Any) -> bool:
    if actual is None:
        return stated.startswith("none")
    if isinstance(actual, bool):
        return stated == ("on" if actual else "off")
    if isinstance(actual, (int, float)):
        try:
            return float(stated) == float(actual)
        except ValueError:
            return False
    return stated == str(actual)


def problems(text: str) -> list[str]:
    out = []
    rows = default_rows(text)
    if not rows:
        out.append("the Defaults table has no rows")
    for setting, stated, where in rows:
        if not where:
            out.append(f"{setting}: names no field or option to check {stated!r} against")
        for name in where:
            try:
                actual = code_default(name)
            except AssertionError as exc:
                out.append(f"{setting}: {exc}")
                continue
            if not same(stated, actual):
                out.append(f"{setting}: the page says {stated!r}, {name} defaults to {actual!r}")
    return out


def test_every_default_the_page_states_is_the_codes() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert problems(text) == []
    assert len(default_rows(text)) >= 15


def test_a_stale_figure_or_a_vanished_name_is_caught() -> None:
    """Must-fail controls: a budget back at the seed's 800, a renamed field, an option that is not there,
    a row that names nothing to check."""
    text = PAGE.read_text(encoding="utf-8")
    assert "| 400 | `MemoryConfig.chain_budget`" in text
    stale = text.replace("| 400 | `MemoryConfig.chain_budget`", "| 800 | `MemoryConfig.chain_budget`")
    assert any("the page says '800'" in p and "MemoryConfig.chain_budget" in p for p in problems(stale))
    assert any("run --chain-budget defaults to 400" in p for p in problems(stale))
    renamed = text.replace("`MemoryConfig.index_title_max_chars`", "`MemoryConfig.title_chars`")
    assert any("MemoryConfig has no field 'title_chars'" in p for p in problems(renamed))
    no_option = text.replace("`run --memory-points`", "`run --memory-point-probes`")
    assert any("run has no option --memory-point-probes" in p for p in problems(no_option))
    unchecked = text.replace("`HttpSettings.temperature`", "the HTTP client")
    assert any(p.startswith("temperature: names no field") for p in problems(unchecked))
    cap = text.replace("| 256 | `PURPOSE_DEFAULTS.summarize.max_tokens`", "| 600 | `PURPOSE_DEFAULTS.summarize.max_tokens`")
    assert any("PURPOSE_DEFAULTS.summarize.max_tokens defaults to 256" in p for p in problems(cap))


def test_the_readme_links_the_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/seed-differences.md)" in readme
