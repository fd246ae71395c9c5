"""The tool-call parser, one row per format and per way a reply can go wrong."""

from __future__ import annotations

import time

import pytest

from ledgermem.projections.events import ToolCalled
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.memory.memory import Memory
from ledgermem.memory.toolcalls import ALIASES, TOOL_NAMES, ToolCall, parse_tool_calls
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR

FW = "｜"  # the fullwidth bar of DeepSeek's DSML tokens


def dsml(body: str, bar: str = FW, wrapper: str = "function_calls") -> str:
    """`body` written with `{D}` for the DSML token, inside a wrapper block."""
    token = f"{bar}DSML{bar}"
    return f"<{token}{wrapper}>\n{body.format(D=token)}\n</{token}{wrapper}>"


RAW_R7 = ToolCall("get_raw_record", {"reference_id": "r0007"})
INVOKE_R7 = ('<{D}invoke name="get_raw_record">\n'
             '<{D}parameter name="reference_id" string="true">r0007</{D}parameter>\n</{D}invoke>')


@pytest.mark.parametrize(
    "text, calls, n_unparsable",
    [
        # name(key=value)
        pytest.param('get_raw_record(reference_id="r0007")', [RAW_R7], 0, id="kwargs-double-quotes"),
        pytest.param("get_raw_record(reference_id=r0007)", [RAW_R7], 0, id="kwargs-bare"),
        pytest.param("get_raw_record(reference_id: 'r0007')", [RAW_R7], 0, id="kwargs-colon-single-quotes"),
        pytest.param("get_raw_record(reference_id=“r0007”)", [RAW_R7], 0, id="kwargs-smart-double-quotes"),
        pytest.param("get_raw_record(reference_id=‘r0007’)", [RAW_R7], 0, id="kwargs-smart-single-quotes"),
        pytest.param('get_raw_record(ref="r0007")', [RAW_R7], 0, id="kwargs-alias"),
        pytest.param('get_predecessor_summary(key="office floor", value="7F")',
                     [ToolCall("get_predecessor_summary", {"fact_key": "office floor", "exclude_value": "7F"})], 0,
                     id="kwargs-two-aliases"),
        pytest.param("expand_index()", [ToolCall("expand_index", {})], 0, id="kwargs-no-arguments"),
        pytest.param("get_raw_record(???)", [], 1, id="kwargs-unreadable"),
        pytest.param('get_raw_record(reference_id="r0007"', [], 1, id="kwargs-unclosed"),
        # JSON
        pytest.param('{"name": "get_raw_record", "arguments": {"reference_id": "r0007"}}', [RAW_R7], 0,
                     id="json-object"),
        pytest.param('{"tool": "get_raw_record", "args": {"record_id": "r0007"}}', [RAW_R7], 0, id="json-alias"),
        pytest.param('[{"name": "get_raw_record", "arguments": {"ref": "r0007"}},'
                     ' {"name": "expand_index", "arguments": {"index": "i0001"}}]',
                     [RAW_R7, ToolCall("expand_index", {"index_id": "i0001"})], 0, id="json-list"),
        pytest.param('{"type": "function",'
                     ' "function": {"name": "get_raw_record", "arguments": "{\\"ref\\": \\"r0007\\"}"}}',
                     [RAW_R7], 0, id="json-function-with-string-arguments"),
        pytest.param('{"name": "get_raw_record", "arguments": ["r0007"]}', [], 1, id="json-arguments-not-an-object"),
        pytest.param('{"name": "Alice", "age": 30}', [], 0, id="json-that-is-no-call"),
        # <tool_call>
        pytest.param('<tool_call>\n{"name": "get_raw_record", "arguments": {"reference_id": "r0007"}}\n</tool_call>',
                     [RAW_R7], 0, id="tool-call-tag"),
        pytest.param('<tool_call>{"name": "get_raw_record", "arguments": {"ref": "r0007"}}</tool_call>\n'
                     '<tool_call>{"name": "get_raw_record", "arguments": {"ref": "r0007"}}</tool_call>',
                     [RAW_R7, RAW_R7], 0, id="tool-call-tag-twice-duplicates-kept"),
        pytest.param('<tool_call>{"name": "delete_all", "arguments": {}}</tool_call>', [], 1,
                     id="tool-call-tag-unknown"),
        pytest.param('<tool_call>{"name": "get_raw_record", "arguments": </tool_call>', [], 1,
                     id="tool-call-tag-broken-json"),
        pytest.param('<tool_call>get_raw_record(reference_id="r0007")</tool_call>', [RAW_R7], 0,
                     id="tool-call-tag-around-kwargs"),
        # DSML
        pytest.param(dsml(INVOKE_R7), [RAW_R7], 0, id="dsml-fullwidth"),
        pytest.param(dsml(INVOKE_R7, bar="|"), [RAW_R7], 0, id="dsml-ascii"),
        pytest.param(dsml(INVOKE_R7, wrapper="tool_calls"), [RAW_R7], 0, id="dsml-tool-calls-wrapper"),
        pytest.param(INVOKE_R7.format(D=f"{FW}DSML{FW}"), [RAW_R7], 0, id="dsml-without-wrapper"),
        pytest.param(dsml('<{D}invoke name="get_raw_record">\n'
                          '<{D}parameter name="ref">r0007</{D}parameter>\n</{D}invoke>'),
                     [RAW_R7], 0, id="dsml-parameter-without-string-attribute"),
        pytest.param(dsml('<{D}invoke name="get_predecessor_summary">'
                          '<{D}parameter name="slot" string="true">office floor</{D}parameter>'
                          '<{D}parameter name="exclude" string="false">7</{D}parameter></{D}invoke>'),
                     [ToolCall("get_predecessor_summary", {"fact_key": "office floor", "exclude_value": "7"})], 0,
                     id="dsml-json-valued-parameter-one-line"),
        pytest.param(dsml('<{D}invoke name="get_raw_record"><{D}parameter name="reference_id" string="false">'
                          '"r0007"</{D}parameter></{D}invoke>'), [RAW_R7], 0, id="dsml-json-string-parameter"),
        pytest.param(dsml('  < {D} invoke  name = "get_raw_record" >\n\n'
                          '    <{D}parameter name="reference_id" string="true">\n'
                          "      r0007\n    </{D}parameter>\n  </ {D}invoke >"), [RAW_R7], 0, id="dsml-whitespace"),
        pytest.param(dsml(INVOKE_R7 + '\n<{D}invoke name="expand_index">\n<{D}parameter name="index_id" string="true">'
                          'i0001</{D}parameter>\n</{D}invoke>\n' + INVOKE_R7),
                     [RAW_R7, ToolCall("expand_index", {"index_id": "i0001"}), RAW_R7], 0, id="dsml-several-invokes"),
        pytest.param(dsml('<{D}invoke name="expand_index">\n</{D}invoke>'), [ToolCall("expand_index", {})], 0,
                     id="dsml-no-parameters"),
        pytest.param(dsml(INVOKE_R7.replace("get_raw_record", "delete_all")), [], 1, id="dsml-unknown-tool"),
        pytest.param(dsml(INVOKE_R7.replace(' name="get_raw_record"', "")), [], 1, id="dsml-invoke-without-name"),
        pytest.param(dsml(INVOKE_R7.replace("r0007</{D}parameter>", "r0007")), [], 1, id="dsml-unclosed-parameter"),
        pytest.param(dsml(INVOKE_R7.replace('parameter name="reference_id"', "parameter")), [], 1,
                     id="dsml-parameter-without-name"),
        pytest.param(dsml(INVOKE_R7.replace("</{D}invoke>", "")), [], 1, id="dsml-unclosed-invoke"),
        pytest.param(INVOKE_R7.format(D=f"{FW}DSML{FW}")[:70], [], 1, id="dsml-cut-off"),
        pytest.param(dsml(INVOKE_R7.replace("get_raw_record", "delete_all") + "\n" + INVOKE_R7), [RAW_R7], 1,
                     id="dsml-unknown-then-known"),
        # echoed tool results
        pytest.param('[TOOL RESULT get_raw_record]\nUSER: please run get_raw_record(reference_id="r1")\n[/TOOL RESULT]',
                     [], 0, id="echo-containing-a-call"),
        pytest.param('[TOOL RESULT get_raw_record]\nUSER: type [/TOOL RESULT] get_raw_record(reference_id="r1")\n'
                     "[/TOOL RESULT]\nThe answer is 7F.", [], 0, id="echo-quoting-its-own-closing-marker"),
        pytest.param('[TOOL RESULT get_raw_record]\n' + dsml(INVOKE_R7) + "\n[/TOOL RESULT]", [], 0,
                     id="echo-containing-dsml"),
        pytest.param('The record says:\n[TOOL RESULT get_raw_record]\nUSER: get_raw_record(reference_id="r1")', [], 0,
                     id="echo-unterminated"),
        pytest.param('[TOOL RESULT get_raw_record]\nUSER: hi\n[/TOOL RESULT]\nget_raw_record(reference_id="r0007")',
                     [RAW_R7], 0, id="call-after-echo"),
        pytest.param('<tool_result>get_raw_record(reference_id="r1")</tool_result>\n' + dsml(INVOKE_R7), [RAW_R7], 0,
                     id="deepseek-v4-tool-result-echo"),
        pytest.param("<function_results>\n<result>" + dsml(INVOKE_R7) + "</result>\n</function_results>", [], 0,
                     id="deepseek-v3-function-results-echo"),
        pytest.param(f'<{FW}DSML{FW}tool_result>get_raw_record(reference_id="r1")</{FW}DSML{FW}tool_result>', [], 0,
                     id="dsml-tool-result-echo"),
        pytest.param('<tool_response>\n{"name": "get_raw_record", "arguments": {"ref": "r1"}}\n</tool_response>', [], 0,
                     id="tool-response-echo"),
        # prose
        pytest.param("The answer is 7F.", [], 0, id="plain-answer"),
        pytest.param("I could call get_raw_record, but the summary already says 7F (since May).", [], 0,
                     id="plain-answer-naming-a-tool"),
        pytest.param("答案是7楼。", [], 0, id="zh-plain-answer"),
        pytest.param("我需要查看原始记录：get_raw_record（reference_id：“r0007”）", [RAW_R7], 0, id="zh-kwargs-fullwidth"),
        pytest.param("先看记录。\n" + dsml('<{D}invoke name="get_predecessor_summary">\n'
                                         '<{D}parameter name="fact_key" string="true">工位</{D}parameter>\n'
                                         '<{D}parameter name="exclude_value" string="true">7楼</{D}parameter>\n'
                                         "</{D}invoke>"),
                     [ToolCall("get_predecessor_summary", {"fact_key": "工位", "exclude_value": "7楼"})], 0, id="zh-dsml"),
    ],
)
def test_formats(text: str, calls: list[ToolCall], n_unparsable: int) -> None:
    parsed = parse_tool_calls(text)
    assert list(parsed.calls) == calls
    assert len(parsed.unparsable) == n_unparsable
    assert all(fragment.strip() for fragment in parsed.unparsable)


def test_calls_keep_their_order_across_formats() -> None:
    text = "\n".join([
        'get_archived_summary(id="s0001")',
        dsml(INVOKE_R7),
        '{"name": "expand_index", "arguments": {"index": "i0001"}}',
        '<tool_call>{"name": "get_archived_summary", "arguments": {"sid": "s0002"}}</tool_call>',
        "get_raw_record(reference_id=r0007)",
    ])
    assert parse_tool_calls(text).calls == (
        ToolCall("get_archived_summary", {"summary_id": "s0001"}),
        RAW_R7,
        ToolCall("expand_index", {"index_id": "i0001"}),
        ToolCall("get_archived_summary", {"summary_id": "s0002"}),
        RAW_R7,
    )


def test_unparsable_fragments_keep_their_order_among_calls() -> None:
    text = dsml(INVOKE_R7.replace("get_raw_record", "delete_all") + "\n" + INVOKE_R7) + "\nget_raw_record(???)"
    parsed = parse_tool_calls(text)
    assert parsed.calls == (RAW_R7,)
    assert "delete_all" in parsed.unparsable[0] and parsed.unparsable[1] == "get_raw_record(???)"


def test_text_inside_a_call_is_not_read_as_another_call() -> None:
    body = ('<{D}invoke name="get_predecessor_summary">\n<{D}parameter name="fact_key" string="true">'
            'get_raw_record(reference_id="r1")</{D}parameter>\n</{D}invoke>')
    assert parse_tool_calls(dsml(body)).calls == (
        ToolCall("get_predecessor_summary", {"fact_key": 'get_raw_record(reference_id="r1")'}),
    )


@pytest.mark.parametrize("alias, canonical", sorted(ALIASES.items()))
def test_every_alias_is_canonicalised_in_every_format(alias: str, canonical: str) -> None:
    texts = [
        f'expand_index({alias}="v1")',
        f'{{"name": "expand_index", "arguments": {{"{alias}": "v1"}}}}',
        f'<tool_call>{{"name": "expand_index", "arguments": {{"{alias}": "v1"}}}}</tool_call>',
        dsml(f'<{{D}}invoke name="expand_index"><{{D}}parameter name="{alias}">v1</{{D}}parameter></{{D}}invoke>'),
    ]
    for text in texts:
        assert parse_tool_calls(text).calls == (ToolCall("expand_index", {canonical: "v1"}),), text


def test_pathological_input_is_fast_and_quiet() -> None:
    texts = ["[" * 20_000, "{" * 20_000, '{"a":' * 5_000, "<|DSML|" * 5_000, "get_raw_record(" * 5_000,
             "[TOOL RESULT" * 2_000, "<" + " " * 20_000]
    started = time.perf_counter()
    for text in texts:
        parsed = parse_tool_calls(text)
        assert parsed.calls == ()
    assert time.perf_counter() - started < 5


def _memory(*responses: str) -> Memory:
    script = iter(responses)
    backend = ScriptedBackend(lambda messages, purpose: next(script, "NONE"))
    return Memory(Ledger(":memory:"), StreamKey("r", "s", "e"), backend, config=MemoryConfig(tokenizer=ESTIMATOR))


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_parsed_tool_name_is_one_the_memory_runs(name: str) -> None:
    assert "unknown tool" not in _memory().tool(name, {}).text


def test_memory_runs_a_dsml_call_and_answers_from_its_result() -> None:
    m = _memory(
        "floor is 3F\n[FACTS: floor=3F]\n[OVERRIDES: none]",
        dsml('<{D}invoke name="get_raw_record">\n'
             '<{D}parameter name="ref" string="true">r0001</{D}parameter>\n</{D}invoke>'),
        "Your floor is 3F.",
    )
    m.add_turn("my floor is 3F", "ok")
    answer = m.answer("Which floor am I on?")
    called = [e for e in answer.events if isinstance(e, ToolCalled)]
    assert answer.text == "Your floor is 3F." and answer.tool_calls == 1
    assert [(e.tool, e.args, e.ok) for e in called] == [("get_raw_record", {"reference_id": "r0001"}, True)]
    assert "USER: my floor is 3F" in called[0].text
