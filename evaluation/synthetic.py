"""Seeded synthetic dialogue generator with exact gold answers (en and zh).

Each episode plants a few slot facts, updates some of them later and fills
the remaining turns with small talk.  Statements use templates that
``gate.lexicon.detect_facts`` recognises exactly, values never contain one
another within a slot, and probe questions are unique within an episode, so
every probe has exactly one correct answer that a plain substring check can
judge.

Everything is derived from one ``random.Random(seed)`` instance, including
the timestamps, so the same arguments always give the same dataset.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from evaluation.datasets import Dataset, Episode, Probe, Turn

__all__ = ["SLOT_TABLES", "generate_synthetic"]

SlotTable = tuple[tuple[str, tuple[str, ...]], ...]
_Facts = tuple[tuple[str, tuple[tuple[int, str], ...]], ...]

SLOT_TABLES: dict[str, SlotTable] = {
    "en": (
        ("office floor", ("3F", "7F", "12F", "15F", "20F", "28F", "34F")),
        ("meeting time", ("9am", "2pm", "4:30pm", "11am", "3:15pm", "6pm", "8:45am")),
        ("team size", (
            "4 people", "6 people", "9 people", "11 people", "17 people", "23 people",
        )),
        ("project codename", (
            "Falcon", "Orchid", "Granite", "Nebula", "Kestrel", "Basalt", "Juniper",
        )),
        ("favorite drink", (
            "green tea", "espresso", "oat latte", "lemonade", "sparkling water", "hot cocoa",
        )),
        ("home city", ("Lisbon", "Osaka", "Denver", "Nairobi", "Tallinn", "Porto", "Hanoi")),
        ("manager name", (
            "Alice Chen", "Ravi Patel", "Maria Lopez", "Tom Becker", "Yuki Sato", "Omar Haddad",
        )),
        ("laptop model", (
            "ThinkPad X1", "MacBook Air", "Dell XPS 13", "Surface Laptop", "Framework 16",
            "HP Spectre",
        )),
    ),
    "zh": (
        ("工位", ("3楼", "7楼", "12楼", "15楼", "20楼", "28楼", "34楼")),
        ("会议时间", ("上午9点", "下午2点", "下午4点半", "上午11点", "下午3点15分", "晚上6点")),
        ("团队人数", ("4人", "6人", "9人", "11人", "17人", "23人")),
        ("项目代号", ("猎鹰", "兰花", "花岗岩", "星云", "红隼", "玄武")),
        ("常喝的饮料", ("绿茶", "美式咖啡", "燕麦拿铁", "柠檬水", "气泡水", "热可可")),
        ("居住城市", ("杭州", "成都", "大阪", "里斯本", "西雅图", "苏州")),
        ("经理", ("王丽", "陈强", "李娜", "赵敏", "刘洋", "周杰")),
        ("笔记本型号", (
            "ThinkPad X1", "MacBook Air", "戴尔XPS13", "Surface Laptop", "小新Pro14", "华为MateBook",
        )),
    ),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Phrasebook:
    """Per-language templates; every user template must parse exactly."""

    first: str
    updates: tuple[str, ...]
    current_question: str
    history_question: str
    acks: tuple[str, ...]
    small_talk: tuple[tuple[str, str], ...]


_PHRASEBOOKS: dict[str, _Phrasebook] = {
    "en": _Phrasebook(
        first="My {slot} is {value}.",
        updates=(
            "My {slot} changed to {value}.",
            "My {slot} is now {value}.",
            "My {slot} has changed to {value}.",
        ),
        current_question="What is my {slot} now?",
        history_question="What was my {slot} before it changed to {new}?",
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
        first="我的{slot}是{value}。",
        updates=(
            "我的{slot}改成了{value}。",
            "我的{slot}换成了{value}。",
            "我的{slot}现在是{value}。",
        ),
        current_question="我现在的{slot}是什么？",
        history_question="我的{slot}在改成{new}之前是什么？",
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


@dataclass(frozen=True, slots=True, kw_only=True)
class _SlotPlan:
    """Values a slot takes over the episode, first statement included."""

    slot: str
    values: tuple[str, ...]


def _validate(n_episodes: int, turns: int, langs: tuple[str, ...],
              updates_per_slot: tuple[int, int], slots_per_episode: int) -> None:
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
    smallest_table = min(len(SLOT_TABLES[lang]) for lang in langs)
    if not 1 <= slots_per_episode <= smallest_table:
        raise ValueError(
            f"slots_per_episode must be in 1..{smallest_table}, got {slots_per_episode}"
        )


def _fact_budget(turns: int) -> int:
    min_distractors = (turns * _MIN_DISTRACTOR_SHARE_TENTHS + 9) // 10
    return turns - min_distractors


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


def _next_value(rng: random.Random, pool: tuple[str, ...], history: list[str]) -> str:
    current = history[-1]
    if len(history) >= 2 and rng.random() < _REVERT_PROBABILITY:
        return history[-2]
    unused = [value for value in pool if value not in history]
    return rng.choice(unused or [value for value in pool if value != current])


def _plan_slots(rng: random.Random, lang: str, turns: int,
                updates_per_slot: tuple[int, int], slots_per_episode: int) -> list[_SlotPlan]:
    table = SLOT_TABLES[lang]
    chosen = rng.sample(range(len(table)), slots_per_episode)
    counts = _fit_updates([rng.randint(*updates_per_slot) for _ in chosen], _fact_budget(turns))
    plans = []
    for table_index, count in zip(chosen, counts):
        slot, pool = table[table_index]
        history = [rng.choice(pool)]
        for _ in range(count):
            history.append(_next_value(rng, pool, history))
        plans.append(_SlotPlan(slot=slot, values=tuple(history)))
    return plans


def _schedule(rng: random.Random, plans: list[_SlotPlan], turns: int) -> dict[int, tuple[int, int]]:
    """Map turn index -> (plan index, value index), keeping each slot in order."""
    labels = [index for index, plan in enumerate(plans) for _ in plan.values]
    rng.shuffle(labels)
    positions = sorted(rng.sample(range(turns), len(labels)))
    seen: Counter[int] = Counter()
    schedule = {}
    for position, label in zip(positions, labels):
        schedule[position] = (label, seen[label])
        seen[label] += 1
    return schedule


def _fact_turn(
    rng: random.Random, book: _Phrasebook, plan: _SlotPlan, step: int
) -> tuple[str, str]:
    template = book.first if step == 0 else rng.choice(book.updates)
    return template.format(slot=plan.slot, value=plan.values[step]), rng.choice(book.acks)


def _timestamps(rng: random.Random, turns: int) -> list[str]:
    moment = _BASE_TIME + timedelta(days=rng.randrange(365), minutes=rng.randrange(600))
    stamps = []
    for _ in range(turns):
        stamps.append(moment.isoformat())
        moment += timedelta(minutes=rng.randint(1, 15))
    return stamps


def _build_turns(rng: random.Random, book: _Phrasebook, plans: list[_SlotPlan],
                 schedule: dict[int, tuple[int, int]], turns: int) -> tuple[Turn, ...]:
    stamps = _timestamps(rng, turns)
    built = []
    for index in range(turns):
        if index in schedule:
            plan_index, step = schedule[index]
            user, agent = _fact_turn(rng, book, plans[plan_index], step)
        else:
            user, agent = rng.choice(book.small_talk)
        built.append(Turn(user=user, agent=agent, occurred_at=stamps[index]))
    return tuple(built)


def _facts(plans: list[_SlotPlan], schedule: dict[int, tuple[int, int]]) -> _Facts:
    history: dict[int, list[tuple[int, str]]] = {index: [] for index in range(len(plans))}
    for turn in sorted(schedule):
        plan_index, step = schedule[turn]
        history[plan_index].append((turn, plans[plan_index].values[step]))
    ordered = sorted(history.items(), key=lambda item: item[1][0][0])
    return tuple((plans[index].slot, tuple(entries)) for index, entries in ordered)


def _slot_questions(
    book: _Phrasebook, slot: str, values: tuple[str, ...]
) -> list[tuple[str, str, str]]:
    """(type, question, answer) for one slot; ambiguous history probes are skipped."""
    questions = [("current_fact", book.current_question.format(slot=slot), values[-1])]
    targets = Counter(values[1:])
    for before, after in zip(values, values[1:]):
        # "before it changed to X" has two answers if X was reached twice.
        if targets[after] == 1:
            question = book.history_question.format(slot=slot, new=after)
            questions.append(("history_fact", question, before))
    return questions


def _probes(episode_id: str, book: _Phrasebook, facts: _Facts) -> tuple[Probe, ...]:
    rows = [
        (kind, question, answer, slot)
        for slot, history in facts
        for kind, question, answer in _slot_questions(book, slot, tuple(v for _, v in history))
    ]
    return tuple(
        Probe(probe_id=f"{episode_id}:p{index}", type=kind, question=question,
              answer=answer, fact_key=slot)
        for index, (kind, question, answer, slot) in enumerate(rows)
    )


def _episode(rng: random.Random, index: int, lang: str, turns: int,
             updates_per_slot: tuple[int, int], slots_per_episode: int) -> Episode:
    book = _PHRASEBOOKS[lang]
    episode_id = f"syn-{lang}-{index:03d}"
    plans = _plan_slots(rng, lang, turns, updates_per_slot, slots_per_episode)
    schedule = _schedule(rng, plans, turns)
    facts = _facts(plans, schedule)
    return Episode(
        episode_id=episode_id,
        turns=_build_turns(rng, book, plans, schedule, turns),
        facts=facts,
        probes=_probes(episode_id, book, facts),
        lang=lang,
    )


def generate_synthetic(
    *,
    n_episodes: int = 6,
    turns: int = 24,
    seed: int = 7,
    langs: tuple[str, ...] = ("en", "zh"),
    updates_per_slot: tuple[int, int] = (1, 2),
    slots_per_episode: int = 4,
) -> Dataset:
    """Generate ``n_episodes`` episodes of ``turns`` turns, alternating ``langs``.

    At least 30% of turns are small talk; when ``turns`` is too small for the
    requested facts, update counts shrink first and then the number of slots.
    """
    _validate(n_episodes, turns, langs, updates_per_slot, slots_per_episode)
    rng = random.Random(seed)
    episodes = tuple(
        _episode(rng, index, langs[index % len(langs)], turns, updates_per_slot, slots_per_episode)
        for index in range(n_episodes)
    )
    return Dataset(
        name="synthetic",
        source=f"synthetic(seed={seed},n={n_episodes},turns={turns})",
        episodes=episodes,
    )
