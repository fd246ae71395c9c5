"""The README's Python session runs and prints exactly what the README shows."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_session_prints_what_it_shows(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.DOTALL).group(1)
    shown = re.search(r"prints\n\n```\n(.*?)```", text, re.DOTALL).group(1)
    buffer = io.StringIO()
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(buffer):
            exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(old)
    assert buffer.getvalue() == shown
