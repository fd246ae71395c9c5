"""`ledgermem ARGS` run in-process from a folder (the runs folder is relative to it), for the CLI tests."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner, Result

from ledgermem.cli.commands import cli


def invoke_in(cwd: Path, *args: str) -> Result:
    """The command's result, exceptions not caught (a traceback is a failure of the test, not an output)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
