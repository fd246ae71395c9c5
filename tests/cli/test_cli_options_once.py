"""`--runs-dir`, `--json` and `--keys` are declared once (cli.options) and mean the same everywhere.

Two checks: the source of `cli/*.py` spells each flag once, and
every option of the command tree whose flag or parameter name is one of
them has the attributes of the shared declaration. Controls: a command
with another default, another spelling, or another parameter name for one
of them is reported.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from ledgermem.cli import options as cli_options
from ledgermem.cli.commands import cli

ROOT = Path(__file__).resolve().parents[2]
SHARED_FLAGS = ("--runs-dir", "--json", "--keys")
SHARED_NAMES = ("runs_dir", "as_json", "keys")


def _declared(decorator: Callable[[Callable[..., Any]], Callable[..., Any]]) -> click.Option:
    def fn() -> None: ...

    decorator(fn)
    option = fn.__click_params__[0]  # type: ignore[attr-defined]
    assert isinstance(option, click.Option)
    return option


def signature(option: click.Option, *, with_help: bool = True) -> tuple[Any, ...]:
    """What makes two declarations of an option the same option (its help only where it must agree)."""
    kind = option.type
    path = (kind.file_okay, kind.dir_okay, kind.exists, kind.type) if isinstance(kind, click.Path) else None
    return (tuple(option.opts), tuple(option.secondary_opts), option.name, option.default, option.show_default,
            option.is_flag, type(kind).__name__, path, option.help if with_help else None)


def canonical() -> dict[str, set[tuple[Any, ...]]]:
    """Allowed signatures per parameter name: the shared declarations."""
    return {
        "runs_dir": {signature(_declared(cli_options.runs_dir_option)),
                     signature(_declared(cli_options.kept_runs_dir_option))},
        "keys": {signature(_declared(cli_options.keys_option))},
        # --json's help says what the JSON holds, so it may differ per command; the rest may not.
        "as_json": {signature(_declared(cli_options.json_option()), with_help=False)},
    }


def commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, command in sorted(group.commands.items()):
        yield prefix + name, command
        if isinstance(command, click.Group):
            yield from commands(command, f"{prefix}{name} ")


def inconsistencies(group: click.Group) -> list[str]:
    """One line per option of the tree that spells a shared option differently, and per RUN without --runs-dir."""
    allowed = canonical()
    found: list[str] = []
    for path, command in commands(group):
        for param in command.params:
            if not isinstance(param, click.Option):
                continue
            flags = [f for f in SHARED_FLAGS if f in param.opts]
            if not flags and param.name not in SHARED_NAMES:
                continue
            name = param.name if param.name in allowed else "?"
            sig = signature(param, with_help=name != "as_json")
            if name == "?" or sig not in allowed[name]:
                found.append(f"{path}: {'/'.join(param.opts)} ({param.name}) is not the shared declaration in "
                             f"cli.options: {sig}")
        takes_run = any(isinstance(p, click.Argument) and p.name == "run" for p in command.params)
        runs_dir = [p for p in command.params if isinstance(p, click.Option) and p.name == "runs_dir"]
        if takes_run and [signature(p) for p in runs_dir] != [signature(_declared(cli_options.runs_dir_option))]:
            found.append(f"{path}: takes a RUN but not the shared --runs-dir")
    return found


def spellings(paths: list[Path]) -> dict[str, list[str]]:
    """Where each shared flag is written as a string literal: `file:line` per occurrence."""
    spelled: dict[str, list[str]] = {flag: [] for flag in SHARED_FLAGS}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in spelled:
                spelled[node.value].append(f"{path.name}:{node.lineno}")
    return spelled


def test_the_shared_flags_are_spelled_once_in_the_cli_source() -> None:
    for flag, where in spellings(sorted((ROOT / "cli").glob("*.py"))).items():
        assert len(where) == 1 and where[0].startswith("options.py:"), (flag, where)


def test_a_second_spelling_in_the_source_is_found(tmp_path: Path) -> None:
    extra = tmp_path / "cli_extra.py"
    extra.write_text('import click\nopt = click.option("--runs-dir", default="runs")\n', encoding="utf-8")
    where = spellings([ROOT / "cli" / "options.py", extra])
    assert len(where["--runs-dir"]) == 2 and where["--runs-dir"][1] == "cli_extra.py:2"
    assert len(where["--json"]) == 1


def test_every_command_uses_the_shared_declarations() -> None:
    assert inconsistencies(cli) == []
    run_commands = [p for p, c in commands(cli) if any(isinstance(q, click.Argument) and q.name == "run"
                                                         for q in c.params)]
    # The walk sees the commands of every cli/ module (checked above, so not vacuous).
    assert {"audit", "history", "checkpoint", "merge", "repair", "sql"} <= set(run_commands)
    with_runs_dir = {p for p, c in commands(cli) if any(q.name == "runs_dir" for q in c.params)}
    assert {"serve", "mcp", "sweep", "run"} <= with_runs_dir


def _group_with(*options: Callable[[Callable[..., Any]], Callable[..., Any]], run: bool = True) -> click.Group:
    group = click.Group("g")

    def cmd(**_: Any) -> None: ...

    for option in options:
        cmd = option(cmd)
    if run:
        cmd = click.argument("run")(cmd)
    group.command("bad")(cmd)
    return group


@pytest.mark.parametrize(
    ("options", "run", "expected"),
    [
        ((click.option("--runs-dir", default="run", show_default=True, type=click.Path(file_okay=False)),),
         True, "--runs-dir (runs_dir) is not the shared declaration"),
        ((click.option("--run-dir", "runs_dir", default="runs", show_default=True, type=click.Path(file_okay=False)),),
         True, "--run-dir (runs_dir) is not the shared declaration"),
        ((cli_options.runs_dir_option, click.option("--json", "json_out", is_flag=True)),
         True, "--json (json_out) is not the shared declaration"),
        ((cli_options.runs_dir_option, click.option("--keys", type=click.Path(dir_okay=False), default=None)),
         True, "--keys (keys) is not the shared declaration"),
        ((cli_options.kept_runs_dir_option,), True, "takes a RUN but not the shared --runs-dir"),
        ((), True, "takes a RUN but not the shared --runs-dir"),
    ],
    ids=["other-default", "other-spelling", "other-json-name", "other-keys-type", "kept-for-a-run", "missing"],
)
def test_a_differently_declared_option_is_reported(
    options: tuple[Callable[[Callable[..., Any]], Callable[..., Any]], ...], run: bool, expected: str
) -> None:
    found = inconsistencies(_group_with(*options, run=run))
    assert found and all(f.startswith("bad: ") for f in found), found
    assert any(expected in f for f in found), found


def test_the_shared_declarations_pass_their_own_check() -> None:
    group = _group_with(cli_options.runs_dir_option, cli_options.json_option("Rows."), cli_options.keys_option)
    assert inconsistencies(group) == []


def imports_of_the_root(source: str) -> list[int]:
    """Lines of `source` importing `cli.commands` itself (the module that imports every command module)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(a.name == "ledgermem.cli.commands" for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and (
                node.module == "ledgermem.cli.commands" or (node.module == "ledgermem.cli"
                                                            and any(a.name == "commands" for a in node.names))):
            lines.append(node.lineno)
    return lines


def test_no_command_module_imports_the_root_so_there_is_no_circle() -> None:
    found = {p.name: imports_of_the_root(p.read_text(encoding="utf-8"))
             for p in sorted((ROOT / "cli").glob("*.py"))
             # the root itself, the entry point, and the reference generator (no command: it walks the whole tree)
             if p.name not in ("commands.py", "__main__.py", "reference.py")}
    assert len(found) >= 9 and not any(found.values()), found
    # control: each form of importing the root is seen
    assert imports_of_the_root("from ledgermem.cli.commands import metrics_table\nimport ledgermem.cli.commands\n"
                               "from ledgermem.cli import commands\nfrom ledgermem.cli import main\n") == [1, 2, 3]
