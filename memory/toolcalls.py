"""Tool calls parsed from model text: `key="v"`, `key=v`, `key: 'v'`, and JSON.

Tool results that the model echoes back (`[TOOL RESULT ...]` blocks) are
removed before parsing, so quoting a result is never a new call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

TOOL_NAMES = ("get_archived_summary", "get_raw_record", "get_predecessor_summary", "expand_index")
ALIASES = {
    "id": "summary_id", "sid": "summary_id",
    "ref": "reference_id", "reference": "reference_id", "record_id": "reference_id", "raw_id": "reference_id",
    "key": "fact_key", "slot": "fact_key",
    "exclude": "exclude_value", "value": "exclude_value",
    "index": "index_id",
}
_ECHO = re.compile(r"\[TOOL RESULT[^\]]*\].*?(\[/TOOL RESULT\]|\Z)", re.DOTALL)
_CALL = re.compile(r"\b(" + "|".join(TOOL_NAMES) + r")\s*\(([^()]*)\)")
_ARG = re.compile(r"""(\w+)\s*[:=]\s*(?:"([^"]*)"|'([^']*)'|“([^”]*)”|([^,\s)][^,)]*))""")


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    args: dict[str, str]


@dataclass(frozen=True, slots=True)
class ParsedTools:
    calls: tuple[ToolCall, ...]
    unparsable: tuple[str, ...] = field(default=())


def _canonical_args(raw: dict[str, object]) -> dict[str, str]:
    return {ALIASES.get(k, k): str(v).strip() for k, v in raw.items()}


def _json_calls(text: str) -> list[ToolCall]:
    calls = []
    for m in re.finditer(r"\{.*\}", text, re.DOTALL):
        try:
            obj = json.loads(m.group(0))
        except ValueError:
            continue
        for item in obj if isinstance(obj, list) else [obj]:
            if not isinstance(item, dict):
                continue
            name = item.get("name") or item.get("tool")
            args = item.get("arguments") or item.get("args") or item.get("parameters") or {}
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    args = {}
            if name in TOOL_NAMES and isinstance(args, dict):
                calls.append(ToolCall(name, _canonical_args(args)))
    return calls


def parse_tool_calls(text: str) -> ParsedTools:
    """Every tool call in `text`, in order, and the call-like fragments that could not be read."""
    text = _ECHO.sub(" ", text)
    calls: list[ToolCall] = []
    bad: list[str] = []
    for m in _CALL.finditer(text):
        args = {k: next((v for v in vals if v), "") for k, *vals in _ARG.findall(m.group(2))}
        if args or not m.group(2).strip():
            calls.append(ToolCall(m.group(1), _canonical_args(args)))
        else:
            bad.append(m.group(0))
    if not calls:
        calls = _json_calls(text)
    mentioned = [n for n in TOOL_NAMES if n in text]
    if not calls and not bad and mentioned and "(" in text:
        bad.append(text.strip()[:200])
    return ParsedTools(tuple(calls), tuple(bad))
