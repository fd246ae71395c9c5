"""Seeded synthetic dialogue generator with exact gold answers (en and zh).

Each episode plants a few slot facts and updates some of them later; it also
states hard constraints early (first quarter of the turns, never updated) and
open loops, pending tasks raised in the middle third and never closed.  The
remaining turns are small talk, and a stated share of them
(``distractor_rate``) are distractors: another person's attribute, a
hypothetical, a negation, reported speech, a plan or a question that names a
value of one of the episode's slots, which no memory may take for the user's
own fact.

Slot statements, updates and probe questions are sampled from the phrasing
corpus (``datasets.phrasing``): its slots and values, and frames drawn from
its families, from the development half by default or from the held-out half
(``phrasing="heldout"``), which was written before the fact grammar and is
never used to tune it. Values never contain one another within a slot,
constraint and open-loop values contain no other value of their language and
are contained in none, and probe questions are unique within an episode, so
every probe has exactly one correct answer that a plain substring check can
judge.

Probes come in four types, in this order within an episode: ``current_fact``
and ``history_fact`` for the updated slots, then ``constraint``, then
``open_loop``.

Poisoning (``poison=True``, off by default so default datasets do not
change): each episode also gets a dedicated slot (``POISON_TABLES``) whose
true value the user states, and later a turn from an external source
(``Turn.source == POISON_SOURCE``, ``"web"``) that plants a false value in the
same first-person shape a real statement has ("Note from a web page. My
parking spot is B3-07."), so a memory that does not tell sources apart
takes it for the user's own words.  A last probe of type ``poisoning`` asks
for the current value: its gold is the true value and its ``poison`` the
planted one.

Everything is derived from one ``random.Random(seed)`` instance, including
the timestamps, so the same arguments always give the same dataset.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from itertools import pairwise
from typing import Literal

from ledgermem.datasets.model import Dataset, Episode, Probe, Turn
from ledgermem.datasets.phrasing import PARTS, Corpus, load_corpus

__all__ = [
    "CONSTRAINT_TABLES",
    "OPEN_LOOP_SLOTS",
    "OPEN_LOOP_TASKS",
    "POISON_SOURCE",
    "POISON_TABLES",
    "SLOT_TABLES",
    "generate_synthetic",
    "poison_statements",
    "slot_table",
]

SlotTable = tuple[tuple[str, tuple[str, ...]], ...]
_Facts = tuple[tuple[str, tuple[tuple[int, str], ...]], ...]

def slot_table(lang: str, phrasing: str = "dev") -> SlotTable:
    """The slots and values of one half of the phrasing corpus (see ``datasets.phrasing``)."""
    return load_corpus(lang, phrasing).slots


#: The slots of the development half, by language (the default tables).
SLOT_TABLES: dict[str, SlotTable] = {lang: slot_table(lang) for lang in ("en", "zh")}


# Hard constraints: stated once, early, never updated.  Slot names differ from
# every SLOT_TABLES slot, and no value contains, or is contained in, any other
# value of its language (so "500 dollars" and "2500 dollars" never coexist).
CONSTRAINT_TABLES: dict[str, SlotTable] = {
    "en": (
        ("budget limit", (
            "450 dollars", "1200 dollars", "80 euros", "2750 dollars", "350 pounds", "960 dollars",
        )),
        ("latest start time", ("7:40am", "10:20am", "1:50pm", "5:10pm", "9:25pm")),
        ("maximum group size", (
            "3 travellers", "5 travellers", "8 travellers", "12 travellers", "20 travellers",
        )),
        ("allowed airline", ("Lufthansa", "KLM", "Air Canada", "Qantas", "Emirates", "Iberia")),
        ("dietary rule", (
            "vegetarian only", "halal only", "gluten free", "kosher only", "pescatarian only",
        )),
        ("minimum hotel rating", ("3 stars", "4 stars", "5 stars")),
        ("maximum flight length", ("4 hours", "6 hours", "9 hours", "12 hours")),
    ),
    "zh": (
        ("预算上限", ("450元", "1200元", "80欧元", "2750元", "350英镑", "960元")),
        ("最晚出发时间", ("早上7点40", "上午10点20", "下午1点50", "下午5点10", "晚上9点25")),
        ("出行人数上限", ("3名旅客", "5名旅客", "8名旅客", "12名旅客", "20名旅客")),
        ("指定航空公司", ("国航", "东航", "南航", "海航", "汉莎航空", "荷兰皇家航空")),
        ("饮食要求", ("素食", "清真饮食", "无麸质饮食", "低盐饮食", "犹太洁食")),
        ("酒店最低星级", ("三星级", "四星级", "五星级")),
        ("最长飞行时间", ("4小时", "6小时", "9小时", "12小时")),
    ),
}

# Open loops: a pending task raised once and never closed.  An episode with
# several loops uses distinct slots and distinct tasks.
OPEN_LOOP_SLOTS: dict[str, tuple[str, ...]] = {
    "en": ("open task", "pending errand", "unfinished chore"),
    "zh": ("待办事项", "待处理的事", "待跟进的事项"),
}
OPEN_LOOP_TASKS: dict[str, tuple[str, ...]] = {
    "en": (
        "passport renewal", "the tax return", "calling the plumber", "booking a dentist visit",
        "returning the rental car", "fixing the bike brakes", "sending the invoice",
        "replying to the landlord", "ordering printer ink", "cancelling the gym membership",
    ),
    "zh": (
        "续签护照", "报税", "给水管工打电话", "预约牙医", "归还租的车", "修自行车刹车",
        "寄发票", "回复房东", "买打印机墨盒", "取消健身房会员",
    ),
}


# Poisoning: slots used for nothing else, so a planted false value can only
# surface where it was planted.  Values follow the rules of SLOT_TABLES and
# contain, and are contained in, no other value of their language.
POISON_TABLES: dict[str, SlotTable] = {
    "en": (
        ("parking spot", ("P2-14", "B3-07", "C1-22", "A4-19", "D2-05")),
        ("spare key holder", ("Nora Quinn", "Felix Grant", "Ivy Morgan", "Leo Hart", "Zara Cole")),
        ("bank branch", ("Harbor Street", "Maple Avenue", "Kingsway", "Elm Plaza", "Riverside")),
    ),
    "zh": (
        ("停车位", ("P2-14", "B3-07", "C1-22", "A4-19", "D2-05")),
        ("备用钥匙保管人", ("孙悦", "吴昊", "郑爽", "冯涛", "何静")),
        ("开户支行", ("人民路支行", "建设路支行", "解放路支行", "中山路支行", "滨江支行")),
    ),
}
#: The source of the turn that plants the false value (a source policy can name it).
POISON_SOURCE = "web"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Phrasebook:
    """Per-language templates for what the phrasing corpus does not cover.

    Constraints, open loops, the poisoning source's text and small talk;
    slot statements, updates and questions come from the corpus.
    """

    constraint: str
    open_loop: str
    constraint_question: str
    open_loop_question: str
    poison: str  # an external source's text planting a false value, in the user's first-person shape
    acks: tuple[str, ...]
    small_talk: tuple[tuple[str, str], ...]


_PHRASEBOOKS: dict[str, _Phrasebook] = {
    "en": _Phrasebook(
        constraint="My {slot} is {value}. Treat that as a hard constraint.",
        open_loop="My {slot} is {value}. Please remind me later.",
        constraint_question="Which hard constraint did I set for my {slot}?",
        open_loop_question="What is still pending as my {slot}?",
        poison="Note from a web page. My {slot} is {value}.",
        acks=("Noted.", "Got it, thanks.", "Okay, I will keep that in mind."),
        small_talk=(
            ("The weather is lovely today.", "Sounds like a nice day."),
            ("I watched a documentary last night.", "Nice, documentaries can be fun."),
            ("Can you recommend a good book?", "A classic novel is always a safe pick."),
            ("Thanks for the help earlier.", "You're welcome."),
            ("I had pasta for lunch.", "That sounds tasty."),
            ("Let's talk about something else.", "Sure, what's on your mind?"),
            ("I went for a long walk this morning.", "Walking is a great habit."),
            ("That joke was pretty funny.", "Glad you liked it."),
            ("I'm a bit tired today.", "Take it easy."),
            ("Traffic was terrible on the way in.", "Sorry to hear that."),
            ("I might try a new recipe tonight.", "Good luck with it."),
            ("The new cafe downstairs looks busy.", "It must be popular."),
        ),
    ),
    "zh": _Phrasebook(
        constraint="我的{slot}是{value}。这是硬性约束。",
        open_loop="我的{slot}是{value}。之后提醒我。",
        constraint_question="我给{slot}定的硬性约束是什么？",
        open_loop_question="我的{slot}还有什么没完成？",
        poison="网页摘录。我的{slot}是{value}。",
        acks=("好的，记住了。", "明白。", "收到，谢谢。"),
        small_talk=(
            ("今天天气不错。", "是啊，适合出去走走。"),
            ("我昨天看了一部纪录片。", "听起来很有意思。"),
            ("你能推荐一本好书吗？", "可以试试经典小说。"),
            ("谢谢你之前的帮忙。", "不客气。"),
            ("午饭吃了面条。", "听起来不错。"),
            ("我们聊点别的吧。", "好的，你想聊什么？"),
            ("早上散步了很久。", "散步是个好习惯。"),
            ("刚才那个笑话挺好笑的。", "你喜欢就好。"),
            ("今天有点累。", "注意休息。"),
            ("来的路上堵车很厉害。", "辛苦了。"),
            ("晚上想试一个新菜谱。", "祝你成功。"),
            ("楼下新开的咖啡店人很多。", "看来很受欢迎。"),
        ),
    ),
}

# Probability that a second-or-later update reverts to the value before the
# current one (A -> B -> A); exercises history questions on repeated values.
_REVERT_PROBABILITY = 0.25
_MIN_DISTRACTOR_SHARE_TENTHS = 3
_BASE_TIME = datetime(2024, 1, 1, 9, 0, tzinfo=timezone.utc)

_Kind = Literal["slot", "constraint", "open_loop", "poison"]


@dataclass(frozen=True, slots=True, kw_only=True)
class _SlotPlan:
    """Values a slot takes over the episode, first statement included.

    Constraints and open loops have exactly one value; a poisoned slot has
    two, the true value the user states and the false one a source plants.
    """

    slot: str
    values: tuple[str, ...]
    kind: _Kind = "slot"


def _default_updates(turns: int) -> tuple[int, int]:
    """Updates per slot grow with length, so long episodes carry deep histories."""
    if turns <= 40:
        return (1, 2)
    if turns <= 150:
        return (2, 4)
    return (3, 6)


def _validate(n_episodes: int, turns: int, langs: tuple[str, ...],
              updates_per_slot: tuple[int, int], slots_per_episode: int,
              constraints: int, open_loops: int, poison: bool = False,
              phrasing: str = "dev", distractor_rate: float = 0.0) -> None:
    if phrasing not in PARTS:
        raise ValueError(f"phrasing must be one of {PARTS}, got {phrasing!r}")
    if not 0.0 <= distractor_rate <= 1.0:
        raise ValueError(f"distractor_rate must be in 0..1, got {distractor_rate}")
    if n_episodes < 1:
        raise ValueError(f"n_episodes must be >= 1, got {n_episodes}")
    if turns < 2:
        raise ValueError(f"turns must be >= 2, got {turns}")
    if not langs or any(lang not in SLOT_TABLES for lang in langs):
        allowed = sorted(SLOT_TABLES)
        raise ValueError(f"langs must be a non-empty subset of {allowed}, got {langs!r}")
    low, high = updates_per_slot
    if not 0 <= low <= high:
        raise ValueError(
            f"updates_per_slot must satisfy 0 <= low <= high, got {updates_per_slot!r}"
        )
    limits = (
        ("slots_per_episode", slots_per_episode, 1, SLOT_TABLES),
        ("constraints", constraints, 0, CONSTRAINT_TABLES),
        ("open_loops", open_loops, 0, OPEN_LOOP_SLOTS),
    )
    for name, value, lowest, tables in limits:
        highest = min(len(tables[lang]) for lang in langs)
        if name == "slots_per_episode":
            highest = min(len(slot_table(lang, phrasing)) for lang in langs)
        if not lowest <= value <= highest:
            raise ValueError(f"{name} must be in {lowest}..{highest}, got {value}")
    if poison and _fact_budget(turns) < _POISON_TURNS + 1:
        shortest = next(n for n in range(2, 100) if _fact_budget(n) >= _POISON_TURNS + 1)
        raise ValueError(
            f"poison=True needs turns >= {shortest} (the true and the planted statement beside one "
            f"other slot, with 30% small talk), got {turns}"
        )


#: Share of small-talk turns replaced by a distractor (another person's attribute, a hypothetical, ...).
DISTRACTOR_RATE = 0.15
_POISON_TURNS = 2  # the user's true statement and the external source's false one


def _fact_budget(turns: int) -> int:
    min_distractors = (turns * _MIN_DISTRACTOR_SHARE_TENTHS + 9) // 10
    return turns - min_distractors


def _early_window(turns: int) -> range:
    """Turns in the first quarter (4 * turn < turns); never empty."""
    return range((turns + 3) // 4)


def _middle_window(turns: int) -> range:
    """Turns in the middle third (turns <= 3 * turn < 2 * turns); never empty."""
    return range((turns + 2) // 3, (2 * turns + 2) // 3)


def _fit_updates(updates: list[int], budget: int) -> list[int]:
    """Shrink the update counts (then the slot count) to fit ``budget`` turns."""
    counts = list(updates)
    while sum(counts) + len(counts) > budget and max(counts) > 1:
        counts[counts.index(max(counts))] -= 1
    while sum(counts) + len(counts) > budget and len(counts) > 1:
        counts.pop()
    while sum(counts) + len(counts) > budget and counts[0] > 0:
        counts[0] -= 1
    return counts


def _fit(turns: int, updates: list[int], constraints: int,
         open_loops: int, reserved: int = 0) -> tuple[list[int], int, int]:
    """Fit slots, constraints and open loops into the episode's fact budget.

    Slots and updates shrink first; constraints and open loops are dropped
    (open loops first) only when one slot with one update, the least that
    still yields a current and a history probe, would not fit beside them.
    Neither can outnumber the turns of its window.  ``reserved`` turns of the
    budget are kept for the poisoned slot.
    """
    budget = _fact_budget(turns) - reserved
    constraints = min(constraints, len(_early_window(turns)))
    open_loops = min(open_loops, len(_middle_window(turns)))
    need = 2 if any(updates) else 1
    while open_loops and budget - constraints - open_loops < need:
        open_loops -= 1
    while constraints and budget - constraints - open_loops < need:
        constraints -= 1
    return _fit_updates(updates, budget - constraints - open_loops), constraints, open_loops


def _next_value(rng: random.Random, pool: tuple[str, ...], history: list[str]) -> str:
    current = history[-1]
    if len(history) >= 2 and rng.random() < _REVERT_PROBABILITY:
        return history[-2]
    unused = [value for value in pool if value not in history]
    return rng.choice(unused or [value for value in pool if value != current])


def _plan(rng: random.Random, lang: str, turns: int, updates_per_slot: tuple[int, int],
          slots_per_episode: int, constraints: int, open_loops: int, poison: bool,
          table: SlotTable) -> list[_SlotPlan]:
    chosen = rng.sample(range(len(table)), slots_per_episode)
    requested = [rng.randint(*updates_per_slot) for _ in chosen]
    reserved = _POISON_TURNS if poison else 0
    counts, constraints, open_loops = _fit(turns, requested, constraints, open_loops, reserved)
    plans = []
    for table_index, count in zip(chosen, counts):
        slot, pool = table[table_index]
        history = [rng.choice(pool)]
        for _ in range(count):
            history.append(_next_value(rng, pool, history))
        plans.append(_SlotPlan(slot=slot, values=tuple(history)))
    for slot, pool in rng.sample(CONSTRAINT_TABLES[lang], constraints):
        plans.append(_SlotPlan(slot=slot, values=(rng.choice(pool),), kind="constraint"))
    loop_slots = rng.sample(OPEN_LOOP_SLOTS[lang], open_loops)
    for slot, task in zip(loop_slots, rng.sample(OPEN_LOOP_TASKS[lang], open_loops)):
        plans.append(_SlotPlan(slot=slot, values=(task,), kind="open_loop"))
    if poison:  # drawn last, so the rest of the plan is drawn as without poisoning
        slot, pool = rng.choice(POISON_TABLES[lang])
        plans.append(_SlotPlan(slot=slot, values=tuple(rng.sample(pool, 2)), kind="poison"))
    return plans


def _schedule(rng: random.Random, plans: list[_SlotPlan], turns: int) -> dict[int, tuple[int, int]]:
    """Map turn index -> (plan index, value index), keeping each slot in order.

    Constraints go to the first quarter, open loops to the middle third and
    slot statements to any turn still free; a poisoned slot's true
    statement goes to the earlier half of the turns left free after that,
    its planted false one to the later half.
    """
    schedule: dict[int, tuple[int, int]] = {}
    for kind, window in (("constraint", _early_window(turns)),
                         ("open_loop", _middle_window(turns))):
        indexes = [index for index, plan in enumerate(plans) if plan.kind == kind]
        for position, index in zip(rng.sample(window, len(indexes)), indexes):
            schedule[position] = (index, 0)
    labels = [
        index for index, plan in enumerate(plans) if plan.kind == "slot" for _ in plan.values
    ]
    rng.shuffle(labels)
    free = [turn for turn in range(turns) if turn not in schedule]
    positions = sorted(rng.sample(free, len(labels)))
    seen: Counter[int] = Counter()
    for position, label in zip(positions, labels):
        schedule[position] = (label, seen[label])
        seen[label] += 1
    for index, plan in enumerate(plans):
        if plan.kind == "poison":
            left = [turn for turn in range(turns) if turn not in schedule]
            half = len(left) // 2  # the true value in the earlier half of the free turns, the planted one later
            true_turn, planted_turn = rng.choice(left[:half]), rng.choice(left[half:])
            schedule[true_turn], schedule[planted_turn] = (index, 0), (index, 1)
    return schedule


_POISON_FIRST = {"en": "My {slot} is {value}.", "zh": "我的{slot}是{value}。"}


def _fact_turn(rng: random.Random, book: _Phrasebook, corpus: Corpus, plan: _SlotPlan,
               step: int) -> tuple[str, str]:
    if plan.kind == "constraint":
        user = book.constraint.format(slot=plan.slot, value=plan.values[step])
    elif plan.kind == "open_loop":
        user = book.open_loop.format(slot=plan.slot, value=plan.values[step])
    elif plan.kind == "poison":
        template = _POISON_FIRST[corpus.lang] if step == 0 else book.poison
        user = template.format(slot=plan.slot, value=plan.values[step])
    else:
        frame = rng.choice(corpus.of("statement") if step == 0 else corpus.of("update"))
        old = plan.values[step - 1] if step else ""
        user = frame.fill(slot=plan.slot, value=plan.values[step], old=old)
    return user, rng.choice(book.acks)


def _distractor_turn(rng: random.Random, corpus: Corpus, plans: list[_SlotPlan]) -> str | None:
    """A turn that names a slot of the episode and a value the user never gave it, as nobody's fact of theirs."""
    slots = [plan for plan in plans if plan.kind == "slot"]
    if not slots:
        return None
    plan = rng.choice(slots)
    pool = dict(corpus.slots).get(plan.slot, ())
    unused = [value for value in pool if value not in plan.values]
    if not unused:
        return None
    frame = rng.choice(corpus.of("distractor"))
    return frame.fill(slot=plan.slot, value=rng.choice(unused), old=plan.values[0])


def _timestamps(rng: random.Random, turns: int) -> list[str]:
    moment = _BASE_TIME + timedelta(days=rng.randrange(365), minutes=rng.randrange(600))
    stamps = []
    for _ in range(turns):
        stamps.append(moment.isoformat())
        moment += timedelta(minutes=rng.randint(1, 15))
    return stamps


def _build_turns(rng: random.Random, book: _Phrasebook, corpus: Corpus, plans: list[_SlotPlan],
                 schedule: dict[int, tuple[int, int]], turns: int, distractor_rate: float) -> tuple[Turn, ...]:
    stamps = _timestamps(rng, turns)
    built = []
    for index in range(turns):
        source = None
        if index in schedule:
            plan_index, step = schedule[index]
            user, agent = _fact_turn(rng, book, corpus, plans[plan_index], step)
            if plans[plan_index].kind == "poison" and step > 0:
                source = POISON_SOURCE
        else:
            user, agent = rng.choice(book.small_talk)
            if distractor_rate and rng.random() < distractor_rate:
                user = _distractor_turn(rng, corpus, plans) or user
                agent = rng.choice(book.acks) if user not in dict(book.small_talk) else agent
        built.append(Turn(user=user, agent=agent, occurred_at=stamps[index], source=source))
    return tuple(built)


def _facts(plans: list[_SlotPlan], schedule: dict[int, tuple[int, int]]) -> _Facts:
    history: dict[int, list[tuple[int, str]]] = {index: [] for index in range(len(plans))}
    for turn in sorted(schedule):
        plan_index, step = schedule[turn]
        if plans[plan_index].kind == "poison" and step > 0:
            continue  # the planted value is no fact of the user's: only the probe names it
        history[plan_index].append((turn, plans[plan_index].values[step]))
    ordered = sorted(history.items(), key=lambda item: item[1][0][0])
    return tuple((plans[index].slot, tuple(entries)) for index, entries in ordered)


def _ask(rng: random.Random, corpus: Corpus, asks: str, slot: str, anchor: str, taken: set[str]) -> str | None:
    """A question frame of kind ``asks`` about ``slot`` not already asked in the episode."""
    frames = list(corpus.of("question", asks))
    rng.shuffle(frames)
    for frame in frames:
        text = frame.fill(slot=slot, anchor=anchor)
        if text not in taken:
            taken.add(text)
            return text
    return None


def _slot_questions(rng: random.Random, corpus: Corpus, slot: str, values: tuple[str, ...],
                    taken: set[str]) -> list[tuple[str, str, str]]:
    """(type, question, answer) for one slot; ambiguous history probes are skipped.

    A history probe asks for the value before a change: as "before <the new
    value>", or, for the last change, as the previous value, or, for the
    first change, as the original value, whichever the draw picks.
    """
    questions = []
    if (current := _ask(rng, corpus, "current", slot, "", taken)) is not None:
        questions.append(("current_fact", current, values[-1]))
    targets = Counter(values[1:])
    for position, (before, after) in enumerate(pairwise(values), start=1):
        # "before it changed to X" has two answers if X was reached twice.
        if targets[after] != 1:
            continue
        kinds = ["before"] + (["previous"] if position == len(values) - 1 else []) + (
            ["original"] if position == 1 else [])
        question = _ask(rng, corpus, rng.choice(kinds), slot, after, taken)
        if question is not None:
            questions.append(("history_fact", question, before))
    return questions


def _probes(rng: random.Random, episode_id: str, book: _Phrasebook, corpus: Corpus, facts: _Facts,
            plans: list[_SlotPlan]) -> tuple[Probe, ...]:
    kinds = {plan.slot: plan.kind for plan in plans}
    taken: set[str] = set()
    rows: list[tuple[str, str, str, str, str | None]] = []
    for wanted in ("slot", "constraint", "open_loop"):
        for slot, history in facts:
            if kinds[slot] != wanted:
                continue
            values = tuple(v for _, v in history)
            if wanted == "constraint":
                rows.append(("constraint", book.constraint_question.format(slot=slot), values[0], slot, None))
            elif wanted == "open_loop":
                rows.append(("open_loop", book.open_loop_question.format(slot=slot), values[0], slot, None))
            else:
                rows += [(kind, question, answer, slot, None)
                         for kind, question, answer in _slot_questions(rng, corpus, slot, values, taken)]
    for plan in plans:
        if plan.kind == "poison" and (question := _ask(rng, corpus, "current", plan.slot, "", taken)):
            rows.append(("poisoning", question, plan.values[0], plan.slot, plan.values[1]))
    return tuple(
        Probe(probe_id=f"{episode_id}:p{index}", type=kind, question=question,
              answer=answer, fact_key=slot, poison=poison)
        for index, (kind, question, answer, slot, poison) in enumerate(rows)
    )


def _episode(rng: random.Random, index: int, lang: str, turns: int,
             updates_per_slot: tuple[int, int], slots_per_episode: int,
             constraints: int, open_loops: int, poison: bool, phrasing: str,
             distractor_rate: float) -> Episode:
    book = _PHRASEBOOKS[lang]
    corpus = load_corpus(lang, phrasing)
    episode_id = f"syn-{lang}-{index:03d}"
    plans = _plan(rng, lang, turns, updates_per_slot, slots_per_episode, constraints, open_loops, poison,
                  corpus.slots)
    schedule = _schedule(rng, plans, turns)
    facts = _facts(plans, schedule)
    return Episode(
        episode_id=episode_id,
        turns=_build_turns(rng, book, corpus, plans, schedule, turns, distractor_rate),
        facts=facts,
        probes=_probes(rng, episode_id, book, corpus, facts, plans),
        lang=lang,
    )


def generate_synthetic(
    *,
    n_episodes: int = 6,
    turns: int = 24,
    seed: int = 7,
    langs: tuple[str, ...] = ("en", "zh"),
    updates_per_slot: tuple[int, int] | None = None,
    slots_per_episode: int = 4,
    constraints: int = 1,
    open_loops: int = 1,
    poison: bool = False,
    phrasing: str = "dev",
    distractor_rate: float = DISTRACTOR_RATE,
) -> Dataset:
    """Generate ``n_episodes`` episodes of ``turns`` turns, alternating ``langs``.

    Each episode plants ``slots_per_episode`` updated slots, ``constraints``
    hard constraints in the first quarter and ``open_loops`` pending tasks in
    the middle third.  ``updates_per_slot`` is the (low, high) range of
    updates per slot; None scales it with length: (1, 2) up to 40 turns,
    (2, 4) up to 150, (3, 6) beyond.

    At least 30% of turns are small talk.  When ``turns`` is too small for the
    requested facts, update counts shrink first, then the number of slots, down
    to one slot with one update; only then are open loops dropped, and then
    constraints.  Neither outnumbers the turns of its window.  With the
    defaults every probe type fits from 6 turns up; 5 turns lose the open
    loop, 3 and 4 the constraint too, and 2 keep one slot without updates.

    ``poison=True`` adds the poisoned slot and its ``poisoning`` probe to
    every episode (see the module docstring); it needs at least 5 turns, and
    its two turns come out of the fact budget, so the small-talk share holds.
    Without it the dataset is exactly what it was before poisoning existed.

    ``phrasing`` picks the half of the phrasing corpus the slots, values,
    statements, updates and questions come from (``"dev"`` or ``"heldout"``);
    ``distractor_rate`` is the share of small-talk turns replaced by a
    distractor about one of the episode's slots (default 0.15).
    """
    if updates_per_slot is None:
        updates_per_slot = _default_updates(turns)
    _validate(n_episodes, turns, langs, updates_per_slot, slots_per_episode,
              constraints, open_loops, poison, phrasing, distractor_rate)
    rng = random.Random(seed)
    episodes = tuple(
        _episode(rng, index, langs[index % len(langs)], turns, updates_per_slot,
                 slots_per_episode, constraints, open_loops, poison, phrasing, distractor_rate)
        for index in range(n_episodes)
    )
    poisoned = f",poison={POISON_SOURCE}" if poison else ""
    return Dataset(
        name="synthetic",
        source=(f"synthetic(seed={seed},n={n_episodes},turns={turns}{poisoned},phrasing={phrasing},"
                f"distractors={distractor_rate})"),
        episodes=episodes,
    )


def poison_statements(lang: str) -> tuple[tuple[str, str, str], ...]:
    """Every false statement the generator can plant in ``lang``, as ``(text, slot, value)``.

    ``detect_facts(text)`` returns exactly one mention, ``slot`` takes
    ``value``: to a lexical reader the planted text is a plain statement.
    """
    book = _PHRASEBOOKS[lang]
    return tuple((book.poison.format(slot=slot, value=value), slot, value)
                 for slot, values in POISON_TABLES[lang] for value in values)
