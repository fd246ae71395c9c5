"""The generated reference pages: every command's `--help`, and the service's list of questions.

`docs/cli.md` is the `--help` of the root group and of every command, in the
order `ledgermem --help` lists them; the routes table of `docs/serving.md`
(between its two markers) is written from `service.core.QUESTIONS`, the one
list the HTTP routes, the OpenAPI document and the MCP tools are made from.
Both are rendered at a fixed width with no environment read, so the same
code gives the same bytes on any machine; `tests/test_docs.py` checks that
the committed pages are what this module writes.

Example:
  python -m ledgermem.cli.reference > docs/cli.md     # the CLI reference alone, on stdout
  python -m ledgermem.cli.reference --write           # rewrite docs/cli.md and the table in docs/serving.md
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

__all__ = ["QUESTIONS_BEGIN", "QUESTIONS_END", "WIDTH", "cli_reference", "questions_table", "splice", "write"]

#: Columns of the rendered help (click wraps to the terminal otherwise).
WIDTH = 100
DOCS = Path(__file__).resolve().parent.parent / "docs"
QUESTIONS_BEGIN = ("<!-- generated from service/core.py's QUESTIONS by `python -m ledgermem.cli.reference --write`: "
                   "edit the list there, not here -->")
QUESTIONS_END = "<!-- end of the generated questions -->"


def _help(command: click.Command, name: str, parent: click.Context | None) -> str:
    ctx = click.Context(command, info_name=name, parent=parent, terminal_width=WIDTH, max_content_width=WIDTH,
                        **command.context_settings)
    return command.get_help(ctx).rstrip()


def cli_reference(group: click.Group | None = None) -> str:
    """docs/cli.md: the root group's help, then each command's (a group's subcommands under it), as Markdown."""
    if group is None:
        from ledgermem.cli.commands import cli as group  # every command declared on the root group
    root = click.Context(group, info_name="ledgermem", terminal_width=WIDTH, max_content_width=WIDTH,
                         **group.context_settings)
    names = group.list_commands(root)
    lines = [
        "# Command-line reference",
        "",
        ("Every command's `--help`, as `ledgermem COMMAND --help` prints it. This page is generated from the "
         "command tree by `python -m ledgermem.cli.reference --write`; `tests/test_docs.py` fails when it "
         "differs from what the commands say."),
        "",
        " · ".join(f"[`{name}`](#ledgermem-{name})" for name in names),
        "",
        "## `ledgermem`",
        "",
        "```text",
        group.get_help(root).rstrip(),
        "```",
    ]
    for name in names:
        command = group.get_command(root, name)
        if command is None:  # a name COMMANDS lists whose module does not declare it
            raise click.ClickException(f"command {name!r} is listed but its module does not declare it")
        lines += _section(command, name, root, f"ledgermem {name}")
    return "\n".join(lines) + "\n"


def _section(command: click.Command, name: str, parent: click.Context, path: str) -> list[str]:
    """A command's help, then (for a group) each subcommand's, depth first in the order its help lists them."""
    lines = ["", f"{'#' * min(2 + path.count(' ') - 1, 4)} `{path}`", "", "```text", _help(command, name, parent),
             "```"]
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=name, parent=parent, terminal_width=WIDTH, max_content_width=WIDTH,
                            **command.context_settings)
        for sub in command.list_commands(ctx):
            found = command.get_command(ctx, sub)
            if found is not None and not found.hidden:
                lines += _section(found, sub, ctx, f"{path} {sub}")
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def questions_table(questions: Iterable[Any] | None = None) -> str:
    """The routes of the audit service, one row per question: route, MCP tool, what it answers, parameters."""
    if questions is None:
        from ledgermem.service.core import QUESTIONS as questions
    lines = ["| route | MCP tool | answers | parameters |", "|---|---|---|---|"]
    for q in questions:
        params = ", ".join(
            f"`{p.name}`" + ("" if p.where in ("path", "query") else f" ({p.where})") + ("*" if p.required else "")
            for p in q.params if p.where != "path")
        tool = f"`{q.name}`" if q.mcp else "— (HTTP only)"
        lines.append(f"| `{q.method} {q.path}` | {tool} | {_cell(q.summary)} | {params or '—'} |")
    lines += ["", "`*` required; `(body)`: a JSON body field. Path parameters are the route's `{...}` parts."]
    return "\n".join(lines)


def splice(page: str, begin: str, end: str, generated: str) -> str:
    """`page` with what lies between its `begin` and `end` marker lines replaced by `generated`."""
    if page.count(begin) != 1 or page.count(end) != 1 or page.index(begin) > page.index(end):
        raise ValueError(f"the page must hold the marker {begin!r} once, then {end!r} once")
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n\n{generated.strip()}\n\n{end}{tail}"


def write(docs: Path = DOCS) -> list[Path]:
    """Rewrite docs/cli.md and the questions of docs/serving.md; the paths written."""
    cli_page = docs / "cli.md"
    cli_page.write_text(cli_reference(), encoding="utf-8")
    serving = docs / "serving.md"
    text = serving.read_text(encoding="utf-8")
    serving.write_text(splice(text, QUESTIONS_BEGIN, QUESTIONS_END, questions_table()), encoding="utf-8")
    return [cli_page, serving]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ledgermem.cli.reference", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true",
                        help="rewrite docs/cli.md and the questions of docs/serving.md instead of printing")
    args = parser.parse_args(argv)
    if args.write:
        for path in write():
            print(f"wrote {path.relative_to(DOCS.parent)}")
    else:
        sys.stdout.write(cli_reference())
    return 0


if __name__ == "__main__":
    sys.exit(main())
