"""Erasure as a decision: which facts, summaries, records, titles and keys go.

The names of keys are fixed here, so the application (which seals) and the
decision (which shreds) agree: two keys per turn, one for its raw text
(`raw_key`: the user's and the agent's words, the blocks, the reply the
model wrote in conversation and the tool calls it made for it) and one for
the memory derived from it (`turn_key`: the summarizer's response, the
summary and facts written from it, a pin), one per index title, one per
answer. Retention can so expire the raw text of a turn and keep its
summary (`gate.retention`); an erasure shreds both. A ledger written before
the raw key existed sealed the raw text under the turn key: which key
sealed a turn's raw record is read from the ledger (the key id every
sealed value names, `Ledger.sealed_keys`) and handed to the decision
(`Erase.raw_keys`); a turn it is not told about has both its keys named.
A gold value (the dataset's planted facts, a probe's gold answer and the
value it was judged against) is sealed under the key of the turn that
stated it, not the answer's: erasing that turn's record
makes the gold unreadable too (`gold_keys`). Lineage runs both ways: a fact leads to its summary
and that summary's evidence; a record leads to every summary written from
it; anything sealed under the same key goes with it (its other facts are
erased as collateral and say so); every index title over an erased
summary is redacted.

A value is found as a whole token, case-insensitively, any run of
whitespace in it matching any other (`value_pattern`): the same rule picks
the facts to erase, the events to shred and the residue to report.

One decision covers every stream of the data subject (`plan_erasure`): a
run holds the episode once per system (`three_layer` and the baselines'
copies of the same dialogue), and the plan says, for all of them at once,
which events each stream gets and which keys go. The application appends
each stream's events and destroys the keys; it decides nothing. Where the
plaintext of a subject can sit in the projection tables (`PLAINTEXT_COLUMNS`)
is said here too, for the residue scan.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ledgermem.gate.attributes import table_for
from ledgermem.gate.errors import CommandRejected, NothingToErase
from ledgermem.ledger.events import Event
from ledgermem.projections.events import (
    EpisodeGold, FactErased, IndexCreated, IndexFolded, KeyShredded, LlmCalled, ProbeAsked, ProbeJudged,
    SummaryCreated, ToolCalled, TurnRecorded,
)
from ledgermem.ledger.keys import ERASED, FieldKeys
from ledgermem.projections.state import EpisodeState, record_id_for


def turn_key(prefix: str, turn: int) -> str:
    return f"{prefix}#turn:{turn}"


def raw_key(prefix: str, turn: int) -> str:
    """The key of a turn's raw text, a numbered series like `turn_key` (made ahead, `ledger.keys.AHEAD`)."""
    return f"{prefix}#raw:{turn}"


_TURN_SERIES = ("#turn:", "#raw:")


def turn_of_key(prefix: str, key_id: str) -> int | None:
    """The turn a turn key or raw key of `prefix` names (`p#raw:7` -> 7), or None for another key."""
    for series in _TURN_SERIES:
        head = prefix + series
        if key_id.startswith(head) and key_id[len(head):].isdigit():
            return int(key_id[len(head):])
    return None


def raw_record_keys(prefix: str, turn: int, recorded: Mapping[int, Sequence[str]]) -> tuple[str, ...]:
    """The keys that seal `turn`'s raw record: those the ledger records (`recorded`, by turn), else both of the
    turn's names, so that no raw text is left readable for want of knowing where it was sealed (a key that
    was never made is not in the key store: destroying it does nothing)."""
    found = tuple(recorded.get(turn, ()))
    return found if found else (raw_key(prefix, turn), turn_key(prefix, turn))


def turn_keys(prefix: str, turn: int, recorded: Mapping[int, Sequence[str]]) -> set[str]:
    """Every key of a turn: the turn key and the keys of its raw record."""
    return {turn_key(prefix, turn), *raw_record_keys(prefix, turn, recorded)}


_RAW_SHREDDED = re.compile(r"#raw:(\d+)$")
_TURN_SHREDDED = re.compile(r"#turn:(\d+)$")


def raw_text_expired(state: EpisodeState) -> set[str]:
    """Records whose raw text was shredded (their raw key) while the memory derived from them was kept (their
    turn key stands): a retention's expiry of raw text, not an erasure. A stream's state holds only its own keys."""
    raw = {int(m.group(1)) for k in state.shredded_keys if (m := _RAW_SHREDDED.search(k))}
    whole = {int(m.group(1)) for k in state.shredded_keys if (m := _TURN_SHREDDED.search(k))}
    return {record_id_for(t) for t in raw - whole}


#: The events of a turn that are its raw text, not memory derived from it: sealed under `raw_key`.
RAW_EVENTS = (TurnRecorded, ToolCalled)
#: The model calls of a turn whose response is the conversation itself (the reply), not a memory update.
RAW_PURPOSES = ("respond",)


def index_key(prefix: str, index_id: str) -> str:
    return f"{prefix}#index:{index_id}"


def merge_key(prefix: str, summary_id: str) -> str:
    return f"{prefix}#merge:{summary_id}"


def answer_key(prefix: str, version: int) -> str:
    return f"{prefix}#answer:{version}"


def seal_key(prefix: str, event: Event, *, personal_data: bool = True) -> str | None:
    """The key that seals an event recorded with a turn (None: stored in clear).

    The turn's raw key for its raw text (the record, the reply the model
    wrote in conversation and its tool calls), the turn's key for what is
    derived from it (the summarizer's response, the summary, a pin), except
    an index title and a capacity merge, which derive from several turns and
    are sealed under their own key.
    """
    if not personal_data:
        return None
    if isinstance(event, (IndexCreated, IndexFolded)):
        return index_key(prefix, event.index_id)
    if isinstance(event, SummaryCreated) and event.merged_from:
        return merge_key(prefix, event.summary_id)
    if isinstance(event, RAW_EVENTS) or (isinstance(event, LlmCalled) and event.purpose in RAW_PURPOSES):
        return raw_key(prefix, event.turn)
    return turn_key(prefix, event.turn)


def without_shredded(keys: FieldKeys, shredded: Collection[str]) -> FieldKeys:
    """`keys` with every shredded key replaced by the default: a key already shredded is never made again."""
    fields = {name: (None if c in shredded else c) if isinstance(c, str)
              else tuple(None if k in shredded else k for k in c) for name, c in keys.fields.items()}
    return FieldKeys(keys.default, {n: c for n, c in fields.items() if c is not None})


_RECORD = re.compile(r"r(\d+)")


def turn_of_record(record_id: str) -> int | None:
    """The turn a record id names (`r0007` -> 7), or None for another kind of id."""
    m = _RECORD.fullmatch(record_id)
    return int(m.group(1)) if m else None


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def gold_turn(planted: Sequence[tuple[str, str, int]], slot: str | None, gold: str,
              evidence: Sequence[str] = ()) -> int | None:
    """The turn that stated a gold value: the first planted (slot, value) equal to it, else its first evidence."""
    for p_slot, p_value, turn in planted:
        if (slot is None or p_slot == slot) and _same(p_value, gold):
            return turn
    turns = [t for t in (turn_of_record(r) for r in evidence) if t is not None]
    return turns[0] if turns else None


def gold_keys(prefix: str, answer: str, events: Sequence[Event],
              planted: Sequence[tuple[str, str, int]]) -> dict[int, FieldKeys]:
    """Per event (by position), the keys of its gold fields; `answer` (the answer's key) seals the rest.

    `planted` is the episode's gold as (slot, value, turn). A gold value
    whose turn is unknown stays under the answer's key, which the erasure
    finds through the value's mentions.
    """
    out: dict[int, FieldKeys] = {}
    asked: dict[str, int | None] = {}
    for n, e in enumerate(events):
        if isinstance(e, EpisodeGold):
            if len(e.fact_turns) == len(e.facts):
                out[n] = FieldKeys(answer, {"facts": tuple(turn_key(prefix, t) for t in e.fact_turns)})
        elif isinstance(e, ProbeAsked):
            turn = asked[e.probe_id] = gold_turn(planted, e.slot, e.gold, e.evidence)
            if turn is not None:
                out[n] = FieldKeys(answer, {"gold": turn_key(prefix, turn)})
        elif isinstance(e, ProbeJudged):
            judged = asked.get(e.probe_id)
            if judged is not None:
                out[n] = FieldKeys(answer, {"value": turn_key(prefix, judged)})
    return out


def planted_of(event: EpisodeGold) -> list[tuple[str, str, int]]:
    """An episode's gold as (slot, value, turn); a value already erased is left out."""
    if len(event.fact_turns) != len(event.facts):
        return []
    return [(slot, value, turn) for (slot, value), turn in zip(event.facts, event.fact_turns) if value != ERASED]


def value_pattern(value: str) -> re.Pattern[str]:
    """A value as a whole token: `29` is found in `team size=29`, not in `s0029` or `129`.

    Case-insensitive, and whitespace-normalised: `new  york` finds `New York`
    and `New` followed by a line break and `York`.
    """
    words = value.split()
    if not words:
        raise CommandRejected("Erase: the value to erase is empty")
    edge_l = r"(?<![0-9A-Za-z])" if words[0][:1].isascii() and words[0][:1].isalnum() else ""
    edge_r = r"(?![0-9A-Za-z])" if words[-1][-1:].isascii() and words[-1][-1:].isalnum() else ""
    return re.compile(edge_l + r"\s+".join(re.escape(w) for w in words) + edge_r, re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Erase:
    """Erase by slot (optionally one value of it), by a value wherever it was said, by raw record,
    or the whole data subject.

    A value without a slot (`by_value`) reaches what the fact grammar did not
    extract: every event whose plaintext mentions it is shredded with its
    lineage, and every fact whose value mentions it is erased.

    `mentions` are the keys of events whose plaintext contains a value being
    erased, found by the application's scan of the stream. `raw_keys` are,
    by turn, the keys the ledger records as sealing the turn's raw record
    (`raw_record_keys`; a turn missing from it has both of its keys named).
    """

    legal_basis: str
    key_prefix: str
    slot: str | None = None
    value: str | None = None
    record_id: str | None = None
    subject: bool = False
    mentions: tuple[str, ...] = ()
    raw_keys: Mapping[int, tuple[str, ...]] = field(default_factory=dict)

    @property
    def by_value(self) -> bool:
        return self.value is not None and not self.slot and not self.record_id and not self.subject

    def describe(self) -> str:
        if self.subject:
            return "data subject"
        if self.record_id:
            return f"raw record {self.record_id}"
        # Never the value itself: this description is stored in the ledger.
        if self.by_value:
            return "one value (any slot, wherever it was said)"
        return f"slot {self.slot!r}" + (" (one value)" if self.value is not None else " (every value)")


def _targets(state: EpisodeState, cmd: Erase) -> set[tuple[str, str]]:
    """(summary_id, slot) pairs the request names directly."""
    if cmd.subject:
        return {(s.summary_id, k) for s in state.summaries.values() for k, _ in s.facts}
    if cmd.record_id:
        if cmd.record_id not in state.raw:
            raise CommandRejected(f"Erase: no raw record {cmd.record_id!r} in this episode")
        return {(s.summary_id, k) for s in state.summaries.values() if cmd.record_id in s.raw_ids for k, _ in s.facts}
    if cmd.by_value:
        assert cmd.value is not None
        found = value_pattern(cmd.value)
        return {(s.summary_id, k) for s in state.summaries.values() for k, v in s.facts
                if v != ERASED and found.search(v)}
    if not cmd.slot:
        raise CommandRejected("Erase: name a slot, a value, a raw record, or the data subject")
    names = _slot_names(state, cmd.slot)
    return {
        (s.summary_id, k)
        for s in state.summaries.values()
        for k, v in s.facts
        if k in names and v != ERASED and (cmd.value is None or v == cmd.value)
    }


def _slot_names(state: EpisodeState, slot: str) -> set[str]:
    """The slot a request names, and the name the gate stores it under when the attribute table knows it."""
    canonical = table_for(state.config.attribute_table, state.config.slot_aliases).canonical(slot)
    return {slot, canonical} if canonical else {slot}


def values_to_erase(state: EpisodeState, cmd: Erase) -> set[str]:
    """The plaintext values the application must look for in the stream (never stored)."""
    facts = dict(((s.summary_id, k), v) for s in state.summaries.values() for k, v in s.facts)
    found = {facts[t] for t in _targets(state, cmd)} - {ERASED}
    if cmd.by_value:
        assert cmd.value is not None
        found.add(" ".join(cmd.value.split()))
    if cmd.record_id:
        # The user's own words; the agent's side is usually a generic reply that would match everywhere,
        # and what it repeats of the user's values is covered by the fact values above.
        found |= {state.raw[cmd.record_id].user} - {ERASED, ""}
        found |= {str(b.get("caption") or "") for b in state.raw[cmd.record_id].blocks} - {ERASED, ""}
    return found


def gold_to_erase(planted: Sequence[tuple[str, str, int]], cmd: Erase) -> set[str]:
    """The dataset's gold values (slot, value, turn) a request covers: they are the subject's values too.

    The whole subject: all of them; a raw record: those its turn stated; a
    slot: its values (or the one named). A value without a slot names itself.
    """
    turn = turn_of_record(cmd.record_id) if cmd.record_id else None
    return {value for slot, value, t in planted
            if cmd.subject or (turn is not None and t == turn)
            or (cmd.slot and not cmd.record_id and slot == cmd.slot and (cmd.value is None or value == cmd.value))}


def already_erased(state: EpisodeState, cmd: Erase) -> bool:
    """Whether a request that finds nothing to erase names a slot an earlier erasure emptied (a repeated call)."""
    if not cmd.slot:
        return False
    names = _slot_names(state, cmd.slot)
    return any(k in names and v == ERASED for s in state.summaries.values() for k, v in s.facts)


def names_its_target(cmd: Erase) -> bool:
    """Whether the request's description (stored in `key_shredded`) says all it erases: not a value it names."""
    return cmd.value is None


def check_erase(state: EpisodeState, cmd: Erase) -> None:
    """Refuse what no search can make possible: no legal basis, an episode recorded in clear, an empty value."""
    if not cmd.legal_basis.strip():
        raise CommandRejected("Erase: a legal basis is required (e.g. 'GDPR Art. 17 request #123')")
    if not state.config.personal_data:
        raise CommandRejected(
            "Erase: this episode declared that it holds no personal data, so its values were stored in "
            "clear (recorded without encryption) and cannot be crypto-shredded"
        )
    if cmd.value is not None:
        value_pattern(cmd.value)


def decide_erase(state: EpisodeState, cmd: Erase) -> tuple[FactErased | KeyShredded, ...]:
    check_erase(state, cmd)
    targets = _targets(state, cmd)
    if not targets and not cmd.record_id and not cmd.subject and not cmd.mentions:
        raise NothingToErase(f"Erase: nothing to erase for {cmd.describe()}")
    prefix = cmd.key_prefix
    turns = {state.summaries[sid].turn for sid, _ in targets}
    turns |= {state.raw[r].turn for sid, _ in targets for r in state.summaries[sid].raw_ids if r in state.raw}
    if cmd.record_id:
        turns.add(state.raw[cmd.record_id].turn)
    if cmd.subject:
        turns |= {r.turn for r in state.raw.values()}
    turns |= {t for t in (turn_of_key(prefix, k) for k in cmd.mentions) if t is not None}
    by_turn = {s.summary_id for s in state.summaries.values() if s.turn in turns and not s.merged_from}
    # A capacity merge is sealed under its own key and derives from its members: it goes when one does.
    merged = {s.summary_id for s in state.summaries.values()
              if s.merged_from and (set(s.merged_from) & by_turn or merge_key(prefix, s.summary_id) in cmd.mentions)}
    summaries = sorted(by_turn | merged)
    indexes = sorted(_indexes_over(state, set(summaries), prefix, cmd.mentions))
    pins = sorted(p.pin_id for p in state.pins.values() if p.turn in turns)
    keys = ({k for t in turns for k in turn_keys(prefix, t, cmd.raw_keys)} | {index_key(prefix, i) for i in indexes}
            | {merge_key(prefix, m) for m in merged} | set(cmd.mentions))
    erased: list[FactErased | KeyShredded] = [
        FactErased(turn=state.turn, summary_id=sid, slot=k, legal_basis=cmd.legal_basis,
                   collateral=(sid, k) not in targets)
        for sid in summaries
        for k, v in state.summaries[sid].facts
        if v != ERASED
    ]
    records = sorted(record_id_for(t) for t in turns if record_id_for(t) in state.raw)
    erased.append(KeyShredded(
        turn=state.turn, key_ids=tuple(sorted(keys)), legal_basis=cmd.legal_basis, request=cmd.describe(),
        records=tuple(records), summaries=tuple(summaries), indexes=tuple(indexes), pins=tuple(pins),
    ))
    return tuple(erased)


def _indexes_over(state: EpisodeState, summaries: set[str], prefix: str, mentions: tuple[str, ...]) -> set[str]:
    """Every title over an erased summary, directly or through the titles folded under it."""
    found = {e.index_id for e in state.indexes.values()
             if set(e.members) & summaries or index_key(prefix, e.index_id) in mentions}
    while True:
        more = {e.index_id for e in state.indexes.values() if set(e.members) & found} - found
        if not more:
            return found
        found |= more


# -- one decision for every stream of the data subject --------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamToErase:
    """What the decision needs of one stream of the data subject.

    `name` is the stream's id, under which its keys are named; `sealed` is
    the plaintext of every value sealed in the stream with the key that
    sealed it, read by the application and held in memory only; `raw_keys`
    the keys that sealed each turn's raw record, by turn (`Erase.raw_keys`).
    """

    name: str
    state: EpisodeState
    sealed: tuple[tuple[str, str], ...] = ()
    raw_keys: Mapping[int, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StreamErasure:
    """One stream's part of an erasure: the events to append to it."""

    name: str
    events: tuple[FactErased | KeyShredded, ...]


@dataclass(frozen=True, slots=True)
class ErasurePlan:
    """An erasure decided once for every stream of the data subject.

    `parts` are in the order to append them: the copies first, the
    subject's own stream last (its facts name the values, so a call
    interrupted half-way leaves them readable for the call that finishes
    it); a stream with nothing to erase has no part. `values` are the
    plaintext values the residue scan looks for (never stored); `pending`
    the keys that earlier `key_shredded` events of these streams named (an
    interrupted erasure's), destroyed with this plan's.
    """

    request: Erase
    parts: tuple[StreamErasure, ...]
    values: frozenset[str]
    pending: tuple[str, ...] = ()

    def events_of(self, name: str) -> tuple[FactErased | KeyShredded, ...]:
        return next((p.events for p in self.parts if p.name == name), ())

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key to destroy: what this plan's `key_shredded` events name, then what earlier ones left."""
        named = [k for p in self.parts for e in p.events if isinstance(e, KeyShredded) for k in e.key_ids]
        return tuple(dict.fromkeys([*named, *self.pending]))


def mentioning(sealed: Iterable[tuple[str, str]], values: Iterable[str]) -> tuple[str, ...]:
    """The keys (sorted) of the sealed values whose plaintext contains one of `values`."""
    patterns = [value_pattern(v) for v in values if v.strip()]
    return tuple(sorted({key for key, text in sealed if any(p.search(text) for p in patterns)}))


def plan_erasure(request: Erase, streams: Sequence[StreamToErase], *, gold: Collection[str] = (),
                 in_run: bool = False) -> ErasurePlan:
    """Which events each stream of the data subject gets and which keys go; `streams[0]` is its own stream.

    The others are copies of the same episode (a run's baselines): they hold
    its dialogue but extract no facts, so they lose what mentions the values
    the subject's stream names for the request, and `gold` (the dataset's
    values the request covers, `gold_to_erase`). A value without a slot is
    looked for in each stream alike. A copy that holds nothing of the
    request is left alone.

    `in_run` (an episode of a finished run): a value nothing readable holds
    any more, and a request an earlier call carried out, make an empty plan
    (the caller's receipt is then the scan) instead of being refused.
    """
    if not streams:
        raise CommandRejected("Erase: no stream to erase from")
    main, copies = streams[0], tuple(streams[1:])
    pending = tuple(dict.fromkeys(k for s in streams for k in s.state.shredded_keys))
    check_erase(main.state, request)
    if request.by_value:
        return _plan_by_value(request, main, copies, in_run, pending)
    own = replace(request, key_prefix=main.name, raw_keys=main.raw_keys)
    repeated = False
    try:
        decide_erase(main.state, own)  # refuse a bad request before any stream is touched
    except NothingToErase:
        if not (in_run and already_erased(main.state, own)):
            raise
        repeated = True  # an earlier call erased the subject's stream: finish the copies
    values = values_to_erase(main.state, own) | set(gold)
    parts: list[StreamErasure] = []
    for c in copies:
        try:
            part = _part(c, replace(request, key_prefix=c.name, raw_keys=c.raw_keys), values, ())
        except CommandRejected:
            part = None  # this copy never held the values (not even the record named)
        parts += [part] if part is not None else []
    last = _part(main, own, values, NothingToErase if repeated else ())
    return ErasurePlan(request, (*parts, *([last] if last is not None else [])), frozenset(values), pending)


def _plan_by_value(request: Erase, main: StreamToErase, copies: tuple[StreamToErase, ...], in_run: bool,
                   pending: tuple[str, ...]) -> ErasurePlan:
    """A value without a slot: each stream looks for it in its own facts and sealed values."""
    found: set[str] = set()
    parts: list[StreamErasure] = []
    for s in (*copies, main):
        own = replace(request, key_prefix=s.name, raw_keys=s.raw_keys)
        check_erase(s.state, own)
        values = values_to_erase(s.state, own)
        found |= values
        part = _part(s, own, values, NothingToErase if (in_run or s is not main) else ())
        parts += [part] if part is not None else []
    return ErasurePlan(request, tuple(parts), frozenset(found), pending)


def _part(stream: StreamToErase, request: Erase, also: Collection[str],
          skip: type[CommandRejected] | tuple[()]) -> StreamErasure | None:
    """One stream's events for `request`, its keys found by the values; None when `skip` refuses it."""
    values = values_to_erase(stream.state, request) | set(also)
    try:
        events = decide_erase(stream.state, replace(request, mentions=mentioning(stream.sealed, values)))
    except skip:
        return None
    return StreamErasure(stream.name, events)


#: Where a subject's plaintext sits in the projection tables (the residue scan reads these columns).
PLAINTEXT_COLUMNS: Mapping[str, tuple[str, ...]] = {
    "summary_versions": ("text", "facts", "inferences"),
    "fact_versions": ("value",),
    "index_versions": ("title",),
    "raw_records": ("user_text", "agent_text"),
    "pin_versions": ("text",),
}
