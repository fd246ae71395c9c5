"""The documentation runs: every code block of README.md and docs/*.md, and the generated pages are current.

The conventions a page follows are in tests/docrunner.py. Each page runs in
its own scratch folder, its blocks in order; a block marked `skip: REASON`
is listed, never silently passed over. The controls feed the runner pages
that lie, and the generators changed inputs, and check that each is caught.
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from ledgermem.cli import reference
from tests.docrunner import PAGES, READ, ROOT, Block, DocError, all_blocks, blocks, page_run, run_page

#: Blocks that cannot run in the test suite, each with its reason in the page (a model server, a
#: Redis server, a background server (the live service adds four: its servers and clients), a cluster, a run of
#: minutes). A new one must be argued for here.
MAX_SKIPPED = 28


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_block_of_the_page_runs_and_prints_what_it_shows(page: Path) -> None:
    ran = page_run(page)
    read = [b for b in blocks(page) if b.skip is None and b.lang in READ]
    assert len(ran.ran) + len(ran.skipped) + len(read) == len(blocks(page)), page


def test_the_readme_runs_its_session_and_its_commands() -> None:
    ran = page_run(ROOT / "README.md")
    assert [b.lang for b in ran.ran] == ["bash", "python", "console"] and not ran.skipped
    assert [argv[0] for argv in ran.commands] == ["run", "report", "replay", "verify", "sql"]


def test_every_fence_says_what_it_is_and_skips_are_few_and_argued() -> None:
    found = list(all_blocks())
    langs = [b.lang for b in found]  # raises on an unknown or missing info string
    assert {"python", "console", "sql", "output"} <= set(langs)
    skipped = [b for b in found if b.skip is not None]
    assert all(len(b.skip or "") >= 10 for b in skipped), [b.where for b in skipped]
    assert len(skipped) <= MAX_SKIPPED, "\n".join(f"{b.where}: {b.skip}" for b in skipped)
    runnable = [b for b in found if b.skip is None and b.lang in ("python", "console", "bash", "sh", "sql")]
    assert len(runnable) > len(skipped)


# -- controls: pages that lie are caught ---------------------------------------------------------


def _page(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    return page


def test_control_a_python_block_that_prints_something_else_is_caught(tmp_path: Path) -> None:
    page = _page(tmp_path, "```python\nprint(6 * 7)\n```\n\nprints\n\n```output\n42\n```\n")
    run_page(page, tmp_path / "ok")
    lying = page.read_text(encoding="utf-8").replace("42", "43")
    with pytest.raises(DocError, match="page.md:7"):
        run_page(page, tmp_path / "lie", lying)


def test_control_a_python_block_that_raises_or_reaches_the_network_is_caught(tmp_path: Path) -> None:
    with pytest.raises(DocError, match="failed"):
        run_page(_page(tmp_path, "```python\nraise SystemExit(3)\n```\n"), tmp_path / "w1")
    net = "```python\nimport socket\nsocket.create_connection(('192.0.2.1', 80), timeout=1)\n```\n"
    with pytest.raises(DocError, match="network off"):
        run_page(_page(tmp_path, net), tmp_path / "w2")


def test_control_a_console_session_whose_output_differs_is_caught(tmp_path: Path) -> None:
    good = "```console\n$ ledgermem ddl\nCREATE TABLE IF NOT EXISTS events (\n...\n```\n"
    run_page(_page(tmp_path, good), tmp_path / "ok")
    with pytest.raises(DocError, match="prints"):
        run_page(_page(tmp_path, good.replace("CREATE TABLE IF NOT EXISTS events", "CREATE TABLE IF NOT EXISTS evens")), tmp_path / "lie")


def test_control_a_failing_command_the_page_does_not_show_failing_is_caught(tmp_path: Path) -> None:
    with pytest.raises(DocError, match="exited 1"):
        run_page(_page(tmp_path, "```bash\nledgermem verify no-such-run\n```\n"), tmp_path / "w")
    shown = "```console\n$ ledgermem verify no-such-run\nerror: ...no-such-run...\n```\n"
    run_page(_page(tmp_path, shown), tmp_path / "w2")


def test_control_a_sql_block_that_fails_or_has_no_run_is_caught(tmp_path: Path) -> None:
    with pytest.raises(DocError, match="made none"):
        run_page(_page(tmp_path, "```sql\nSELECT 1\n```\n"), tmp_path / "w")


def test_control_shell_syntax_unknown_fences_and_a_skip_without_reason_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DocError, match="needs a shell"):
        run_page(_page(tmp_path, "```bash\nledgermem ddl | head\n```\n"), tmp_path / "w1")
    with pytest.raises(DocError, match="info string"):
        run_page(_page(tmp_path, "```\nanything\n```\n"), tmp_path / "w2")
    with pytest.raises(DocError, match="info string"):
        Block(Path("p.md"), 1, "bash skip", "ledgermem ddl\n").lang
    skipped = run_page(_page(tmp_path, "```bash skip: needs a model server\nledgermem run --backend vllm\n```\n"),
                       tmp_path / "w3")
    assert [b.skip for b in skipped.skipped] == ["needs a model server"] and not skipped.ran


def test_control_a_toml_or_json_block_that_does_not_parse_is_caught(tmp_path: Path) -> None:
    assert run_page(_page(tmp_path, "```toml\nx = { ok = 0.9 }\n```\n"), tmp_path / "w1").ran
    with pytest.raises(DocError, match="does not parse"):
        run_page(_page(tmp_path, "```toml\nx = { ok = 0.9\n```\n"), tmp_path / "w2")
    with pytest.raises(DocError, match="does not parse"):
        run_page(_page(tmp_path, '```json\n{"a": 1,}\n```\n'), tmp_path / "w3")


def test_non_ledgermem_lines_are_shown_not_run(tmp_path: Path) -> None:
    page = _page(tmp_path, "```bash\npip install -e '.[dev]' && python -m pytest\nrm -rf /\n```\n")
    ran = run_page(page, tmp_path / "w")
    assert ran.ran and not ran.commands  # shown, not executed: neither line is a ledgermem command


# -- generated pages --------------------------------------------------------------------------------


def test_the_cli_reference_is_what_the_commands_say() -> None:
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == reference.cli_reference(), \
        "docs/cli.md is stale: python -m ledgermem.cli.reference --write"


def test_control_a_changed_help_makes_the_cli_reference_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    from ledgermem.cli.commands import cli

    sql = cli.get_command(click.Context(cli), "sql")
    assert sql is not None and sql.help
    monkeypatch.setattr(sql, "help", sql.help.replace("read-only", "read-write"))
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") != reference.cli_reference()


def test_the_serving_page_lists_the_one_list_of_questions() -> None:
    from ledgermem.service.core import QUESTIONS

    page = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    generated = reference.splice(page, reference.QUESTIONS_BEGIN, reference.QUESTIONS_END,
                                 reference.questions_table())
    assert page == generated, "docs/serving.md is stale: python -m ledgermem.cli.reference --write"
    assert all(f"`{q.method} {q.path}`" in page for q in QUESTIONS)


def test_control_a_question_added_or_dropped_makes_the_serving_page_stale() -> None:
    from ledgermem.service.core import QUESTIONS

    page = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    fewer = reference.splice(page, reference.QUESTIONS_BEGIN, reference.QUESTIONS_END,
                             reference.questions_table(QUESTIONS[:-1]))
    assert fewer != page
    with pytest.raises(ValueError, match="marker"):
        reference.splice(page.replace(reference.QUESTIONS_END, ""), reference.QUESTIONS_BEGIN,
                         reference.QUESTIONS_END, "x")


def test_reference_writes_both_pages(tmp_path: Path) -> None:
    (tmp_path / "serving.md").write_text(f"# S\n\n{reference.QUESTIONS_BEGIN}\nSTALE TABLE\n{reference.QUESTIONS_END}\n\ntail\n",
                                         encoding="utf-8")
    reference.write(tmp_path)
    assert (tmp_path / "cli.md").read_text(encoding="utf-8") == reference.cli_reference()
    serving = (tmp_path / "serving.md").read_text(encoding="utf-8")
    assert "STALE TABLE" not in serving and "`GET /api/runs`" in serving and serving.endswith("\n\ntail\n")
