"""Tests for the lexical fact detector in gate.lexicon."""

from __future__ import annotations

import pytest

from ledgermem.gate.lexicon import FactMention, detect_facts, is_question, normalise_slot


def _fact(slot: str, value: str, change: bool = False) -> FactMention:
    return FactMention(slot=slot, value=value, change=change)


EN_POSITIVES = [
    ("My office floor is 7F.", _fact("office floor", "7F")),
    ("my Home City is Lisbon", _fact("home city", "Lisbon")),
    ("My office floor is now 12F.", _fact("office floor", "12F", True)),
    ("My meeting time changed to 4:30pm.", _fact("meeting time", "4:30pm", True)),
    ("My meeting time has changed to 2pm!", _fact("meeting time", "2pm", True)),
    ("My laptop model was changed to Dell XPS 13.", _fact("laptop model", "Dell XPS 13", True)),
    ("The project codename changed to Orchid.", _fact("project codename", "Orchid", True)),
    ("team size changed to 9 people", _fact("team size", "9 people", True)),
    ("team size = 8 people", _fact("team size", "8 people")),
    ("build_id=42", _fact("build_id", "42")),
    ("I moved my meeting to Friday.", _fact("meeting", "Friday", True)),
    ("Remember that my manager name is Alice Chen.", _fact("manager name", "Alice Chen")),
    ("my email is bob@example.com.", _fact("email", "bob@example.com")),
    ("My salary is 1,000 dollars", _fact("salary", "1,000 dollars")),
    ("My office floor changed to 7F, can you note that?", _fact("office floor", "7F", True)),
]

ZH_POSITIVES = [
    ("我的工位是7楼。", _fact("工位", "7楼")),
    ("我的常喝的饮料是绿茶", _fact("常喝的饮料", "绿茶")),
    ("我的工位现在是12楼。", _fact("工位", "12楼", True)),
    ("我的工位改成了7楼。", _fact("工位", "7楼", True)),
    ("我的工位改成7楼了。", _fact("工位", "7楼", True)),
    ("会议时间改到下午3点", _fact("会议时间", "下午3点", True)),
    ("会议时间改到了下午3点！", _fact("会议时间", "下午3点", True)),
    ("工位换成3楼", _fact("工位", "3楼", True)),
    ("我的笔记本型号换成了MacBook Air。", _fact("笔记本型号", "MacBook Air", True)),
    ("我把工位换成了7楼。", _fact("工位", "7楼", True)),
    ("工位=7楼", _fact("工位", "7楼")),
    ("请记住我的经理是王丽。", _fact("经理", "王丽")),
]


@pytest.mark.parametrize(("text", "expected"), EN_POSITIVES + ZH_POSITIVES)
def test_single_fact_is_detected_exactly(text: str, expected: FactMention) -> None:
    assert detect_facts(text) == (expected,)


# Constructions of plain English the grammar reads (our own slot and values, not a corpus's): a topic named
# in one clause and its value in the next, a form's field and value labels, courtesy formulas around a request,
# a value before the slot it belongs to, a change said as a swap.
EN_CONSTRUCTIONS = [
    ('It is B14, my desk number, in case you ever need it.', 'desk number', 'B14'),
    ('can u save this: B14. thats my desk number', 'desk number', 'B14'),
    ('bro i keep forgetting my desk number. its B14. pls remember it for me', 'desk number', 'B14'),
    ('Update after nights: desk number is now B14.', 'desk number', 'B14'),
    ('FYI B14 is my new desk number', 'desk number', 'B14'),
    ('Had to swap my desk number over to B14 yesterday.', 'desk number', 'B14'),
    ("They switched my desk number on me. It's B14 as of this morning.", 'desk number', 'B14'),
    ('my desk number == B14, persist that pls', 'desk number', 'B14'),
    ('For me the desk number is B14.', 'desk number', 'B14'),
    ('Remember B14 as my desk number yeah', 'desk number', 'B14'),
    ('Hello, I want to tell you my desk number. It is B14.', 'desk number', 'B14'),
    ('the desk number I currently have is B14, fyi', 'desk number', 'B14'),
    ('What my desk number is, is B14.', 'desk number', 'B14'),
    ('re: my desk number — B14', 'desk number', 'B14'),
    ("Mine's B14. The desk number, I mean.", 'desk number', 'B14'),
    ('mine is B14 (the desk number)', 'desk number', 'B14'),
    ("Oh and the desk number — mine's B14!", 'desk number', 'B14'),
    ("B14 is the desk number I've got", 'desk number', 'B14'),
    ('The desk number you should have on file for me is B14.', 'desk number', 'B14'),
    ("It's B14 that I have as my desk number", 'desk number', 'B14'),
    ('About the desk number you asked for — B14', 'desk number', 'B14'),
    ('You wanted my desk number. Yep, B14.', 'desk number', 'B14'),
    ('B14 instead of A7 for my desk number now', 'desk number', 'B14'),
    ('Finished switching my desk number to B14.', 'desk number', 'B14'),
    ('so now my desk number shows as B14', 'desk number', 'B14'),
    ('my desk number: no longer A7 but B14', 'desk number', 'B14'),
    ("You had my desk number as A7? It's B14 now.", 'desk number', 'B14'),
    ('Dropped A7 — B14 is my desk number now', 'desk number', 'B14'),
    ("I've been using B14 as my desk number for a while now.", 'desk number', 'B14'),
    ('Could you save B14 as my desk number in your notes?', 'desk number', 'B14'),
    ('Please use my desk number (B14) when you book the room.', 'desk number', 'B14'),
    ('For the form: my desk number, which is B14.', 'desk number', 'B14'),
    ("B14's what I use for my desk number", 'desk number', 'B14'),
    ('B14 has replaced A7 as my desk number.', 'desk number', 'B14'),
    ("My desk number used to be A7; I've replaced it with B14.", 'desk number', 'B14'),
    ("I'm not using A7 for my desk number anymore — it's B14.", 'desk number', 'B14'),
    ('From today, my desk number will be B14.', 'desk number', 'B14'),
    ("I've got a new desk number: B14.", 'desk number', 'B14'),
    ('Can you change my desk number in your notes to B14?', 'desk number', 'B14'),
    ('Decided on B14 for my desk number after all.', 'desk number', 'B14'),
    ('Changed my mind on my desk number — B14 it is.', 'desk number', 'B14'),
    ('I think my desk number is B14.', 'desk number', 'B14'),
    ("B14. That's the desk number I've got.", 'desk number', 'B14'),
    ("Swapped A7 out for B14 — that's my desk number now.", 'desk number', 'B14'),
    ("My desk number is no longer A7; it has been changed to B14.", "desk number", "B14"),
    ("my desk number's been switched to B14, what a faff", "desk number", "B14"),
    ("last night my desk number got changed over to B14", "desk number", "B14"),
    ("uh my desk number yeah it's B14", "desk number", "B14"),
    ("forgot to answer ur q abt my desk number lol its B14", "desk number", "B14"),
    ("new desk number!! it is B14", "desk number", "B14"),
    ("Could you please replace my desk number currently on file with B14? Many thanks.", "desk number", "B14"),
    ("desk number — previous: A7; new: B14", "desk number", "B14"),
    ("I am informing that my desk number is become B14 from Monday.", "desk number", "B14"),
    ("desk number? Simple — B14!", "desk number", "B14"),
    ("Re: desk number — mine is B14", "desk number", "B14"),
    ("Everyone in the office was comparing their desk number today. Mine is B14.", "desk number", "B14"),
    ("desk number: no longer A7, it is B14 now", "desk number", "B14"),
    ("my desk number is no longer A7. B14.", "desk number", "B14"),
    ("A7 was my desk number until last Friday. Since then, B14.", "desk number", "B14"),
    ("B14: that is what my desk number is", "desk number", "B14"),
    ("*B14 — my desk number i mean, typed it wrong", "desk number", "B14"),
    ("my desk number: swapped A7 for B14", "desk number", "B14"),
    ("switched my desk number over from A7 to B14 yesterday", "desk number", "B14"),
    ("I should be grateful if you would record my desk number as B14.", "desk number", "B14"),
    ("Henceforth, please treat B14 as my desk number.", "desk number", "B14"),
    ("the desk number I stick to is B14", "desk number", "B14"),
    ("they've only gone and changed my desk number to B14", "desk number", "B14"),
    ("Field: desk number | New value: B14 | Reason: office move", "desk number", "B14"),
    ("desk number ..... B14", "desk number", "B14"),
    ("ditched my old desk number; the new one is B14", "desk number", "B14"),
    ("I had my desk number wrong the whole time. It is B14.", "desk number", "B14"),
    ("> what is your desk number?\nB14", "desk number", "B14"),
    ("My desk number (B14) is the one to use for anything of mine.", "desk number", "B14"),
    ("should you need my desk number for anything, it is B14", "desk number", "B14"),
    ("While I was sorting papers I checked: my desk number is B14.", "desk number", "B14"),
    ("| desk number | B14 |", "desk number", "B14"),
    ("my desk number (in case you need it) is B14", "desk number", "B14"),
    ("the desk number on my account is B14", "desk number", "B14"),
    ("B14: my desk number", "desk number", "B14"),
    ("my dog walker is Kenji from next door", "dog walker", "Kenji from next door"),
    ("A7 isn't my desk number anymore — it's B14", "desk number", "B14"),
    ("Had to change my desk number today. New one is B14.", "desk number", "B14"),
    ("that'd be B14 (my desk number)", "desk number", "B14"),
    ("okay new desk number is B14 comma please save that", "desk number", "B14"),
    ("I would be most grateful if you could make a note that my desk number is B14.", "desk number", "B14"),
    ("my desk number — the one I use for work — is B14", "desk number", "B14"),
    ("Since last week my desk number become B14.", "desk number", "B14"),
    ("I ended up switching my desk number to B14 last spring.", "desk number", "B14"),
    ("Back in March I finally changed my desk number from A7 to B14.", "desk number", "B14"),
    ("A7 → B14 for my desk number", "desk number", "B14"),
    ("my desk number went A7 -> B14", "desk number", "B14"),
    ("correction: I mistyped my desk number. It should be B14.", "desk number", "B14"),
    ("It's B14, my desk number.", "desk number", "B14"),
]


# Constructions of plain Chinese the grammar reads (slots and values of our own, not a corpus's):
# duration and formal adverbs between the slot and the copula, value first, a form's two labels,
# Cantonese, a request, a slot named by others then "mine", a correction, "use/pick" as the copula.
ZH_CONSTRUCTIONS = [
    ('交班前说一句：工位=7楼', '工位', '7楼'),
    ('记下：7楼，我的工位。', '工位', '7楼'),
    ('我老记不住自己的工位，是7楼，你帮我记着呗', '工位', '7楼'),
    ('我的工位 == 7楼，帮我记一下', '工位', '7楼'),
    ('你好，我想告诉你我的工位。它是7楼。', '工位', '7楼'),
    ('夜班后更新一下：工位现在是7楼。', '工位', '7楼'),
    ('公司给我把工位换了，今天早上起是7楼。', '工位', '7楼'),
    ('我这边工位是7楼。', '工位', '7楼'),
    ('我工位用的就是7楼', '工位', '7楼'),
    ('这段时间我的工位一直是7楼。', '工位', '7楼'),
    ('回你刚才问的工位：7楼。', '工位', '7楼'),
    ('所以现在我的工位显示的是7楼', '工位', '7楼'),
    ('邮件到了，7楼正式成了我的工位。', '工位', '7楼'),
    ('我换了个新工位，7楼', '工位', '7楼'),
    ('我有新工位了，是7楼！', '工位', '7楼'),
    ('工位把3楼换成7楼了', '工位', '7楼'),
    ('关于工位：现在是7楼，不是3楼。', '工位', '7楼'),
    ('我的手表是华为 Watch GT 4', '手表', '华为 Watch GT 4'),
    ('工位这栏我填的7楼。', '工位', '7楼'),
    ('我报一下我的工位：7楼', '工位', '7楼'),
    ('兹告知，本人目前工位为7楼。', '工位', '7楼'),
    ('关于工位一项，本人所用为7楼。', '工位', '7楼'),
    ('我的工位，你就把它记为7楼吧。', '工位', '7楼'),
    ('麻烦把7楼记作我的工位。', '工位', '7楼'),
    ('回答你的问题：工位是7楼。', '工位', '7楼'),
    ('工位已经被我换成7楼了。', '工位', '7楼'),
    ('之前的工位被换掉了，现在是7楼。', '工位', '7楼'),
    ('我换了工位，现在是7楼。', '工位', '7楼'),
    ('今后工位一律按7楼来。', '工位', '7楼'),
    ('上个月起工位就改成7楼了。', '工位', '7楼'),
    ('更新一下：本人工位现为7楼。', '工位', '7楼'),
    ('结果工位还是改回7楼了。', '工位', '7楼'),
    ('工位的话，我是7楼呢。', '工位', '7楼'),
    ("我的工位这三年一直是7楼。", "工位", "7楼"),
    ("经核实，本人的车牌号确为沪A12345。", "车牌号", "沪A12345"),
    ("谨此说明：我的邮箱乃leo@x.com", "邮箱", "leo@x.com"),
    ("由于调岗，我的工位相应调整为9楼，请更新记录。", "工位", "9楼"),
    ("我的工位已经更新了，更新后为9楼", "工位", "9楼"),
    ("勘误：本人工位应更正为9楼。", "工位", "9楼"),
    ("本月事项：（一）本人工位调整为9楼；（二）请删除旧提醒。", "工位", "9楼"),
    ("我昵称选的小鱼，挺好记", "昵称", "小鱼"),
    ("小鱼是我常用的昵称", "昵称", "小鱼"),
    ("小鱼，我昵称用的就是它", "昵称", "小鱼"),
    ("小鱼！对，就是我的昵称", "昵称", "小鱼"),
    ("请将9楼登记为本人的工位。", "工位", "9楼"),
    ("我一直拿小鱼当昵称", "昵称", "小鱼"),
    ("昵称弃了大鱼，改用小鱼", "昵称", "小鱼"),
    ("兜兜转转，昵称又回到小鱼了", "昵称", "小鱼"),
    ("上周我把昵称从大鱼换到了小鱼", "昵称", "小鱼"),
    ("已改 昵称现在小鱼", "昵称", "小鱼"),
    ("项目：昵称；内容：小鱼；状态：已确认", "昵称", "小鱼"),
    ("朋友们的昵称五花八门，我的是小鱼", "昵称", "小鱼"),
    ("我那个昵称就小鱼嘛", "昵称", "小鱼"),
    ("昵称哦 小鱼呀 咋了", "昵称", "小鱼"),
    ("您好：我的工位为9楼（详见附件），请存档备查。", "工位", "9楼"),
    ("可以帮我把工位从3楼改成7楼吗？谢谢", "工位", "7楼"),
    ("工位最后落在7楼上", "工位", "7楼"),
    ("我和我姐工位不一样，我是7楼", "工位", "7楼"),
    ("我之前给你的工位是错的，对的是7楼", "工位", "7楼"),
    ("之前提过我工位是3楼对吧，现在改7楼了", "工位", "7楼"),
    ("我個工位係7樓啊，唔好搞錯", "工位", "7樓"),
    ("帮我记低：工位係7楼", "工位", "7楼"),
    ("7楼——我的工位", "工位", "7楼"),
    ("3楼不再是我的工位了，换成7楼了", "工位", "7楼"),
    ("我的工位前几天改成7楼了喔", "工位", "7楼"),
    ("3楼→7楼（我的工位）", "工位", "7楼"),
    ("最近事情好多，而且我的工位也改成7楼了。", "工位", "7楼"),
    ("我室友Apple ID：leo@me.com。我的Apple ID是kai@me.com", "apple id", "kai@me.com"),
    ("我的工位（就是平时用的那个）是7楼", "工位", "7楼"),
    ("我地工位是7楼哈", "工位", "7楼"),
    ("[捂脸]我的工位又改了，现在是7楼", "工位", "7楼"),
    ("我的工位已经改了，原来是3楼，现在是7楼", "工位", "7楼"),
    ("我的停车证是东门 P-22喔", "停车证", "东门 P-22"),
    ("本人工位现变更为7楼，原3楼不再使用。", "工位", "7楼"),
]


@pytest.mark.parametrize(("text", "slot", "value"), EN_CONSTRUCTIONS + ZH_CONSTRUCTIONS)
def test_constructions_are_read_as_one_fact(text: str, slot: str, value: str) -> None:
    assert [(m.slot, m.value) for m in detect_facts(text)] == [(slot, value)]


NEGATIVES = [
    '要是能自己选，我的工位就定7楼。',
    '不对，7楼不是我的工位，从来都不是。',
    '2019年有一阵子我的工位是7楼，早就不是了。',
    '在以前那个单位，7楼是我的工位。',
    "It's definitely not B14, my desk number.",
    '以后我的工位是7楼',
    '明年我的工位是7楼',
    '等搬完以后我的工位是7楼',
    '工位把3楼换成7楼的话会怎样',
    '领导把他的工位换成7楼了',
    '老王把工位从3楼换成了7楼',
    '我同事工位用的就是7楼',
    '要是工位显示的是7楼就好了',
    'the desk number my sister has is B14',
    'B14 is the desk number I wanted',
    'mine would be B14 (the desk number)',
    "It's B14 that my husband has as his desk number",
    "I'd rather have B14 instead of A7 for my desk number",
    "I haven't finished switching my desk number to B14 yet",
    "my desk number should show as B14 but doesn't",
    '老早以前我工位是7楼，都是过去的事了。',
    'the car my sister has is a Golf',
    "Put B14 as my husband's desk number, please.",
    'Starting next Monday, my desk number will be B14.',
    'my mum thinks my desk number is B14',
    '我妈工位用的是7楼，不是我的。',
    '我的工位曾经是7楼，早就不是了。',
    '刚工作那年我工位是7楼。',
    '如果能选，我的工位想用7楼。',
    '很多年前我工位用过7楼。',
    "What is my office floor?",
    "What is my office floor now?",
    "What was my office floor before it changed to 7F?",
    "Has my office floor changed to 7F?",
    "Is my office floor 7F?",
    "My office floor is 7F, right?",
    "My office floor is what?",
    "my meeting time is which",
    "The weather is lovely today.",
    "My day is going well.",
    "My point is that it works.",
    "If my office floor is 7F, I will take the stairs.",
    "Before it changed to 7F, we sat downstairs.",
    "My office floor is not 7F.",
    "a == b",
    "Thanks, that helps a lot!",
    "我的工位是什么？",
    "我现在的工位是什么？",
    "我的工位在改成7楼之前是什么？",
    "我的工位改成7楼了吗？",
    "我的工位是不是改成7楼了？",
    "我的工位是多少",
    "我的工位是哪里",
    "我的工位不是7楼。",
    "我的意思是明天再说。",
    "你把工位改成7楼吧。",
    "如果工位改成7楼就好了。",
    "今天天气不错。",
    "好的，记住了。",
    "no no, my desk number is not B14, somebody entered it wrong",
    "Reason: office move",
    "my boss's desk number is B14",
    "new phone! it is great",
    "Should you need anything else, let me know.",
    "我的手机就坏了。",
    "我室友用的昵称是小鱼",
    "工位这块儿，我表哥是7楼",
    "昵称改小鱼那事没成，别记",
    "我打算拿小鱼当昵称",
    "工位现在很挤",
    "好的。这是我的工位",
    "好哦 小鱼呀",
    "读书的时候我的工位是3楼",
    "表格里的示例工位是7楼",
    "App上显示我的工位是9楼，明显是bug",
    "my roommate's notice period is two weeks",
    "the desk number for my dad is B14",
    "my desk number? def not B14 lmao",
    "Melanie: My kids and I went camping at the beach.",
    "We moved the boat to Porto last week.",
    "1. my address: unchanged",
    "我读大学的时候工位是3楼",
    "比如工位可以填7楼这样的",
    "",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_non_facts_yield_nothing(text: str) -> None:
    assert detect_facts(text) == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "My office floor is 7F and my favorite drink is green tea.",
            (_fact("office floor", "7F"), _fact("favorite drink", "green tea")),
        ),
        (
            "My manager name is Alice Chen; my team size is now 6 people.",
            (_fact("manager name", "Alice Chen"), _fact("team size", "6 people", True)),
        ),
        (
            "My home city is Porto. What is yours? I moved my desk to 3F.",
            (_fact("home city", "Porto"), _fact("desk", "3F", True)),
        ),
        (
            "我的工位是7楼，会议时间改成了下午2点。我的经理是陈强",
            (_fact("工位", "7楼"), _fact("会议时间", "下午2点", True), _fact("经理", "陈强")),
        ),
        (
            "x=1, y=2\nz = 3",
            (_fact("x", "1"), _fact("y", "2"), _fact("z", "3")),
        ),
    ],
)
def test_multiple_facts_in_order_of_appearance(text: str, expected: tuple[FactMention, ...]) -> None:
    assert detect_facts(text) == expected


def test_identical_facts_are_deduplicated_keeping_first() -> None:
    text = "My office floor is 7F. My office floor is now 7F. My office floor is 9F."
    assert detect_facts(text) == (_fact("office floor", "7F"), _fact("office floor", "9F"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What is it", True),
        ("Which one", True),
        ("Do you know", True),
        ("can you help", True),
        ("It is 7F?", True),
        ("真的？", True),
        ("我的工位是什么", True),
        ("你好吗", True),
        ("多少钱", True),
        ("几点了", True),
        ("你在哪", True),
        ("My office floor is 7F.", False),
        ("Isabella sends her regards.", False),
        ("我的工位是7楼。", False),
        ("", False),
    ],
)
def test_is_question(text: str, expected: bool) -> None:
    assert is_question(text) is expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  My Office  Floor ", "office floor"),
        ("the meeting time", "meeting time"),
        ("my the team size", "team size"),
        (" 工位 ", "工位"),
        ("我的工位", "工位"),
    ],
)
def test_normalise_slot(raw: str, expected: str) -> None:
    assert normalise_slot(raw) == expected
