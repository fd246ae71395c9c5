"""Prompts: the summarizer contract and the answer contract with its tools.

Markers (`<NEW_TURN>`, `QUESTION:`, `[TOOL RESULT ...]`) are part of the
contract: the heuristic backend reads them, and a real model is told what
they mean.
"""

from __future__ import annotations

from projections.render import Rendered, summary_line
from projections.state import EpisodeState
from projections.tokens import count_tokens

SUMMARIZER_SYSTEM = """You maintain an agent's long-term memory. For the new turn, answer either
NONE (nothing durable was said) or exactly:
<one line summary of the durable information>
[FACTS: slot=value; slot2=value2]
[OVERRIDES: <ids of chain summaries whose facts this turn updates> | none]
Use the slot names already in the chain when the same attribute is meant.
Only list an id in OVERRIDES if every fact of that summary is restated or updated here."""

ANSWER_SYSTEM = """Answer the user's question from the memory below. The memory has recent turns,
CURRENT_VALUES (the newest value of every slot), INDEX titles and the ACTIVE_CHAIN of summaries.
Reply with the answer only, as short as possible."""

TOOL_MANUAL = """If the answer is not in the memory, call exactly one tool, alone on a line:
get_archived_summary(summary_id="s0003")      any summary by id; follows superseded_by to the current value
get_raw_record(reference_id="r0007")           the complete original turn
get_predecessor_summary(fact_key="<slot>", exclude_value="<value>")  the value a slot had before <value>
expand_index(index_id="i0001")                 the summaries under an index title
Tool results come back as [TOOL RESULT name] blocks; then answer."""


def summarizer_messages(state: EpisodeState, *, turn: int, user: str, agent: str) -> list[dict[str, str]]:
    """The chain shown to the summarizer is capped, newest first; override checks still see all of it."""
    cap, tok = state.config.summarizer_input_tokens, state.config.tokenizer
    shown: list[str] = []
    used = 0
    for s in reversed(state.live_summaries()):
        line = summary_line(s)
        used += count_tokens(line, tok)
        if used > cap:
            break
        shown.append(line)
    chain = "\n".join(reversed(shown))
    body = f"<ACTIVE_CHAIN>\n{chain}\n</ACTIVE_CHAIN>\n<NEW_TURN turn={turn}>\nUSER: {user}\nAGENT: {agent}\n</NEW_TURN>"
    return [{"role": "system", "content": SUMMARIZER_SYSTEM}, {"role": "user", "content": body}]


def answer_messages(rendered: Rendered, question: str, *, tools: bool) -> list[dict[str, str]]:
    system = ANSWER_SYSTEM + ("\n" + TOOL_MANUAL if tools else "")
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{rendered.text}\n\nQUESTION: {question}"},
    ]


def tool_result_message(tool: str, text: str) -> dict[str, str]:
    return {"role": "user", "content": f"[TOOL RESULT {tool}]\n{text}\n[/TOOL RESULT]"}
