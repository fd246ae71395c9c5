"""The fact grammar on the shapes the issue names, and what it must not take for the user's fact.

These sentences are written here, for the grammar's parts (openers, change
verbs, corrections, "no longer", topics and anaphors, mixed scripts,
full-width punctuation, units); the phrasing corpus's held-out half is
measured by ``python -m benchmarks.phrasing``, never asserted here.
"""

from __future__ import annotations

import json

import pytest

from ledgermem.datasets.phrasing import PhrasingError, load_corpus
from ledgermem.evaluation.phrasing import measure_detector, measure_questions
from ledgermem.gate.lexicon import FactMention, QuestionIntent, detect_facts, parse_question


def _f(slot: str, value: str, change: bool = False) -> FactMention:
    return FactMention(slot=slot, value=value, change=change)


STATEMENTS = [
    ("fyi my gym is Planet Fitness", _f("gym", "Planet Fitness")),
    ("my gym is like Anytime Fitness", _f("gym", "Anytime Fitness")),
    ("we switched my desk over from B2 to C7", _f("desk", "C7", True)),
    ("I changed my parking spot to P3 over the weekend", _f("parking spot", "P3", True)),
    ("my tariff is Octopus Go from this month", _f("tariff", "Octopus Go")),
    ("my cost centre has been revised to CC-410 w.e.f. today", _f("cost centre", "CC-410", True)),
    ("as of today my rent is 1800 dollars", _f("rent", "1800 dollars")),
    ("my shoe size got changed to 44", _f("shoe size", "44", True)),
    ("Badge number: 7731", _f("badge number", "7731")),
    ("these days my commute is 40 minutes", _f("commute", "40 minutes")),
    ("my locker is no longer C12, it's D4 now", _f("locker", "D4", True)),
    ("My locker changed — it's D4 now.", _f("locker", "D4", True)),
    ("Nope, my badge number is 7731, not 7713.", _f("badge number", "7731")),
    ("I've updated my username to cat_lover_9", _f("username", "cat_lover_9", True)),
    ("Update — my height is 182 cm", _f("height", "182 cm")),
    ("my home airport isn't LHR anymore, it's LGW", _f("home airport", "LGW", True)),
    ("Dr. Okafor is my dentist now", _f("dentist", "Dr. Okafor")),
    ("my 工位 is 7楼", _f("工位", "7楼")),
    ("我的工位换了，现在是9楼", _f("工位", "9楼", True)),
    ("我工位现在是9楼", _f("工位", "9楼", True)),
    ("我的office floor是3rd", _f("office floor", "3rd")),
    ("对了，我的邮箱改成了a@b.com", _f("邮箱", "a@b.com", True)),
    ("我房间号从305换到了412", _f("房间号", "412", True)),
    ("我的健身房不再是A馆了，现在是B馆", _f("健身房", "B馆", True)),
    ("以前我的工位是3楼，现在是7楼", _f("工位", "7楼", True)),
    ("我的月预算是¥8,000。", _f("月预算", "¥8,000")),
    ("我的WiFi密码是qwerty!9", _f("WiFi密码", "qwerty!9")),
    ("工位：K2-33", _f("工位", "K2-33")),
]


@pytest.mark.parametrize(("text", "expected"), STATEMENTS)
def test_statements_and_updates(text: str, expected: FactMention) -> None:
    assert detect_facts(text) == (expected,)


NOT_THE_USERS = [
    "my sister's locker is C12",             # someone else's
    "Tom's badge number is 7731",
    "If my rent were 1000 dollars I'd be rich",  # hypothetical
    "I wish my commute was 10 minutes",
    "my rent isn't 1800 dollars",            # negation
    "Dana said her locker is C12",           # reported speech
    "He told me my badge number was 7731",
    "is my locker C12?",                     # a question naming a value
    "I might change my username to cat_lover_9",  # a plan
    "I don't think my locker is C12",
    "my old locker was C12",                 # a past value alone
    "我同事的工位是7楼",
    "如果我的工位是7楼就好了",
    "我的工位不是7楼",
    "他说他的工位是7楼",
    "我的工位是7楼吗？",
    "我打算把工位换成7楼",
    "小李的车是特斯拉",
    "顺便说一下，我现在住在上海",             # no slot: an adverb is not a slot
]


@pytest.mark.parametrize("text", NOT_THE_USERS)
def test_what_is_not_the_users_own_fact_is_not_written_as_theirs(text: str) -> None:
    assert detect_facts(text) == ()


@pytest.mark.parametrize(
    ("question", "known", "expected"),
    [
        ("what's my rent at the moment?", {"rent": ["1800 dollars"]}, QuestionIntent(slot="rent", asks="current")),
        ("What was my rent originally?", {"rent": ["1800 dollars"]}, QuestionIntent(slot="rent", asks="original")),
        ("what did I have as my rent before 1800 dollars?", {"rent": ["1800 dollars"]},
         QuestionIntent(slot="rent", asks="before", anchor="1800 dollars")),
        ("what was my rent before it went up to 2000 dollars?", {"rent": ["2100 dollars"]},
         QuestionIntent(slot="rent", asks="before", anchor="2000 dollars")),
        ("what rent did I pay before this one", {"rent": ["1800 dollars"]},
         QuestionIntent(slot="rent", asks="previous")),
        ("我以前的工位是什么？", {"工位": ["7楼"]}, QuestionIntent(slot="工位", asks="previous")),
        ("我的工位改成7楼之前是什么？", {"工位": ["9楼"]}, QuestionIntent(slot="工位", asks="before", anchor="7楼")),
        ("我最早的工位是哪个", {"工位": ["7楼"]}, QuestionIntent(slot="工位", asks="original")),
        ("我工位改7楼之前是哪个来着", {"工位": ["9楼"]}, QuestionIntent(slot="工位", asks="before", anchor="7楼")),
        ("我工位改之前是什么？", {"工位": ["9楼"]}, QuestionIntent(slot="工位", asks="previous")),
        ("我手机号换号之前是什么", {"手机号": ["139"]}, QuestionIntent(slot="手机号", asks="previous")),
        ("在小米平板6之前我的平板是哪个？", {"平板": ["华为平板"]},
         QuestionIntent(slot="平板", asks="before", anchor="小米平板6")),
        ("在所有变更之前，我原始的工位为何？", {"工位": ["9楼"]}, QuestionIntent(slot="工位", asks="original")),
        ("do you still have my old rent somewhere? what was it?", {"rent": ["1800 dollars"]},
         QuestionIntent(slot="rent", asks="previous")),
        ("is my rent still 1800 dollars?", {"rent": ["1800 dollars"]}, QuestionIntent(slot="rent", asks="current")),
        ("Before you book, what's my rent on file?", {"rent": ["1800 dollars"]}, QuestionIntent(slot="rent", asks="current")),
        ("what was my rent before I changed it?", {"rent": ["1800 dollars"]}, QuestionIntent(slot="rent", asks="previous")),
        ("下单之前，你那边记的我的工位是啥？", {"工位": ["7楼"]}, QuestionIntent(slot="工位", asks="current")),
        ("帮我查一下，7楼之前我的工位用的是什么", {"工位": ["9楼"]},
         QuestionIntent(slot="工位", asks="before", anchor="7楼")),
    ],
)
def test_questions_say_what_they_ask(question: str, known: dict[str, list[str]], expected: QuestionIntent) -> None:
    assert parse_question(question, list(known), known) == expected


def test_a_question_about_someone_elses_slot_is_not_about_the_users() -> None:
    assert parse_question("what's my sister's rent?", ["rent"], {"rent": ["1800 dollars"]}) is None
    assert parse_question("我同事的工位是什么？", ["工位"], {"工位": ["7楼"]}) is None


def test_the_held_out_half_says_it_was_written_before_the_rules() -> None:
    for lang in ("en", "zh"):
        heldout, dev = load_corpus(lang, "heldout"), load_corpus(lang, "dev")
        assert {s for s, _ in heldout.slots}.isdisjoint({s for s, _ in dev.slots})
        assert {f.family for f in heldout.frames}.isdisjoint({f.family for f in dev.frames})
        for corpus in (heldout, dev):
            kinds = {f.kind for f in corpus.frames}
            assert kinds == {"statement", "update", "question", "distractor"}
            assert len(corpus.of("statement")) + len(corpus.of("update")) >= 30
            assert len(corpus.of("question")) >= 12
    from importlib import resources
    note = json.loads(resources.files("ledgermem.datasets").joinpath("phrasing", "en.heldout.json").read_text())["note"]
    assert "before" in note.lower() and "tun" in note.lower()


def test_measures_count_every_frame_and_report_misses() -> None:
    score = measure_detector("en", "dev", per_frame=1)
    corpus = load_corpus("en", "dev")
    statements = len(corpus.of("statement")) + len(corpus.of("update"))
    assert score.expected == statements * len(corpus.slots)
    assert score.distractors == len(corpus.of("distractor")) * len(corpus.slots)
    assert 0.0 <= score.recall <= 1.0 and len(score.misses) == score.expected - score.found
    questions = measure_questions("zh", "dev")
    assert questions.asked == len(load_corpus("zh", "dev").of("question")) * len(load_corpus("zh", "dev").slots)


def test_a_malformed_corpus_is_refused_naming_file_and_frame() -> None:
    with pytest.raises(PhrasingError, match="half must be one of"):
        load_corpus("en", "test")
    with pytest.raises(PhrasingError, match="no phrasing corpus fr.dev.json"):
        load_corpus("fr", "dev")


# Chinese constructions, each with a look-alike that must stay silent.
ZH_CONSTRUCTIONS = [
    ("折腾半天，我的工位最后落在了7楼上。", _f("工位", "7楼", True)),       # 落在了V上: the aspect particle is not the value
    ("好几样都变了，比如工位，现在是7楼。", _f("工位", "7楼", True)),       # 比如X: an example names the slot
    ("3楼下岗了，工位换7楼上岗", _f("工位", "7楼", True)),                # 换V上岗: the complement is not the value
    ("我的手机号年初就变成139了", _f("手机号", "139", True)),              # a time word between slot and verb
    ("帮我把资料里的邮箱换成a@b.com", _f("邮箱", "a@b.com", True)),        # 资料里的X: a place, not an owner
    ("既然邮箱已经改成a@b.com，那报名信息也同步一下", _f("邮箱", "a@b.com", True)),  # 既然: said as given
    ("我那个原来是3楼的工位，现在改成7楼了。", _f("工位", "7楼", True)),     # 原来是A的X: a relative clause
    ("我的工位 3楼→7楼 ✔", _f("工位", "7楼", True)),                      # 我的X A→V
    ("K2-33——新工位，记一下", _f("工位", "K2-33", True)),                 # V——新X
    ("我的城市，新加坡", _f("城市", "新加坡")),                             # with a slot open, 新加坡 is a value
    ("新的一周，新的工位。7楼。", _f("工位", "7楼", True)),                 # 一周 is a stretch of time, not a slot
    ("后面会用到：工位是7楼（我自己的，不是团队的）。", _f("工位", "7楼")),    # an aside cut by a comma
    ("工位不得不换了——从今天起是7楼。", _f("工位", "7楼", True)),           # a dash leads on to the value
    ("然后那个工位啊就是已经不是3楼了是7楼你记一下", _f("工位", "7楼", True)),  # 不是A了是V, said in one breath
    ("是呀，7楼就是我个工位", _f("工位", "7楼")),                          # 我个X (Cantonese 我個)
]


@pytest.mark.parametrize(("text", "expected"), ZH_CONSTRUCTIONS)
def test_chinese_constructions(text: str, expected: FactMention) -> None:
    assert detect_facts(text) == (expected,)


ZH_LOOK_ALIKES = [
    "我同事的工位最后落在了7楼上。",
    "比如我同事的工位，现在是7楼。",
    "我同事的工位换7楼上岗了",
    "我的手机号明年年初会变成139",
    "帮我把我妈资料里的邮箱换成a@b.com",
    "既然同事的邮箱已经改成a@b.com，那报名信息也同步一下",
    "我同事那个原来是3楼的工位，现在改成7楼了。",
    "新的一周，新的开始。",
    "后面会用到：工位是7楼（我同事的，不是我的）。",
    "工位不得不换了——明天起是7楼。",
    "我同事的工位已经不是3楼了是7楼",
    "7楼就是我同事的工位",
]


@pytest.mark.parametrize("text", ZH_LOOK_ALIKES)
def test_chinese_look_alikes_are_not_the_users(text: str) -> None:
    assert detect_facts(text) == ()


def test_a_question_word_is_not_a_slot_and_a_discourse_word_is_not_either() -> None:
    assert all(m.slot != "又问" for m in detect_facts("又问？？7楼啊，我的工位就是这个"))
    assert detect_facts("工位我选了7楼，主要是离电梯近。") == (_f("工位", "7楼"),)


ZH_SECOND_CONSTRUCTIONS = [
    ("工位更新了：K2-33", ("工位", "K2-33")),                       # a field's label says it changed
    ("更新后的工位：K2-33", ("工位", "K2-33")),
    ("记：工位 K2-33", ("工位", "K2-33")),                          # a note: the slot, a space, the value
    ("[工位] K2-33", ("工位", "K2-33")),                            # a bracketed field label
    ("还记得我说工位是3楼吗？现在变成7楼了", ("工位", "7楼")),          # a reminder of the old value, then the new
    ("你那边记的工位是3楼吧？已经是7楼了。", ("工位", "7楼")),
    ("你刚才问我的工位？是7楼。", ("工位", "7楼")),                    # the slot the listener asked about
    ("你刚问我工位是啥？嗯，7楼。", ("工位", "7楼")),
    ("以后我的工位就是7楼，旧的那个忘了吧。", ("工位", "7楼")),          # 以后…就是: from now on, not a plan
    ("7楼今天确认好了，是我新的工位", ("工位", "7楼")),                 # V确认好了: the completive is not the value
    ("7楼——我的工位，好一阵子了", ("工位", "7楼")),                    # an afterthought after 我的X
    ("7楼——我的工位，记好", ("工位", "7楼")),
]


@pytest.mark.parametrize(("text", "expected"), ZH_SECOND_CONSTRUCTIONS)
def test_more_chinese_constructions(text: str, expected: tuple[str, str]) -> None:
    assert [(m.slot, m.value) for m in detect_facts(text)] == [expected]


ZH_SECOND_LOOK_ALIKES = [
    "我同事的工位更新了：K2-33",
    "记：明天交报告",
    "[同事的工位] K2-33",
    "还记得我说工位是3楼吗？",                # the old value alone is not today's
    "你那边记的工位是3楼吧？",
    "你刚才问我同事的工位？是7楼。",
    "准备以后把工位改成7楼",
    "以后我的工位可能就是7楼",
    "7楼今天确认好了，是我同事新的工位",
    "我的工位，好一阵子了",                   # an afterthought is not a value
    "7楼——我同事的工位，好一阵子了",
]


@pytest.mark.parametrize("text", ZH_SECOND_LOOK_ALIKES)
def test_more_chinese_look_alikes_are_not_the_users(text: str) -> None:
    assert detect_facts(text) == ()


def test_an_open_slot_answered_with_adverbs_an_unchanged_slot_and_a_change_done_for_me() -> None:
    assert [(m.slot, m.value) for m in detect_facts("说到工位，我这些年一直是7楼。")] == [("工位", "7楼")]
    assert [(m.slot, m.value) for m in detect_facts("嗯，是7楼，工位没变过")] == [("工位", "7楼")]
    assert [(m.slot, m.value) for m in detect_facts("我儿子帮我把工位换成7楼了，你给记一下啊。")] == [("工位", "7楼")]
    # controls: someone else's slot, a denial before it, and a change done to someone else's
    assert detect_facts("说到工位，我同事这些年一直是7楼。") == ()
    assert detect_facts("不是7楼，工位没变过") == ()
    assert detect_facts("我儿子帮他同学把工位换成7楼了") == ()
