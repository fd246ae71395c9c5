"""Small shims so the code runs on every Python the project supports (>= 3.10)."""

from __future__ import annotations

import sys
from typing import NoReturn

if sys.version_info >= (3, 11):
    from typing import assert_never
else:  # pragma: no cover - exercised only on 3.10

    def assert_never(arg: NoReturn, /) -> NoReturn:
        raise AssertionError(f"unhandled case: {arg!r}")


__all__ = ["assert_never"]
