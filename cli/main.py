"""The root of the `ledgermem` command tree, its consoles and its error boundary.

Every `cli_*` module imports the group from here and declares its commands
on it; `cli.commands` imports them all. This is the only place that turns
errors into exit codes: 0 success, 1 a failed check or a `LedgermemError`
(one line on stderr, no traceback), 2 a usage error.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

__all__ = ["COMMANDS", "cli", "err", "fails_cleanly", "main", "out"]

#: The module that declares each command. The root group imports a command's module only when that command
#: is asked for, so `ledgermem --version` loads neither DuckDB nor the harness (a test keeps this table whole).
COMMANDS: dict[str, str] = {
    **dict.fromkeys(("run", "report", "chat", "replay", "audit", "erase", "export", "import", "sql", "verify"),
                    "ledgermem.cli.commands"),
    "checkpoint": "ledgermem.cli.checkpoint",
    "merge": "ledgermem.cli.cluster",
    "judge-eval": "ledgermem.cli.judge",
    "repair": "ledgermem.cli.repair",
    "serve": "ledgermem.cli.serve",
    "mcp": "ledgermem.cli.serve",
    "sweep": "ledgermem.cli.sweep",
    **dict.fromkeys(("live", "token", "tools"), "ledgermem.cli.live"),
    **dict.fromkeys(("history", "as-of", "diff", "blame", "manifest", "anomalies", "ddl"), "ledgermem.cli.temporal"),
}

F = TypeVar("F", bound=Callable[..., Any])
# Wide enough for the metrics table when piped (rich assumes 80 columns off a terminal).
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def fails_cleanly(fn: F) -> F:
    """Report our own errors as one line and exit 1; never a traceback for bad input."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from ledgermem.ledger.errors import LedgermemError  # here, not at the top: the root stays light

        try:
            return fn(*args, **kwargs)
        except LedgermemError as exc:
            err.print(f"error: {exc}", markup=False)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


class LazyGroup(click.Group):
    """A group whose commands are imported from their modules (`COMMANDS`) when first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(COMMANDS[cmd_name])  # its decorators add it to this group
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ledgermem")
def cli() -> None:
    """ledgermem: an auditable, event-sourced three-layer memory for LLM agents.

    \b
    Example:
      ledgermem run --episodes 4 --turns 24
    """


def main() -> None:
    """The `ledgermem` console script."""
    cli()
