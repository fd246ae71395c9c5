"""Candidate tables over the audit API (recorded runs) and the live API (asked and answered now)."""

from __future__ import annotations

from pathlib import Path

from tests.service.conftest import Served
from tests.service.live_scripted import STREAM, TURNS, live_server

EP = "/api/runs/small/episodes/syn-en-000"


def test_every_tool_call_of_a_recorded_run_has_a_table_that_agrees_with_its_result(served: Served) -> None:
    probes = served.get(EP + "/probes", limit=1000).json()["items"]
    tried = [p for p in probes if p["tool_calls"]]
    assert tried, "the small run's heuristic model asks for tools on some probes"
    everything = served.get(EP + "/tool-calls", limit=1000).json()
    assert everything["total"] == sum(p["tool_calls"] for p in probes)
    for p in tried:
        detail = served.get(f"{EP}/probes/{p['probe_id']}").json()
        tables = served.get(EP + "/tool-calls", probe=p["probe_id"]).json()["items"]
        assert [(t["seq"], t["tool"], t["args"], t["ok"], t["result"]) for t in tables] == \
            [(s["seq"], s["tool"], s["args"], s["ok"], s["result"]) for s in detail["tool_calls"]]
        for t in tables:
            assert t["problems"] == [] and t["reproduced"] in (True, None), t
            ids = [c["item_id"] for c in t["candidates"]]
            assert set(t["chosen"]) <= set(ids) and t["rule"]
            if t["tool"] == "get_predecessor_summary" and t["ok"]:
                (chosen,) = [c for c in t["candidates"] if c["chosen"]]
                assert f"value={chosen['value']}; from {chosen['item_id']} " in t["result"]
    turn = tried[0]["turn"]
    assert all(t["turn"] == turn for t in served.get(EP + "/tool-calls", turn=turn).json()["items"])


def test_tool_calls_names_an_unknown_probe_and_a_bad_turn(served: Served) -> None:
    r = served.get(EP + "/tool-calls", probe="nope")
    assert r.status_code == 404 and r.json()["parameter"] == "probe"
    r = served.get(EP + "/tool-calls", turn="soon")
    assert r.status_code == 400 and r.json()["parameter"] == "turn"


def test_the_live_api_answers_each_tool_call_with_its_table_and_a_read_token_cannot_ask(tmp_path: Path) -> None:
    with live_server(tmp_path / "mem") as live:
        for user, agent in TURNS:
            assert live.request("writer", "POST", "/api/memory/turns",
                                {"stream": STREAM, "user": user, "agent": agent}).status_code == 201
        asked = live.request("writer", "POST", "/api/memory/ask",
                             {"stream": STREAM, "question": "Where was my office before?"})
        assert asked.status_code == 201, asked.text
        body = asked.json()
        assert body["answer"] == "It was floor 3" and body["token_id"]
        (call,) = body["tool_calls"]
        assert body["first_seq"] < call["seq"] <= body["last_seq"]
        assert [(c["item_id"], c["value"], c["superseded_by"], c["chosen"]) for c in call["candidates"]] == \
            [("s0001", "floor 3", ["s0002"], True), ("s0002", "floor 5", [], False)]
        assert call["reproduced"] is True and call["problems"] == []
        writes = live.store.writes(STREAM)
        assert writes[-1]["operation"] == "ask" and (writes[-1]["first_seq"], writes[-1]["last_seq"]) == \
            (body["first_seq"], body["last_seq"])

        replied = live.request("writer", "POST", "/api/memory/respond",
                               {"stream": STREAM, "user": "Where was my office before floor 5?"}).json()
        assert replied["reply"] == "It was floor 3"
        assert [c["candidates"] for c in replied["tool_calls"]] == [call["candidates"]]

        # A read token reads the tables, cannot ask (asking records how it was answered), and another
        # namespace's token reads nothing.
        before = live.store.ledger.last_seq
        refused = live.request("reader", "POST", "/api/memory/ask", {"stream": STREAM, "question": "where?"})
        assert refused.status_code == 403 and "write" in refused.json()["error"]
        assert live.store.ledger.last_seq == before
        read = live.request("reader", "GET", "/api/memory/tool-calls", stream=STREAM)
        assert read.status_code == 200
        assert [t["seq"] for t in read.json()["tool_calls"]] == [call["seq"], replied["tool_calls"][0]["seq"]]
        assert live.request("reader", "GET", "/api/memory/tool-calls", stream=STREAM, turn=4).json()["tool_calls"] \
            == replied["tool_calls"]
        assert live.request("outsider", "GET", "/api/memory/tool-calls", stream=STREAM).status_code == 403
        assert live.request("", "GET", "/api/memory/tool-calls", stream=STREAM).status_code == 401
