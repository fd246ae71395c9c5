"""Tool calls parsed from model text, in the order they appear.

Formats read:

    get_raw_record(reference_id="r0007")       also key=v, key: 'v', smart quotes
    {"name": "get_raw_record", "arguments": {"reference_id": "r0007"}}     an object or a list
    <tool_call>{"name": ..., "arguments": {...}}</tool_call>
    <｜DSML｜function_calls>                    DeepSeek's markup, with `｜` or `|`;
    <｜DSML｜invoke name="get_raw_record">      `tool_calls` is the wrapper of later
    <｜DSML｜parameter name="reference_id" string="true">r0007</｜DSML｜parameter>
    </｜DSML｜invoke>                           models, and the wrapper may be missing
    </｜DSML｜function_calls>

Argument names are canonicalised with `ALIASES` in every format.

Tool results the model echoes back are blanked out before anything is read,
so quoting a result is never a new call: this project's
`[TOOL RESULT name] ... [/TOOL RESULT]`, DeepSeek's `<function_results>` and
`<tool_result>`, and `<tool_response>`. A block with no closing marker runs to
the end of the text.

What looks like a call but cannot be read (markup naming an unknown tool,
markup left open, `get_raw_record(???)`) is returned in `unparsable`, never
raised: the caller records each fragment as a failed call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

TOOL_NAMES = ("get_archived_summary", "get_raw_record", "get_predecessor_summary", "expand_index", "page_in")
ALIASES = {
    "id": "summary_id", "sid": "summary_id",
    "ref": "reference_id", "reference": "reference_id", "record_id": "reference_id", "raw_id": "reference_id",
    "key": "fact_key", "slot": "fact_key",
    "exclude": "exclude_value", "value": "exclude_value",
    "index": "index_id",
    "item": "item_id",
}


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    args: dict[str, str]


@dataclass(frozen=True, slots=True)
class ParsedTools:
    calls: tuple[ToolCall, ...]
    unparsable: tuple[str, ...] = field(default=())


# What a reader found: its span in the text and a call, an unreadable fragment,
# or None for markup that is only consumed (a DSML wrapper tag).
_Found = tuple[int, int, ToolCall | str | None]

# Text already accounted for is overwritten with this, never with spaces: a
# blanked echo between a tool name and "(" must not join them into a call.
_GONE = "\x00"
_MAX_FRAGMENT = 200
_NAMES = "|".join(TOOL_NAMES)
_DSML = r"[|｜]\s*DSML\s*[|｜]"

_ECHO_OPEN = re.compile(
    r"\[TOOL RESULT[^\]]*\]"
    rf"|<\s*(?:{_DSML}\s*)?(?P<tag>tool_result|function_results|tool_response)\b[^<>]*>"
)
_ECHO_CLOSE: dict[str | None, re.Pattern[str]] = {
    None: re.compile(r"\[/TOOL RESULT\]"),
    **{tag: re.compile(rf"<\s*/\s*(?:{_DSML}\s*)?{tag}\s*>")
       for tag in ("tool_result", "function_results", "tool_response")},
}

_DSML_TAG = re.compile(rf"<\s*(?P<close>/\s*)?{_DSML}\s*(?P<kind>\w+)\b(?P<attrs>[^<>{_GONE}]*)>")
_DSML_ATTR = re.compile(r"""(\w+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_DSML_WRAPPERS = frozenset({"function_calls", "tool_calls", "parallel_tool_calls"})

_TOOL_CALL = re.compile(r"<tool_call>(?P<body>.*?)(?:</tool_call>|\Z)", re.DOTALL)
_JSON_START = re.compile(r"\{|\[(?=\s*\{)")
_JSON_ARGS = ("arguments", "args", "parameters", "input")

_CALL = re.compile(rf"\b({_NAMES})\s*[(（]([^()（）{_GONE}]*)[)）]")
_ARG = re.compile(
    r"""(\w+)\s*[:=：＝]\s*"""
    r"""(?:"([^"]*)"|'([^']*)'|“([^”]*)”|‘([^’]*)’|「([^」]*)」|([^,，\s)）][^,，)）]*))"""
)
_MENTION = re.compile(rf"\b({_NAMES})\s*[(（]")


def parse_tool_calls(text: str) -> ParsedTools:
    """Every tool call in `text`, in order, and the call-like fragments that could not be read."""
    visible = _blank(text, _echo_spans(text))
    found: list[_Found] = []
    for read in _READERS:
        step = read(visible)
        found += step
        visible = _blank(visible, [(start, end) for start, end, _ in step])
    found.sort(key=lambda f: f[0])  # stable: calls from one span keep their order
    calls = tuple(item for _, _, item in found if isinstance(item, ToolCall))
    unparsable = tuple(item for _, _, item in found if isinstance(item, str))
    return ParsedTools(calls, unparsable)


# -- echoed results -----------------------------------------------------------------


def _echo_spans(text: str) -> list[tuple[int, int]]:
    """Spans of echoed tool results, each from its opening marker to the *last* matching closer.

    The last, not the first: a result may itself quote the closing marker (a
    raw record is whatever the user typed), and stopping at the first would
    turn the rest of the quote into calls. The price is that a call written
    between two echoed results of the same kind is not read.
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    while (opening := _ECHO_OPEN.search(text, pos)) is not None:
        end = len(text)
        for closing in _ECHO_CLOSE[opening["tag"]].finditer(text, opening.end()):
            end = closing.end()
        spans.append((opening.start(), end))
        pos = end
    return spans


def _blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` with the spans overwritten, keeping every offset where it was."""
    parts: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        start = max(start, pos)
        end = max(end, start)
        parts += [text[pos:start], _GONE * (end - start)]
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _fragment(text: str) -> str:
    return text.replace(_GONE, " ").strip()[:_MAX_FRAGMENT]


def _canonical_args(raw: Mapping[str, object]) -> dict[str, str]:
    return {ALIASES.get(k, k): _as_text(v).strip() for k, v in raw.items()}


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False)


# -- DSML ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tag:
    start: int
    end: int
    close: bool
    kind: str
    attrs: dict[str, str]

    def is_(self, kind: str, *, close: bool) -> bool:
        return self.kind == kind and self.close == close


def _dsml_tags(text: str) -> list[_Tag]:
    return [
        _Tag(m.start(), m.end(), bool(m["close"]), m["kind"],
             {k: double or single for k, double, single in _DSML_ATTR.findall(m["attrs"])})
        for m in _DSML_TAG.finditer(text)
    ]


def _read_dsml(text: str) -> list[_Found]:
    tags = _dsml_tags(text)
    found: list[_Found] = []
    i = 0
    while i < len(tags):
        tag = tags[i]
        if tag.kind in _DSML_WRAPPERS:
            found.append((tag.start, tag.end, None))
            i += 1
        elif tag.is_("invoke", close=False):
            i, item = _invoke(text, tags, i)
            found.append(item)
        else:  # a stray closing tag, or DSML this parser does not know
            found.append((tag.start, tag.end, _fragment(text[tag.start:tag.end])))
            i += 1
    return found


def _invoke(text: str, tags: list[_Tag], i: int) -> tuple[int, _Found]:
    """The call that `tags[i]` opens, or its fragment if malformed; and the index of the next tag to read."""
    opening = tags[i]
    name = opening.attrs.get("name", "").strip()
    raw: dict[str, str] = {}
    j = i + 1
    while j + 1 < len(tags) and tags[j].is_("parameter", close=False) and tags[j + 1].is_("parameter", close=True):
        param = tags[j]
        if "name" not in param.attrs:
            break
        raw[param.attrs["name"]] = _dsml_value(text[param.end:tags[j + 1].start], param.attrs.get("string"))
        j += 2
    if j < len(tags) and tags[j].is_("invoke", close=True):
        end = tags[j].end
        if name in TOOL_NAMES and _GONE not in text[opening.start:end]:
            return j + 1, (opening.start, end, ToolCall(name, _canonical_args(raw)))
        return j + 1, (opening.start, end, _fragment(text[opening.start:end]))
    # Malformed: one fragment through this invoke's closing tag, if it has one
    # before the next invoke or wrapper, else up to that tag or the end.
    k = j
    while k < len(tags) and tags[k].kind != "invoke" and tags[k].kind not in _DSML_WRAPPERS:
        k += 1
    if k < len(tags) and tags[k].is_("invoke", close=True):
        return k + 1, (opening.start, tags[k].end, _fragment(text[opening.start:tags[k].end]))
    end = tags[k].start if k < len(tags) else len(text)
    return k, (opening.start, end, _fragment(text[opening.start:end]))


def _dsml_value(raw: str, string: str | None) -> str:
    """A parameter's text; `string="false"` marks JSON, of which only a JSON string is unwrapped."""
    value = raw.strip()
    if string == "false":
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            return value
        if isinstance(decoded, str):
            return decoded
    return value


# -- JSON ---------------------------------------------------------------------------


def _json_call(obj: object) -> ToolCall | str | None:
    """The call a JSON object spells; a reason if it names a tool but its arguments cannot be read; else None."""
    if not isinstance(obj, dict):
        return None
    function = obj.get("function")  # {"type": "function", "function": {"name": ..., "arguments": ...}}
    call: dict[str, object] = function if isinstance(function, dict) else obj
    name = call.get("name", call.get("tool"))
    if not isinstance(name, str) or name.strip() not in TOOL_NAMES:
        return None
    args = next((call[k] for k in _JSON_ARGS if k in call), None)
    if isinstance(args, str):  # arguments sent as a JSON-encoded string
        try:
            args = json.loads(args) if args.strip() else None
        except (ValueError, RecursionError):
            return "arguments are not JSON"
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return "arguments are not an object"
    try:
        return ToolCall(name.strip(), _canonical_args(args))
    except (ValueError, RecursionError):
        return "arguments cannot be written as text"


def _json_items(value: object) -> list[ToolCall | str | None]:
    return [_json_call(v) for v in value] if isinstance(value, list) else [_json_call(value)]


def _decode_all(body: str) -> list[object] | None:
    """The JSON values that make up `body` back to back, or None if any of it is not JSON."""
    decoder, pos = json.JSONDecoder(), 0
    values: list[object] = []
    while pos < len(body):
        try:
            value, pos = decoder.raw_decode(body, pos)
        except (ValueError, RecursionError):
            return None
        values.append(value)
        while pos < len(body) and body[pos].isspace():
            pos += 1
    return values


def _read_tool_call_tags(text: str) -> list[_Found]:
    """`<tool_call>` blocks: JSON inside must be nothing but calls; anything else is left to the other readers."""
    found: list[_Found] = []
    for m in _TOOL_CALL.finditer(text):
        body = m["body"].strip()
        if body and body[0] not in "{[":
            found += [(m.start(), m.start("body"), None), (m.end("body"), m.end(), None)]
            continue
        values = _decode_all(body) if body else None
        items = [item for v in values or [] for item in _json_items(v)]
        if values and items and all(isinstance(item, ToolCall) for item in items):
            found += [(m.start(), m.end(), item) for item in items]
        else:
            found.append((m.start(), m.end(), _fragment(m[0])))
    return found


def _read_json(text: str) -> list[_Found]:
    """JSON objects and lists anywhere in the text that spell calls; other JSON is prose."""
    decoder = json.JSONDecoder()
    found: list[_Found] = []
    resume = 0
    for m in _JSON_START.finditer(text):
        if m.start() < resume:
            continue
        try:
            value, end = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        items = [item for item in _json_items(value) if item is not None]
        if not items:
            continue  # not a call; an object nested inside it may still be one
        calls = [item for item in items if isinstance(item, ToolCall)]
        found += [(m.start(), end, call) for call in calls]
        if len(calls) < len(items):
            found.append((m.start(), end, _fragment(text[m.start():end])))
        resume = end
    return found


# -- name(key="value") ----------------------------------------------------------------


def _read_kwargs(text: str) -> list[_Found]:
    found: list[_Found] = []
    for m in _CALL.finditer(text):
        inner = m.group(2)
        args = {k: next((v for v in vals if v), "") for k, *vals in _ARG.findall(inner)}
        if args or not inner.strip():
            found.append((m.start(), m.end(), ToolCall(m.group(1), _canonical_args(args))))
        else:
            found.append((m.start(), m.end(), _fragment(m.group(0))))
    return found


def _read_mentions(text: str) -> list[_Found]:
    """A tool name and "(" that no reader could take: a call the model meant but wrote badly."""
    found: list[_Found] = []
    for m in _MENTION.finditer(text):
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        found.append((m.start(), end, _fragment(text[m.start():end])))
    return found


# Markup first, so that text inside a call's markup is never read as a call of its own.
_READERS: tuple[Callable[[str], list[_Found]], ...] = (
    _read_dsml, _read_tool_call_tags, _read_json, _read_kwargs, _read_mentions,
)
