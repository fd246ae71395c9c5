"""The root of the `ledgermem` command tree, its consoles and its error boundary.

Every `cli_*` module imports the group from here and declares its commands
on it; `evaluation.cli` imports them all. This is the only place that turns
errors into exit codes: 0 success, 1 a failed check or a `LedgermemError`
(one line on stderr, no traceback), 2 a usage error.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

from ledger.errors import LedgermemError

__all__ = ["cli", "err", "fails_cleanly", "out"]

F = TypeVar("F", bound=Callable[..., Any])
# Wide enough for the metrics table when piped (rich assumes 80 columns off a terminal).
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def fails_cleanly(fn: F) -> F:
    """Report our own errors as one line and exit 1; never a traceback for bad input."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except LedgermemError as exc:
            err.print(f"error: {exc}", markup=False)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ledgermem")
def cli() -> None:
    """ledgermem: an auditable, event-sourced three-layer memory for LLM agents.

    \b
    Example:
      ledgermem run --episodes 4 --turns 24
    """
