"""Run the fenced code blocks of a Markdown page, in order, in one scratch folder per page.

The conventions a page follows (tests/test_docs.py runs README.md and docs/*.md):

- Every fence has an info string; its first word says what the block is:
  `python` runs in a fresh interpreter; `console` runs each `$ ledgermem ...`
  line and compares what it prints with the lines shown under it (`...`
  stands for any text; runs of whitespace compare equal); `bash`/`sh` run
  each `ledgermem ...` line; `sql` runs the query with `ledgermem sql` on the
  run the page made last. Lines that are not `ledgermem` commands (`pip
  install`, `curl`, `python -m benchmarks`) are shown, not run. `output` is
  what the python block before it prints, compared the same way; `toml`
  and `json` must parse; `text` is read, not run.
- A block that cannot run here says so, and why, in its info string:
  ```` ```console skip: needs a model server ````. Keep them rare.
- A command shown failing (exit code other than 0) must show what it prints.

Blocks share the page's scratch folder (the working directory), so a page
can make a run and then query it. The checkpoint key lives in that folder,
every `LEDGERMEM_*` variable of the caller's environment is removed, and no
block can open a network connection.
"""

from __future__ import annotations

import dataclasses
import doctest
import functools
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

#: Folders of the repository a page may name (fixtures, notebooks), linked into each page's scratch folder.
LINKED = ("tests", "notebooks")
RUN = frozenset({"python", "console", "bash", "sh", "sql", "toml", "json"})
READ = frozenset({"output", "text"})
FENCE = re.compile(r"^(`{3,})(.*)$")
INFO = re.compile(r"^(?P<lang>[A-Za-z]+)(?:\s+skip:\s*(?P<reason>\S.*))?$")
SHELL = re.compile(r"^[|&;<>()]+$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
CHECKER = doctest.OutputChecker()
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
#: Refuses every connection that leaves the machine, in a block's interpreter (it is put on PYTHONPATH).
NO_NETWORK = '''
import socket
_connect = socket.socket.connect
def _refuse(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        raise OSError("the documentation's code blocks run with the network off")
    return _connect(self, address)
socket.socket.connect = _refuse
'''


class DocError(AssertionError):
    """A block that does not do what its page shows; names the page and line."""


@dataclasses.dataclass(frozen=True, slots=True)
class Block:
    page: Path
    line: int  # of the opening fence, from 1
    info: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page}:{self.line}"

    @property
    def lang(self) -> str:
        match = INFO.match(self.info.strip())
        if not match or match["lang"] not in RUN | READ:
            raise DocError(f"{self.where}: a fence's info string must be one of {sorted(RUN | READ)}, "
                           f"optionally followed by 'skip: REASON'; got {self.info!r}")
        return match["lang"]

    @property
    def skip(self) -> str | None:
        self.lang  # validates the info string
        match = INFO.match(self.info.strip())
        return match["reason"] if match else None


def blocks(page: Path, text: str | None = None) -> list[Block]:
    """The fenced blocks of a page, in order."""
    lines = (page.read_text(encoding="utf-8") if text is None else text).split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, info = opening.groups()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(fence) and not lines[j].strip("`")),
                   None)
        if end is None:
            raise DocError(f"{page}:{i + 1}: a fence that is never closed")
        found.append(Block(page, i + 1, info, "\n".join(lines[i + 1:end]) + "\n"))
        i = end + 1
    return found


@dataclasses.dataclass
class Command:
    line: str
    expected: list[str] = dataclasses.field(default_factory=list)


def commands(block: Block) -> list[Command]:
    """The command lines of a shell block (continuations joined) and, for `console`, what each prints."""
    found: list[Command] = []
    lines = block.text.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if block.lang == "console":
            if not line.startswith("$ "):
                if not found:
                    raise DocError(f"{block.where}: a console block starts with a `$ ` command line")
                found[-1].expected.append(line)
                i += 1
                continue
            line = line[2:]
        elif not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i].strip()
        found.append(Command(line.strip()))
        i += 1
    return found


def split_command(block: Block, line: str) -> tuple[dict[str, str], list[str]] | None:
    """(environment, argv) of a `ledgermem` command line, or None for any other command."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens = list(lexer)
    env: dict[str, str] = {}
    while tokens and ASSIGNMENT.match(tokens[0]):
        name, _, value = tokens.pop(0).partition("=")
        env[name] = value
    if not tokens or tokens[0] != "ledgermem":
        return None
    if any(SHELL.match(t) or "$" in t for t in tokens):
        raise DocError(f"{block.where}: `{line}` needs a shell (pipes, redirection, background, variables): "
                       "write it without, or mark the block `skip: REASON`")
    return env, tokens[1:]


def same(expected: str, got: str) -> bool:
    return CHECKER.check_output(expected.strip() + "\n", got.strip() + "\n", FLAGS)


class Page:
    """One page's run: its scratch folder, its environment, the run it made last."""

    def __init__(self, page: Path, workdir: Path) -> None:
        self.page = page
        self.workdir = workdir
        self.last_run: str | None = None
        self.ran: list[Block] = []
        self.skipped: list[Block] = []
        self.commands: list[list[str]] = []  # every ledgermem command run, as argv
        support = workdir / ".docrunner"
        support.mkdir(parents=True, exist_ok=True)
        for shared in LINKED:  # pages name files of the repository by their relative path
            if not (workdir / shared).exists():
                (workdir / shared).symlink_to(ROOT / shared, target_is_directory=True)
        (support / "sitecustomize.py").write_text(NO_NETWORK, encoding="utf-8")
        self.support = support
        self.env = {
            "LEDGERMEM_CHECKPOINT_KEY": str(workdir / ".keys" / "checkpoint.key"),
            "XDG_CONFIG_HOME": str(workdir / ".config"),
            "PYTHONPATH": os.pathsep.join([str(support), str(ROOT)]),
            "PYTHONHASHSEED": "0",
        }

    # -- python ----------------------------------------------------------------------------

    def python(self, block: Block, shown: Block | None) -> None:
        script = self.support / f"block_{block.line}.py"
        script.write_text(block.text, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGERMEM_")} | self.env
        done = subprocess.run([sys.executable, str(script)], cwd=self.workdir, env=env, capture_output=True,
                              text=True, timeout=300)
        if done.returncode != 0:
            raise DocError(f"{block.where}: the python block failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        if shown is not None and not same(shown.text, done.stdout):
            raise DocError(f"{shown.where}: the python block at line {block.line} prints\n{done.stdout}\n"
                           f"but the page shows\n{shown.text}")

    # -- ledgermem commands ------------------------------------------------------------------

    def ledgermem(self, block: Block, env: dict[str, str], argv: list[str], expected: str = "") -> str:
        from click.testing import CliRunner

        from ledgermem.cli.commands import cli

        clean = {k: None for k in os.environ if k.startswith("LEDGERMEM_")}
        full_env: dict[str, str | None] = {**clean, **self.env, **env}
        old = os.getcwd()
        os.chdir(self.workdir)
        try:
            with no_network():
                result = CliRunner().invoke(cli, argv, env=full_env, prog_name="ledgermem")
        finally:
            os.chdir(old)
        line = "ledgermem " + shlex.join(argv)
        self.commands.append(argv)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise DocError(f"{block.where}: `{line}` raised {result.exception!r}\n{result.output[-3000:]}")
        shown = expected.strip()
        if shown and not same(shown, result.output):
            raise DocError(f"{block.where}: `{line}` prints\n{result.output}\nbut the page shows\n{expected}")
        if result.exit_code != 0 and (not shown or all(x.strip() == "..." for x in shown.splitlines())):
            raise DocError(f"{block.where}: `{line}` exited {result.exit_code} and the page does not show it "
                           f"failing:\n{result.output[-3000:]}")
        if argv[:1] == ["run"] and "--run-id" in argv:
            self.last_run = argv[argv.index("--run-id") + 1]
        return result.output

    def shell(self, block: Block) -> None:
        for command in commands(block):
            split = split_command(block, command.line)
            if split is not None:
                self.ledgermem(block, *split, expected="\n".join(command.expected))

    def sql(self, block: Block) -> None:
        if self.last_run is None:
            raise DocError(f"{block.where}: a sql block runs on the run the page made last; this page made none")
        self.ledgermem(block, {}, ["sql", "--", self.last_run, block.text.strip().rstrip(";")])  # "--": a query may open with a comment

    # -- the page ------------------------------------------------------------------------------

    def run(self, text: str | None = None) -> Page:
        found = blocks(self.page, text)
        for i, block in enumerate(found):
            if block.skip is not None:
                self.skipped.append(block)
                continue
            lang = block.lang
            if lang == "python":
                after = found[i + 1] if i + 1 < len(found) else None
                self.python(block, after if after is not None and after.lang == "output" else None)
            elif lang in ("console", "bash", "sh"):
                self.shell(block)
            elif lang == "sql":
                self.sql(block)
            elif lang in ("toml", "json"):
                parse(block)
            else:
                if lang == "output" and (i == 0 or found[i - 1].lang != "python"):
                    raise DocError(f"{block.where}: an output block follows the python block that prints it")
                continue
            self.ran.append(block)
        return self


def parse(block: Block) -> None:
    """A toml or json block is a file someone will copy: it must parse."""
    import json
    import tomllib

    try:
        tomllib.loads(block.text) if block.lang == "toml" else json.loads(block.text)
    except ValueError as exc:
        raise DocError(f"{block.where}: the {block.lang} block does not parse: {exc}") from exc


class no_network:
    """Refuse connections that leave the machine while CLI commands run in this process."""

    def __enter__(self) -> None:
        self.connect = socket.socket.connect

        def refuse(sock: socket.socket, address: object) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                raise OSError("the documentation's code blocks run with the network off")
            self.connect(sock, address)

        socket.socket.connect = refuse  # type: ignore[method-assign]

    def __exit__(self, *exc: object) -> None:
        socket.socket.connect = self.connect  # type: ignore[method-assign]


def run_page(page: Path, workdir: Path, text: str | None = None) -> Page:
    """Run every block of `page` (or of `text`, read as that page) in `workdir`."""
    return Page(page, workdir).run(text)


@functools.cache
def page_run(page: Path) -> Page:
    """A page run once per test session, in a scratch folder removed at exit (for tests that query what
    a page made, like the cookbook's run)."""
    workdir = Path(tempfile.mkdtemp(prefix=f"docs-{page.stem}-"))
    import atexit

    atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    return run_page(page, workdir)


def all_blocks() -> Iterator[Block]:
    for page in PAGES:
        yield from blocks(page)
