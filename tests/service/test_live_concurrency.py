"""Many writers on the live memory: model calls of different streams overlap, one stream's turns never do, and
no acknowledged turn is lost or doubled."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ledgermem.gate.invariants import audit
from ledgermem.memory.backends import Completion, Message
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.projections.events import TurnRecorded
from ledgermem.projections.tokens import ESTIMATOR
from ledgermem.service.live import LiveStore, RolledBack, Write, stream_key
from ledgermem.service.live_questions import LiveService
from ledgermem.service.tokens import Token


class Meeting(HeuristicBackend):
    """The heuristic backend, whose calls wait at a barrier: they pass only when `parties` calls are in flight."""

    def __init__(self, barrier: threading.Barrier, in_flight: Counter[str], guard: threading.Lock, *,
                 timeout: float = 20) -> None:
        super().__init__(tokenizer=ESTIMATOR)
        self.barrier, self.in_flight, self.guard, self.timeout = barrier, in_flight, guard, timeout
        self.most = 0

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        with self.guard:
            self.in_flight["all"] += 1
            self.most = max(self.most, self.in_flight["all"])
        try:
            self.barrier.wait(timeout=self.timeout)  # BrokenBarrierError: the calls did not overlap
            return super().complete(messages, purpose=purpose)
        finally:
            with self.guard:
                self.in_flight["all"] -= 1


def service(folder: Path, backend: Any = "heuristic") -> tuple[LiveStore, LiveService, Token]:
    store = LiveStore(folder, backend=backend)
    token = store.tokens.authenticate(store.tokens.create("acme", "read,write")[1])
    return store, LiveService(store), token


def run_threads(targets: list[Any]) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(fn: Any) -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


def test_the_model_calls_of_different_streams_overlap(tmp_path: Path) -> None:
    parties = 4
    barrier, guard, flight = threading.Barrier(parties), threading.Lock(), Counter[str]()
    backends: list[Meeting] = []

    def make() -> Meeting:
        backends.append(Meeting(barrier, flight, guard))
        return backends[-1]

    store, svc, token = service(tmp_path / "mem", make)
    try:
        errors = run_threads([lambda i=i: svc.ask("record_turn", {"stream": f"acme/u{i}/s", "user": "My office "
                                                                  "is on floor 3.", "agent": "ok"}, token)
                              for i in range(parties)])
        assert errors == []
        assert len(store.ledger.streams()) == parties and store.ledger.verify().ok
    finally:
        store.close()


def test_control_the_turns_of_one_stream_never_overlap(tmp_path: Path) -> None:
    """The same barrier on one stream breaks: its requests hold the stream's lock through the model call."""
    backend = Meeting(threading.Barrier(2), Counter(), threading.Lock(), timeout=2)
    store, svc, token = service(tmp_path / "mem", lambda: backend)
    try:
        errors = run_threads([lambda: svc.ask("record_turn", {"stream": "acme/u1/s", "user": "My office is on "
                                                              "floor 3.", "agent": "ok"}, token)] * 2)
        assert backend.most == 1
        assert errors and all(isinstance(e, threading.BrokenBarrierError) for e in errors)
    finally:
        store.close()


@pytest.mark.parametrize("streams,turns", [(8, 4)])
def test_many_writers_lose_and_double_no_acknowledged_turn(tmp_path: Path, streams: int, turns: int) -> None:
    store, svc, token = service(tmp_path / "mem")
    acknowledged: list[tuple[str, int]] = []
    lock = threading.Lock()

    def writer(i: int) -> None:
        stream = f"acme/user-{i}/s"
        for t in range(turns):
            args = {"stream": stream, "user": f"My office is on floor {t + 1}.", "agent": "ok",
                    "idempotency_key": f"{i}-{t}"}
            first = svc.ask("record_turn", args, token)
            retry = svc.ask("record_turn", args, token)  # a client that did not see its answer sends it again
            assert retry["turn"] == first["turn"] and not retry["created"]
            with lock:
                acknowledged.append((stream, first["turn"]))

    try:
        assert run_threads([lambda i=i: writer(i) for i in range(streams)]) == []
        assert sorted(acknowledged) == sorted((f"acme/user-{i}/s", t + 1) for i in range(streams)
                                              for t in range(turns))
        for i in range(streams):
            assert svc.ask("current_values", {"stream": f"acme/user-{i}/s"}, token)["turn"] == turns
        assert store.ledger.verify().ok
        report = audit(store.ledger, store.projections, run_id="live")
        assert report.ok, report.as_dict()
        keyed = [w["idempotency_key"] for w in store.writes() if w["idempotency_key"]]
        assert len(keyed) == len(set(keyed)) == streams * turns
    finally:
        store.close()


def test_turns_waiting_for_their_commit_share_one(tmp_path: Path) -> None:
    """Group commit: every request that appended while a commit was due is made durable by one commit."""
    store, svc, token = service(tmp_path / "mem")
    writers = 6
    try:
        svc.ask("record_turn", {"stream": "acme/warm/s", "user": "hello", "agent": "ok"}, token)
        per_turn = len([w for w in store.writes() if w["operation"] == "record_turn"])  # appends of one turn
        before_seq, before_commits = store.ledger.durable_seq, store.ledger.groups_committed
        assert before_seq == store.ledger.last_seq  # an answered request is durable
        with store._quiet:
            store._leading = True  # as if a commit were under way: every request appends, then waits for it
        threads = [threading.Thread(target=svc.ask, args=("record_turn", {
            "stream": f"acme/w{i}/s", "user": f"My office is on floor {i + 1}.", "agent": "ok"}, token))
            for i in range(writers)]
        try:
            for t in threads:
                t.start()
            def appended() -> int:  # every append of a turn records its attribution row in the same transaction
                with store.lock:
                    return len([w for w in store.writes() if w["operation"] == "record_turn"])

            for _ in range(600):
                if appended() == per_turn * (writers + 1):
                    break
                threading.Event().wait(0.05)
            assert appended() == per_turn * (writers + 1)
            with store.lock:
                assert len(store.ledger.streams()) == writers + 1
                assert store.ledger.durable_seq == before_seq < store.ledger.last_seq  # appended, not durable
        finally:
            with store._quiet:
                store._leading = False
                store._quiet.notify_all()
        for t in threads:
            t.join(timeout=60)
        assert store.ledger.groups_committed == before_commits + 1  # six turns, one commit
        assert store.ledger.durable_seq == store.ledger.last_seq
        for i in range(writers):
            assert svc.ask("current_values", {"stream": f"acme/w{i}/s"}, token)["turn"] == 1
    finally:
        store.close()
    reopened = LiveStore(tmp_path / "mem")
    try:
        assert len(reopened.ledger.streams()) == writers + 1 and reopened.ledger.verify().ok
        assert audit(reopened.ledger, reopened.projections, run_id="live").ok
    finally:
        reopened.close()


def test_control_one_client_alone_commits_every_turn(tmp_path: Path) -> None:
    store, svc, token = service(tmp_path / "mem")
    try:
        before = store.ledger.groups_committed
        for t in range(3):
            svc.ask("record_turn", {"stream": "acme/one/s", "user": f"note {t}", "agent": "ok"}, token)
        assert store.ledger.groups_committed == before + 3
    finally:
        store.close()


def test_a_rolled_back_group_answers_an_error_and_its_idempotency_keys_are_free_again(tmp_path: Path) -> None:
    store, svc, token = service(tmp_path / "mem")
    args = {"stream": "acme/u/s", "user": "My office is on floor 3.", "agent": "ok", "idempotency_key": "k1"}
    answers: list[Any] = []
    try:
        with store._quiet:
            store._leading = True  # as if a commit were under way: the request appends, then waits
        thread = threading.Thread(target=lambda: answers.append(run_threads([lambda: svc.ask("record_turn", args,
                                                                                              token)])))
        try:
            thread.start()
            for _ in range(400):
                with store.lock:
                    if any(w["operation"] == "record_turn" for w in store.writes("acme/u/s")):
                        break  # the turn is appended (its attribution row with it): the request waits to commit
                threading.Event().wait(0.05)
            with store.lock:
                assert store.ledger.stream_version(stream_key(("acme", "u", "s"))) > 0
                assert store.ledger.last_seq > store.ledger.durable_seq == 0
                store.ledger._abort_group()  # what a failed commit does
                assert store.ledger.last_seq == 0 and store.writes() == []
        finally:
            with store._quiet:
                store._leading = False
                store._quiet.notify_all()
        thread.join(timeout=60)
        [errors] = answers
        assert len(errors) == 1 and "rolled back" in str(errors[0])  # never acknowledged
        again = svc.ask("record_turn", args, token)
        assert again["created"] is True and again["turn"] == 1  # the key names no write: it is free
        assert svc.ask("record_turn", args, token)["created"] is False
    finally:
        store.close()
    reopened, svc2, token2 = service(tmp_path / "mem")
    try:
        replayed = svc2.ask("record_turn", args, token2)  # the keys are read back from the ledger
        assert replayed["created"] is False and replayed["turn"] == 1
        assert reopened.ledger.verify().ok
    finally:
        reopened.close()


class Held(HeuristicBackend):
    """The heuristic backend, whose calls wait until the test lets them go."""

    def __init__(self, entered: threading.Event, release: threading.Event) -> None:
        super().__init__(tokenizer=ESTIMATOR)
        self.entered, self.release = entered, release

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        self.entered.set()
        assert self.release.wait(timeout=60)
        return super().complete(messages, purpose=purpose)


@pytest.mark.parametrize("new_stream", [True, False], ids=["its-start-rolled-back", "control-nothing-of-it-lost"])
def test_a_request_whose_earlier_append_a_rollback_took_answers_503(tmp_path: Path, new_stream: bool) -> None:
    """A request appends (a new stream's start), waits for its model, and meanwhile a group is rolled back:
    what it writes next cannot stand on what is gone, so it answers 503 'rolled back', never a version
    conflict or an acknowledgement. A request that had appended nothing of the lost group is answered (control)."""
    entered, release = threading.Event(), threading.Event()
    holding = {"on": False}

    def make() -> Any:
        return Held(entered, release) if holding["on"] else HeuristicBackend(tokenizer=ESTIMATOR)

    store, svc, token = service(tmp_path / "mem", make)
    try:
        if not new_stream:
            svc.ask("record_turn", {"stream": "acme/u/s", "user": "hello", "agent": "ok"}, token)
            store._memories.clear()  # opened again, with the held backend
        holding["on"] = True
        errors: list[BaseException] = []
        thread = threading.Thread(target=lambda: errors.extend(run_threads([lambda: svc.ask(
            "record_turn", {"stream": "acme/u/s", "user": "My office is on floor 3.", "agent": "ok"}, token)])))
        thread.start()
        assert entered.wait(timeout=60)  # the request waits for its model, the store's lock let go
        with store.lock:
            assert (store.ledger.durable_seq < store.ledger.last_seq) == new_stream  # its start, not yet durable
            with store.writing(Write("acme/other/s", "record_turn", token.token_id)):  # another stream's write
                store.ledger.append(stream_key(("acme", "other", "s")),
                                    [TurnRecorded(turn=1, record_id="r0001", text="x", agent="ok")],
                                    expected_version=0)
            store.ledger._abort_group()  # what a failed commit does: the whole open group goes
        release.set()
        thread.join(timeout=60)
        if new_stream:
            assert len(errors) == 1 and isinstance(errors[0], RolledBack), errors
            assert svc.error(errors[0])[0] == 503
            assert store.ledger.last_seq == 0
        else:
            assert errors == []
            assert svc.ask("current_values", {"stream": "acme/u/s"}, token)["turn"] == 2
            assert store.ledger.stream_version(stream_key(("acme", "other", "s"))) == 0
    finally:
        release.set()
        store.close()


@pytest.mark.parametrize("wait", [30.0, 0.0], ids=["the-leader-waits", "control-no-wait"])
def test_the_leader_of_a_commit_waits_for_the_turns_at_work(tmp_path: Path, monkeypatch: Any, wait: float) -> None:
    """A request ready to commit waits while others are at work on their turns (up to `GROUP_WAIT`), so one
    commit takes them all; with no wait each commits its own."""
    import ledgermem.service.live as live

    monkeypatch.setattr(live, "GROUP_WAIT", wait)
    store, svc, token = service(tmp_path / "mem")
    try:
        svc.ask("record_turn", {"stream": "acme/warm/s", "user": "hello", "agent": "ok"}, token)
        before = store.ledger.groups_committed
        store.busy(+1)  # a request at work on a turn
        first = threading.Thread(target=svc.ask, args=("record_turn", {
            "stream": "acme/a/s", "user": "My office is on floor 2.", "agent": "ok"}, token))
        first.start()
        first.join(timeout=1.0)
        assert first.is_alive() is (wait > 0)  # waiting for the request at work, or answered at once
        svc_thread = threading.Thread(target=svc.ask, args=("record_turn", {
            "stream": "acme/b/s", "user": "My office is on floor 3.", "agent": "ok"}, token))
        svc_thread.start()
        svc_thread.join(timeout=1.0 if wait == 0 else 0.3)
        store.busy(-1)  # the request at work is done: the leader commits what everyone appended
        first.join(timeout=60)
        svc_thread.join(timeout=60)
        assert not first.is_alive() and not svc_thread.is_alive()
        assert store.ledger.groups_committed == before + (1 if wait > 0 else 2)
        assert store.ledger.durable_seq == store.ledger.last_seq
    finally:
        store.close()
