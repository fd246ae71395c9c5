"""One name per attribute: the attribute table, the gate's slot naming, suspected aliases in anomalies and the report.

Done when two names of one attribute end in one slot; each check has a
control without the table (or with the rule broken) that must come out
differently.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result

from tests.invoke import invoke_in
from tests.turns import called, record_turn
from ledgermem.datasets.model import DatasetError, dataset_to_json
from ledgermem.datasets.loaders import load_dataset
from ledgermem.evaluation.outputs import SLOT_ALIASES, write_outputs
from ledgermem.evaluation.report import REPORT, slot_alias_section, write_report
from ledgermem.evaluation.replay import replay
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.memory.runs import open_run
from ledgermem.gate.attributes import BUILTIN_ATTRIBUTES, AttributeTable, attribute_key, name_facts, near_duplicate, table_for
from ledgermem.gate.decide import decide
from ledgermem.gate.extraction import measure_extraction
from ledgermem.projections.events import EpisodeStarted, SlotAliasSuspected, SummaryCreated
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import ConfigError, MemoryConfig
from ledgermem.projections.state import EpisodeState, fold
from ledgermem.projections.tokens import ESTIMATOR

CONFIG = MemoryConfig(tokenizer=ESTIMATOR)
NO_TABLE = MemoryConfig(tokenizer=ESTIMATOR, attribute_table="none")


def started(config: MemoryConfig = CONFIG) -> EpisodeState:
    return fold([EpisodeStarted(config=config.to_dict())])


def said(state: EpisodeState, n: int, user: str, facts: str, overrides: str = "none") -> tuple[EpisodeState, tuple]:
    """One turn whose summary writes `facts` (the user said the values, so they are grounded)."""
    response = f"noted\n[FACTS: {facts}]\n[OVERRIDES: {overrides}]"
    events = decide(state, record_turn(state, turn=n, user=user, agent="ok", summarizer=called(response, n)))
    return fold(list(events), state), events


def slots(state: EpisodeState) -> dict[str, str]:
    return {k: v for k, (v, _) in state.current_values().items()}


# --- the table and its rules -------------------------------------------------------------------------------------


@pytest.mark.parametrize("written, canonical", [
    ("floor of my office", "office floor"),
    ("Office Floor", "office floor"),
    ("the office's floor", "office floor"),
    ("desk floor", "office floor"),
    ("ＯＦＦＩＣＥ　ＦＬＯＯＲ", "office floor"),  # full width
    ("floor of the office", "office floor"),  # "X of Y" read as "Y X", articles dropped
    ("home wifi network", "home Wi-Fi name"),
    ("coffee", "coffee order"),
    ("咖啡", "咖啡口味"),
    ("我的咖啡口味", "咖啡口味"),
    ("办公室的楼层", "office floor"),
    ("工位號", "工位"),  # a traditional character
    ("車牌號碼", "车牌号"),
    ("居住地", "居住城市"),  # a self-written block's drift: 居住城市=上海, then 居住地=北京
])
def test_known_names_resolve_to_their_canonical_slot(written: str, canonical: str) -> None:
    assert table_for("builtin", {}).canonical(written) == canonical


def test_unknown_and_distinct_names_are_not_resolved() -> None:
    table = table_for("builtin", {})
    for name in ("phone", "gym locker code", "wifi password", "预算", "home phone"):
        assert table.canonical(name) is None, name


def test_no_builtin_name_belongs_to_two_attributes() -> None:
    owner: dict[str, str] = {}
    for lang in BUILTIN_ATTRIBUTES:
        for canonical, aliases in BUILTIN_ATTRIBUTES[lang].items():
            for name in (canonical, *aliases):
                key = attribute_key(name)
                assert owner.setdefault(key, canonical) == canonical, (name, owner[key], canonical)


def test_the_builtin_canonical_names_are_the_generators_slots() -> None:
    from ledgermem.datasets.synthetic import CONSTRAINT_TABLES, POISON_TABLES, SLOT_TABLES

    table = table_for("builtin", {})
    for lang, rows in SLOT_TABLES.items():
        for slot, _ in rows:
            assert table.canonical(slot) == slot, (lang, slot)
    for tables in (CONSTRAINT_TABLES, POISON_TABLES):  # the table never renames a slot the generator plants
        for lang, rows in tables.items():
            for slot, _ in rows:
                assert table.canonical(slot) in (None, slot), (lang, slot)


@pytest.mark.parametrize("a, b, rule", [
    ("gym locker code", "locker code gym", "reordered"),
    ("name of my pet", "pet name", "reordered"),
    ("gym locker code", "locker code", "contains"),
    ("奶茶", "奶茶口味", "generic affix"),
    ("快递地址", "快递", "generic affix"),
    ("月租", "月租金额", "contains"),
    ("work phone", "home phone", None),  # one word differs each way: two attributes
    ("Gym Locker Code", "gym locker code", None),  # one name spelled twice: a spelling, not a suspicion
    ("猫", "猫粮", None),  # one character is too little to go on
])
def test_near_duplicate_rules(a: str, b: str, rule: str | None) -> None:
    assert near_duplicate(a, b) == rule
    assert near_duplicate(b, a) == rule


def test_a_declared_canonical_name_takes_its_attribute_over() -> None:
    table = AttributeTable([("coffee order", ("coffee", "usual coffee"))])
    table.add("coffee")  # a dataset whose slot is "coffee"
    assert {table.canonical(n) for n in ("coffee order", "coffee", "usual coffee")} == {"coffee"}


def test_name_facts_keeps_the_later_of_two_facts_that_end_in_one_slot() -> None:
    facts, renamed, suspected = name_facts(table_for("builtin", {}),
                                           [("office floor", "3F"), ("floor of my office", "7F")], [])
    assert facts == (("office floor", "7F"),)
    assert renamed == (("floor of my office", "office floor"),) and suspected == ()


# --- the gate: two names of one attribute end in one slot -----------------------------------------------------------


def test_two_names_of_one_attribute_end_in_one_slot_through_decide() -> None:
    s, _ = said(started(), 1, "My office floor is 3F.", "office floor=3F")
    s, events = said(s, 2, "The floor of my office is 7F now.", "floor of my office=7F")
    assert slots(s) == {"office floor": "7F"}
    created = next(e for e in events if isinstance(e, SummaryCreated))
    assert created.facts == (("office floor", "7F"),)
    assert created.renamed_slots == (("floor of my office", "office floor"),)  # what the model wrote is kept
    assert not any(isinstance(e, SlotAliasSuspected) for e in events)


def test_two_chinese_names_of_one_attribute_end_in_one_slot() -> None:
    s, _ = said(started(), 1, "我的咖啡是拿铁", "咖啡=拿铁")
    s, _ = said(s, 2, "我的咖啡口味改成美式了", "咖啡口味=美式")
    assert slots(s) == {"咖啡口味": "美式"}


def test_control_without_the_table_two_names_make_two_slots() -> None:
    """Must fail without the table: the old value stays current beside the new one."""
    s, _ = said(started(NO_TABLE), 1, "My office floor is 3F.", "office floor=3F")
    s, _ = said(s, 2, "The floor of my office is 7F now.", "floor of my office=7F")
    assert slots(s) == {"office floor": "3F", "floor of my office": "7F"}


def test_a_second_spelling_of_an_unknown_slot_joins_the_first() -> None:
    s, _ = said(started(), 1, "My gym locker code is 4471.", "gym locker code=4471")
    s, events = said(s, 2, "My Gym-Locker code is 0909.", "Gym Locker Code=0909")
    assert slots(s) == {"gym locker code": "0909"}
    assert not any(isinstance(e, SlotAliasSuspected) for e in events)


def test_a_new_name_overrides_under_its_canonical_slot() -> None:
    """The override check sees the canonical slot: the summary holding 3F can be archived by one writing 7F."""
    s, _ = said(started(), 1, "My office floor is 3F.", "office floor=3F")
    s, _ = said(s, 2, "My desk floor is 7F.", "desk floor=7F", overrides="s0001")
    assert s.summaries["s0001"].status == "archived" and slots(s) == {"office floor": "7F"}


def test_two_names_end_in_one_slot_through_memory_with_the_heuristic_backend() -> None:
    def run_memory(config: MemoryConfig) -> dict[str, str]:
        m = Memory(Ledger(":memory:"), StreamKey("run", "three_layer", "ep"), HeuristicBackend(tokenizer=ESTIMATOR),
                   config=config)
        for user in ("My office floor is 3F.", "Nice weather today.", "My desk floor is 7F."):
            m.add_turn(user, "Noted.")
        return slots(m.state)

    assert run_memory(CONFIG) == {"office floor": "7F"}
    assert run_memory(NO_TABLE) == {"office floor": "3F", "desk floor": "7F"}  # control


def test_a_configured_alias_is_applied_and_a_bad_one_refused() -> None:
    config = MemoryConfig(tokenizer=ESTIMATOR, slot_aliases={"gym locker code": ["locker combination"]})
    s, _ = said(started(config), 1, "My gym locker code is 4471.", "gym locker code=4471")
    s, _ = said(s, 2, "My locker combination is 0909.", "locker combination=0909")
    assert slots(s) == {"gym locker code": "0909"}
    s, _ = said(started(), 1, "My gym locker code is 4471.", "gym locker code=4471")  # control: not declared
    s, _ = said(s, 2, "My locker combination is 0909.", "locker combination=0909")
    assert len(slots(s)) == 2
    with pytest.raises(ConfigError, match="listed under both"):
        MemoryConfig(tokenizer=ESTIMATOR, slot_aliases={"a": ["b"], "c": ["B"]}).validate()


def test_a_ledger_written_before_the_table_decodes_as_without_it() -> None:
    old = {k: v for k, v in CONFIG.to_dict().items() if k not in ("attribute_table", "slot_aliases")}
    assert MemoryConfig.from_dict(old).attribute_table == "none"
    assert MemoryConfig.from_dict(CONFIG.to_dict()) == CONFIG


def test_strict_provenance_and_i4_compare_canonical_names() -> None:
    strict = MemoryConfig(tokenizer=ESTIMATOR, gate_level="strict")
    s, events = said(started(strict), 1, "My desk floor is 7F.", "office floor=7F")
    created = next(e for e in events if isinstance(e, SummaryCreated))
    assert created.facts == (("office floor", "7F"),) and created.inferences == ()  # the detector named it desk floor
    assert measure_extraction(s).recall == 1.0
    s, _ = said(started(NO_TABLE), 1, "My desk floor is 7F.", "office floor=7F")  # control
    assert measure_extraction(s).recall == 0.0


# --- unknown near-duplicates: suspected, never merged ---------------------------------------------------------------


def test_an_unknown_near_duplicate_is_suspected_and_kept_apart() -> None:
    s, _ = said(started(), 1, "My gym locker code is 4471.", "gym locker code=4471")
    s, events = said(s, 2, "My locker code is 0909.", "locker code=0909")
    assert slots(s) == {"gym locker code": "4471", "locker code": "0909"}
    assert [(e.summary_id, e.slot, e.existing, e.rule) for e in events if isinstance(e, SlotAliasSuspected)] == [
        ("s0002", "locker code", "gym locker code", "contains")]
    assert fold([e for e in events if isinstance(e, SlotAliasSuspected)], s) == s  # the fold ignores it
    s, events = said(s, 3, "My locker code is 2580.", "locker code=2580")  # the name is known now: said once
    assert not any(isinstance(e, SlotAliasSuspected) for e in events)


def test_declaring_both_names_settles_a_suspicion() -> None:
    config = MemoryConfig(tokenizer=ESTIMATOR, slot_aliases={"gym locker code": [], "locker code": []})
    s, _ = said(started(config), 1, "My gym locker code is 4471.", "gym locker code=4471")
    _, events = said(s, 2, "My locker code is 0909.", "locker code=0909")
    assert not any(isinstance(e, SlotAliasSuspected) for e in events)


# --- datasets, anomalies, report --------------------------------------------------------------------------------

SEED = {
    "meta": {"name": "aliases"},
    "attributes": {"gym locker code": ["locker combination"]},
    "episodes": [{
        "episode_id": "a1",
        "dialogues": [
            ["My gym locker code is 4471.", "Noted."],
            ["My locker combination is 0909.", "Noted."],
            ["My office floor is 3F.", "Noted."],
            ["My desk floor is 7F.", "Noted."],
            ["My locker code is 1234.", "Noted."],
        ],
        "facts": {"gym locker code": [[0, "4471"], [1, "0909"]], "office floor": [[2, "3F"], [3, "7F"]]},
        "probes": [{"type": "current_fact", "fact_key": "office floor", "question": "What is my office floor?",
                    "answer": "7F"}],
    }],
}


def _invoke(*args: str, cwd: Path) -> Result:
    return invoke_in(cwd, *args)


def test_dataset_attributes_load_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps(SEED), encoding="utf-8")
    ds = load_dataset(path)
    assert ds.attributes == {"gym locker code": ("locker combination",)}
    assert dataset_to_json(ds)["attributes"] == {"gym locker code": ["locker combination"]}
    path.write_text(json.dumps({**SEED, "attributes": {"gym locker code": "locker combination"}}), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"d\.json: attributes\['gym locker code'\]"):
        load_dataset(path)


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("aliases")
    path = folder / "aliases.json"
    path.write_text(json.dumps(SEED), encoding="utf-8")
    result = run(load_dataset(path), RunOptions(run_id="al", runs_dir=folder / "runs",
                                                memory=MemoryConfig(personal_data=False)))
    return Path(result.ledger_path)


def test_a_dataset_alias_is_applied_in_a_run_and_replays_identically(seed_run: Path) -> None:
    with Ledger(seed_run, read_only=True) as ledger:
        events = [r.event for r in ledger.read(run_id="al") if r.stream.system == "three_layer"
                  and r.stream.episode_id == "a1"]
    state = fold(events)  # type: ignore[arg-type]
    assert slots(state) == {"gym locker code": "0909", "office floor": "7F", "locker code": "1234"}
    assert state.config.slot_aliases == {"gym locker code": ["locker combination"]}
    assert [(e.slot, e.existing) for e in events if isinstance(e, SlotAliasSuspected)] == [
        ("locker code", "gym locker code")]
    for engine in ("python", "sql"):  # the fold and the SQL rebuild both pass over the new event
        with open_run(seed_run) as (ledger, projections):
            report = replay(ledger, projections, engine=engine)
        assert report.identical, engine


def test_a_suspected_alias_shows_in_anomalies_and_the_report(seed_run: Path) -> None:
    runs = seed_run.parents[1]
    shown = _invoke("anomalies", "al", "--episode", "a1", "--runs-dir", str(runs), "--json", cwd=runs.parent)
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.output)["slot_alias_suspected"]
    assert [(r["slot"], r["existing"], r["rule"]) for r in rows] == [("locker code", "gym locker code",
                                                                      "contains")]
    write_outputs(seed_run)
    write_report(seed_run.parent)
    text = (seed_run.parent / REPORT).read_text(encoding="utf-8")
    section = text.split("## Suspected slot aliases", 1)[1].split("## ", 1)[0]
    assert "| three_layer | locker code | gym locker code | contains | 1 |" in section


def test_the_report_section_without_suspicions_and_for_older_runs(tmp_path: Path) -> None:
    assert slot_alias_section(None) == []  # a run derived before the file existed: no section, no claim
    assert "No new slot name" in "\n".join(slot_alias_section([]))
    (tmp_path / SLOT_ALIASES).write_text("system,slot\n", encoding="utf-8")
    from ledgermem.evaluation.report import read_slot_aliases
    from ledgermem.evaluation.errors import MissingColumn

    with pytest.raises(MissingColumn, match="slot_aliases.csv"):
        read_slot_aliases(tmp_path)


def test_a_datasets_own_slot_names_are_kept_even_when_the_table_has_them_as_aliases() -> None:
    from ledgermem.datasets.model import Dataset, Episode, Probe
    from ledgermem.evaluation.runner import with_dataset_attributes

    ep = Episode(episode_id="e", turns=(), facts=(("coffee", ((0, "latte"),)), ("coffee order", ((1, "mocha"),))),
                 probes=(Probe(probe_id="p", type="current_fact", question="?", answer="latte", fact_key="coffee"),))
    opts = with_dataset_attributes(RunOptions(run_id="x"), Dataset(name="d", source="d", episodes=(ep,)))
    assert opts.memory.slot_aliases == {"coffee": [], "coffee order": []}
    table = table_for(opts.memory.attribute_table, opts.memory.slot_aliases)
    assert (table.canonical("coffee"), table.canonical("coffee order")) == ("coffee", "coffee order")
    synthetic = Episode(episode_id="s", turns=(), facts=(("office floor", ((0, "3F"),)),), probes=())
    plain = RunOptions(run_id="x")
    assert with_dataset_attributes(plain, Dataset(name="d", source="d", episodes=(synthetic,))) is plain


def test_anomalies_on_a_connection_without_the_events_leave_the_key_out(tmp_path: Path) -> None:
    """Absent, not empty: an empty list would claim that nothing was suspected."""
    from ledgermem.projections.materialise import ProjectionStore, projection_path
    from ledgermem.memory.backends import ScriptedBackend
    from ledgermem.temporal import Episode, anomalies

    ledger = Ledger(tmp_path / "l.duckdb")
    store = ProjectionStore(projection_path(ledger.path))
    responses = iter(["a\n[FACTS: gym locker code=4471]\n[OVERRIDES: none]",
                      "b\n[FACTS: locker code=0909]\n[OVERRIDES: none]"])
    m = Memory(ledger, StreamKey("r", "three_layer", "e"), ScriptedBackend(lambda msgs, p: next(responses, "NONE")),
               config=CONFIG, projections=store)
    m.add_turn("My gym locker code is 4471.", "Noted.")
    m.add_turn("My locker code is 0909.", "Noted.")
    found = anomalies(store.conn, Episode("r", "three_layer", "e"))
    assert set(found) == {"flip_flop", "stale_live"}
    rows = ledger.conn.execute("SELECT slot, payload ->> '$.existing' FROM events "
                               "WHERE event_type = 'slot_alias_suspected'").fetchall()
    assert rows == [("locker code", "gym locker code")]


def test_an_erasure_that_names_another_name_of_a_slot_erases_the_slot() -> None:
    from ledgermem.gate.erasure import Erase, decide_erase
    from ledgermem.gate.errors import NothingToErase
    from ledgermem.projections.events import FactErased

    s, _ = said(started(), 1, "My office floor is 3F.", "office floor=3F")
    erased = decide_erase(s, Erase(slot="floor of my office", legal_basis="GDPR Art. 17", key_prefix="r/s/e"))
    assert [(e.summary_id, e.slot, e.collateral) for e in erased if isinstance(e, FactErased)] == [
        ("s0001", "office floor", False)]
    s, _ = said(started(NO_TABLE), 1, "My office floor is 3F.", "office floor=3F")  # control: no table, no name
    with pytest.raises(NothingToErase):
        decide_erase(s, Erase(slot="floor of my office", legal_basis="GDPR Art. 17", key_prefix="r/s/e"))
