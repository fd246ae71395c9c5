"""Properties of the tool-call parser over generated replies.

A reply is built from a grammar that mixes pieces of every format with
brackets, quotes, bars and CJK, and from calls rendered in every format.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledgermem.memory.toolcalls import (
    ALIASES,
    TOOL_NAMES,
    ParsedTools,
    ToolCall,
    parse_tool_calls,
)

CANONICAL = sorted(set(ALIASES.values()))
SPELLINGS = {name: [name, *sorted(a for a, c in ALIASES.items() if c == name)] for name in CANONICAL}

# Values a call can carry in every format: no quotes, brackets, bars, commas or newlines.
SAFE = st.characters(categories=("L", "N", "Zs", "Pd")) | st.sampled_from(list(".:;!?/#@%&*+=~^$、。：；！？"))
VALUES = st.text(alphabet=SAFE, min_size=1, max_size=16).map(str.strip).filter(bool)

Args = dict[str, str]


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, Args, ToolCall]:
    """A tool name, its arguments as the model spells them (aliases included), and the call they mean."""
    name = draw(st.sampled_from(TOOL_NAMES))
    canonical = draw(st.dictionaries(st.sampled_from(CANONICAL), VALUES, max_size=3))
    spelled = {draw(st.sampled_from(SPELLINGS[k])): v for k, v in canonical.items()}
    return name, spelled, ToolCall(name, canonical)


def _kwargs(pattern: str) -> Callable[[str, Args], str]:
    return lambda name, args: f"{name}(" + ", ".join(pattern.format(k=k, v=v) for k, v in args.items()) + ")"


def _json(name: str, args: Args) -> str:
    return json.dumps({"name": name, "arguments": args}, ensure_ascii=False)


def _dsml(bar: str, wrapper: str, attr: str) -> Callable[[str, Args], str]:
    d = f"{bar}DSML{bar}"

    def render(name: str, args: Args) -> str:
        params = "".join(f'\n<{d}parameter name="{k}"{attr}>{v}</{d}parameter>' for k, v in args.items())
        return f'<{d}{wrapper}>\n<{d}invoke name="{name}">{params}\n</{d}invoke>\n</{d}{wrapper}>'

    return render


FORMATS: dict[str, Callable[[str, Args], str]] = {
    "kwargs-double": _kwargs('{k}="{v}"'),
    "kwargs-bare": _kwargs("{k}={v}"),
    "kwargs-colon": _kwargs("{k}: '{v}'"),
    "kwargs-smart-double": _kwargs("{k}=“{v}”"),
    "kwargs-smart-single": _kwargs("{k}=‘{v}’"),
    "json-object": _json,
    "json-list": lambda name, args: f"[{_json(name, args)}]",
    "json-function": lambda name, args: json.dumps(
        {"type": "function", "function": {"name": name, "arguments": json.dumps(args)}}),
    "tool-call-tag": lambda name, args: f"<tool_call>\n{_json(name, args)}\n</tool_call>",
    "dsml-fullwidth": _dsml("｜", "function_calls", ' string="true"'),
    "dsml-ascii": _dsml("|", "function_calls", ' string="true"'),
    "dsml-no-string-attribute": _dsml("｜", "function_calls", ""),
    "dsml-tool-calls-wrapper": _dsml("｜", "tool_calls", ' string="true"'),
}
RENDERED = st.tuples(calls(), st.sampled_from(sorted(FORMATS))).map(lambda c: FORMATS[c[1]](c[0][0], c[0][1]))

FRAGMENTS = [
    *TOOL_NAMES, "(", ")", "（", "）", "=", ":", "：", ",", '"', "'", "“", "”", "‘", "’", "「", "」",
    "{", "}", "[", "]", "<", ">", "/", "|", "｜", "\\", " ", "\n", "\t", "\x00",
    "DSML", "<｜DSML｜", "</｜DSML｜", "<|DSML|", "</|DSML|", "function_calls", "tool_calls", "invoke", "parameter",
    ' name="', 'name="get_raw_record"', ' string="true"', ' string="false"', "reference_id", "ref=", "r0007",
    '{"name": "', '"arguments": {', '"args": "', "null", "[{", "}]",
    "<tool_call>", "</tool_call>", "[TOOL RESULT get_raw_record]", "[TOOL RESULT", "[/TOOL RESULT]",
    "<tool_result>", "</tool_result>", "<function_results>", "</function_results>", "<tool_response>",
    "工位", "记录", "楼", "。", "，", "答案是", "I will check.",
]
GRAMMAR = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4), RENDERED), max_size=24
).map("".join)

WORDS = ["I", "will", "look", "the", "record", "first", "记录", "楼层", "answer:", *TOOL_NAMES]
PROSE = st.lists(
    st.one_of(st.sampled_from(WORDS), st.text(alphabet=SAFE | st.sampled_from(list(",，\t")), max_size=8)),
    max_size=8,
).map(" ".join)


def assert_well_formed(parsed: ParsedTools) -> None:
    assert isinstance(parsed, ParsedTools)
    for call in parsed.calls:
        assert call.name in TOOL_NAMES
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in call.args.items())
        assert not set(call.args) & set(ALIASES), call
    assert all(isinstance(f, str) and f.strip() and len(f) <= 200 for f in parsed.unparsable)


# (a) never raises ------------------------------------------------------------------


@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    assert_well_formed(parse_tool_calls(text))


@given(GRAMMAR)
def test_text_mixing_every_format_never_raises(text: str) -> None:
    assert_well_formed(parse_tool_calls(text))


# (b) never invents a call from an echoed result ---------------------------------------

ECHOES = [
    ("[TOOL RESULT x]\n", "\n[/TOOL RESULT]"),
    ("<tool_result>", "</tool_result>"),
    ("<function_results>\n<result>", "</result>\n</function_results>"),
    ("<｜DSML｜tool_result>", "</｜DSML｜tool_result>"),
    ("<tool_response>\n", "\n</tool_response>"),
]
INNER = st.one_of(st.text(), GRAMMAR, RENDERED)
NOTHING = ParsedTools((), ())


@pytest.mark.parametrize("opening, closing", ECHOES)
@given(inner=INNER)
def test_an_echoed_result_is_never_a_call(opening: str, closing: str, inner: str) -> None:
    assert parse_tool_calls(opening + inner + closing) == NOTHING


@given(inner=INNER)
def test_an_unterminated_echo_at_the_end_is_never_a_call(inner: str) -> None:
    # With the closing marker inside, the text is an echo followed by more reply: not this property.
    while "[/TOOL RESULT]" in inner:
        inner = inner.replace("[/TOOL RESULT]", "")
    assert parse_tool_calls("[TOOL RESULT x]\n" + inner) == NOTHING


@given(before=calls(), after=calls(), fmt=st.sampled_from(sorted(FORMATS)), inner=INNER)
def test_calls_around_an_echo_are_read_and_the_echo_is_not(
    before: tuple[str, Args, ToolCall], after: tuple[str, Args, ToolCall], fmt: str, inner: str
) -> None:
    render = FORMATS[fmt]
    text = f"{render(before[0], before[1])}\n[TOOL RESULT x]\n{inner}\n[/TOOL RESULT]\n{render(after[0], after[1])}"
    assert parse_tool_calls(text) == ParsedTools((before[2], after[2]), ())


# (c) round trip ----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@given(call=calls())
def test_a_rendered_call_parses_back_to_itself(fmt: str, call: tuple[str, Args, ToolCall]) -> None:
    name, spelled, expected = call
    assert parse_tool_calls(FORMATS[fmt](name, spelled)) == ParsedTools((expected,), ())


@given(rendered=st.lists(st.tuples(calls(), st.sampled_from(sorted(FORMATS))), max_size=5))
def test_calls_in_mixed_formats_keep_their_order_and_duplicates(
    rendered: list[tuple[tuple[str, Args, ToolCall], str]]
) -> None:
    doubled = rendered + rendered
    text = "\n".join(FORMATS[fmt](name, spelled) for (name, spelled, _), fmt in doubled)
    assert parse_tool_calls(text) == ParsedTools(tuple(expected for (_, _, expected), _ in doubled), ())


# (d) prose around a call ---------------------------------------------------------------


@given(call=calls(), fmt=st.sampled_from(sorted(FORMATS)), before=PROSE, after=PROSE,
       gap=st.sampled_from([" ", "\n", "\n\n", "\t"]))
def test_prose_around_a_call_does_not_change_it(
    call: tuple[str, Args, ToolCall], fmt: str, before: str, after: str, gap: str
) -> None:
    name, spelled, expected = call
    text = before + gap + FORMATS[fmt](name, spelled) + gap + after
    assert parse_tool_calls(text) == ParsedTools((expected,), ())


@given(PROSE)
def test_prose_alone_is_the_final_answer(text: str) -> None:
    assert parse_tool_calls(text) == NOTHING
