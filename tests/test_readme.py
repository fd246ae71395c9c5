"""The README is a first screen that links the rest, and no link of the documentation is broken.

What the README's code does is checked by the doc runner (tests/test_docs.py);
here: every page of docs/ is linked from the README, and every relative link
of README.md and docs/*.md names a file that exists and, with `#anchor`, a
heading of that file (GitHub's slugs). Controls: a renamed page, a changed
heading and an unlinked page are caught.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
#: The README's first screen ends where its command table's notes end; it stays short.
MAX_README_LINES = 200


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip()).lower()
    text = "".join(c for c in text if c in " -" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", text), re.MULTILINE)}


def broken_links(page: Path, text: str, files: dict[Path, str]) -> list[str]:
    """Every relative link of `text` (read as `page`) that names no file, or no heading of that file."""
    problems = []
    for plain, image in LINK.findall(FENCE.sub("", text)):
        target = plain or image
        if re.match(r"^[a-z]+:", target):
            continue
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        if not path.exists():
            problems.append(f"{page.name}: {target}: no such file")
        elif anchor and path.suffix == ".md":
            content = files.get(path) or path.read_text(encoding="utf-8")
            if anchor not in anchors(content):
                problems.append(f"{page.name}: {target}: no heading #{anchor} in {path.name}")
    return problems


def test_every_link_of_the_documentation_resolves() -> None:
    files = {p.resolve(): p.read_text(encoding="utf-8") for p in PAGES}
    problems = [p for page in PAGES for p in broken_links(page.resolve(), files[page.resolve()], files)]
    assert not problems, "\n".join(problems)


def test_control_a_renamed_page_and_a_changed_heading_are_caught() -> None:
    files = {p.resolve(): p.read_text(encoding="utf-8") for p in PAGES}
    readme = files[README.resolve()]
    renamed = readme.replace("(docs/cookbook.md)", "(docs/sql-cookbook.md)")
    assert any("docs/sql-cookbook.md: no such file" in p for p in broken_links(README.resolve(), renamed, files))
    evaluation = (ROOT / "docs" / "evaluation.md").resolve()
    files[evaluation] = files[evaluation].replace("## Gate levels: `ledgermem sweep`", "## Gate levels")
    assert any("no heading #gate-levels-ledgermem-sweep" in p for p in broken_links(README.resolve(), readme, files))


def unlinked(readme: str) -> set[str]:
    """The pages of docs/ the README does not link."""
    linked = set(re.findall(r"\]\((docs/[^)#\s]+\.md)", readme))
    return {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} - linked


def test_the_readme_links_every_page_of_docs_and_stays_a_first_screen() -> None:
    readme = README.read_text(encoding="utf-8")
    assert not unlinked(readme), f"pages the README does not link: {sorted(unlinked(readme))}"
    assert len(readme.splitlines()) <= MAX_README_LINES
    assert "```python" in readme and "```console" in readme  # the short session, in Python and on the CLI


def test_control_an_unlinked_page_is_caught() -> None:
    readme = README.read_text(encoding="utf-8").replace("(docs/datasets.md)", "(datasets)")
    assert unlinked(readme) == {"docs/datasets.md"}
