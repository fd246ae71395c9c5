"""Normalised string match, as the memory and the judges use it: defined in `gate.matching`.

The extraction-completeness check (I4) compares values the same way the
string judge does, and the gate sits below the memory; so the one
definition lives there and is re-exported here under its old name.
"""

from __future__ import annotations

from gate.matching import judge_string, normalise

__all__ = ["judge_string", "normalise"]
