"""Chinese constructions of the dev17 round: a spoken request run on after the value, an aside in
brackets after it, and a question-and-answer form.

Written for the grammar's parts; each rule has a control where it must not fire.
"""

from __future__ import annotations

import pytest

from ledgermem.gate.lexicon import detect_facts


def _facts(text: str) -> list[tuple[str, str]]:
    return [(m.slot, m.value) for m in detect_facts(text)]


READ = [
    # a voice message with no punctuation: the request runs on after the value
    ("我的车牌号是浙A12345你帮我记住哈", "车牌号", "浙A12345"),
    ("我会员号是88990就这样", "会员号", "88990"),
    ("我的门禁卡号是K-3301你同步一下", "门禁卡号", "K-3301"),
    # an aside in brackets after the value
    ("我的学号是20231188（千万记住）", "学号", "20231188"),
    ("我的储物柜换成了B-12（总算）", "储物柜", "B-12"),
    # an adverb of the aside between the slot and its change: "也顺便换了"
    ("搬完家了。门禁卡号也顺手换了，现在是K-3301。", "门禁卡号", "K-3301"),
    # the verb before the slot, 了 after it
    ("我换储物柜了：B-12", "储物柜", "B-12"),
    # a change dated from today
    ("即日起车位就是B2-015了", "车位", "B2-015"),
    # a relative named as the value
    ("我的紧急联系人是我爸陈国栋", "紧急联系人", "我爸陈国栋"),
    # how the value was found, between the slot named and its value
    ("说到车位：我刚核对过，是B2-015。", "车位", "B2-015"),
    # a statement, then a closing offer asked as a question
    ("好的，车位是B2-015，您还需要其他信息吗？", "车位", "B2-015"),
    # a slot with 起 or 后 inside it standing before 我 ("起床" is no "from … on", "税后" no "after")
    ("午休时间我用的是12点半", "午休时间", "12点半"),
    ("税后年薪我填的是30万", "税后年薪", "30万"),
    # a value-first clause whose value is a relative: the relative is no slot
    ("我的紧急联系人填的是我姐陈芳", "紧急联系人", "我姐陈芳"),
    # a field's line whose value is a relative with a name
    ("紧急联系人：我姐陈芳", "紧急联系人", "我姐陈芳"),
    # a question-and-answer form
    ("问：常住城市\n答：苏州", "常住城市", "苏州"),
    ("问题：我的血型\n回答：O型", "血型", "O型"),
]


@pytest.mark.parametrize(("text", "slot", "value"), READ)
def test_reads(text: str, slot: str, value: str) -> None:
    assert (slot, value) in _facts(text)


def test_bracketed_part_of_value_is_kept() -> None:
    # a bracket that belongs to the value, not an aside
    assert _facts("我的家庭医生是陈医生（社区）") == [("家庭医生", "陈医生（社区）")]


def test_spoken_tail_only_after_value() -> None:
    # a hypothetical wish keeps producing nothing
    assert _facts("要是我的会员号是88990就好了") == []


QUIET = [
    "答：苏州",  # an answer with no question before it
    "问：他的常住城市\n答：苏州",  # someone else's field
    "问：常住城市\n答：不知道",  # no value given
    "我朋友的车牌号是浙A12345你帮我记住哈",  # someone else's value
    "我要换储物柜了",  # a plan, no value
    "下个月起我的车位就是B2-015了",  # dated from a day to come: a plan
    "明天开始车位就是B2-015了",
    "关于车位：我查了一下。",  # the value never given
    "关于我同事的车位：我查了一下，是B2-015。",  # someone else's
    "车位是多少，还需要别的吗？",  # a real question before the offer
    "从那以后我用的是12点半",  # a time before 我, not a slot
    "群里有人说自己的紧急联系人是我姐陈芳",  # reported speech about someone else
    "紧急联系人：我姐的",  # no name: not a value
    "我同事的紧急联系人：我姐陈芳",  # someone else's field
    "我的紧急联系人是我爸的",  # a relative with no name is not a value
    "我的紧急联系人是我哥说的那个",
]


@pytest.mark.parametrize("text", QUIET)
def test_quiet(text: str) -> None:
    assert _facts(text) == []
