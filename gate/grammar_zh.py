"""Chinese clause grammar for facts users state about themselves. Pure.

The same parts as the English grammar (``gate.grammar_en``): a lead-in that
must hold no condition, plan, report, hedge or negation; an owner (``我的``,
``我``, ``本人``, ``我那个``, ``我用的``); a slot of any script (``工位``,
``office floor``, ``WiFi密码``); a copula (``是``, ``为``, ``系``, ``叫``,
``在``, ``：``) or a change verb (``改成``, ``换成``, ``变更为``, ``登记为``,
``从OLD…到``, ``由OLD更新为``, with ``把``/``将`` and the passive ``被``);
the value, with aspect and mood particles (``了``, ``啦``, ``呗``) and
trailing adverbs removed. A clause that only names the slot ("我的工位换了",
"工位的话", "你问工位啊") opens a topic, and a clause that only gives a value
("现在是7楼", "7楼") binds to it; "7楼，这是我的工位" binds backwards.

A slot owned by someone else (``我同事的工位``, ``他的工位``, ``小王的工位``,
``我们组的预算``) yields nothing: the person before ``的`` is the owner.
"""

from __future__ import annotations

import re

from ledgermem.gate import constructions_zh as Z
from ledgermem.gate.clauses import Anaphor, Blocked, Clause, Found, Topic
from ledgermem.gate.values_en import clean_slot

__all__ = ["bare_value", "is_afterthought", "parse_clause", "topic_of_question"]


def _clean_value(raw: str) -> tuple[str, bool]:
    value = re.sub(r"^[：:=＝\s]+(?=\S)", "", raw.strip())
    value = re.sub(r"^(?:那个|就是|就|呃|嗯)+(?=\S)", "", value)
    value = re.sub(r"^(?:原来|以前|之前|原先|最早|最初)的(?=\S{2,})", "", value)  # "改回原来的V"
    value = re.sub(r"^(?:(?:update|updated|change|changed|switch|switched)(?:成|为|到|\s+to\s+)|[对對]\s+)(?=\S)", "", value,
                   flags=re.IGNORECASE)  # "我的X update成V了", "嗯對 V沒錯"
    value = re.split(r"然后|了?就是(?:之前|以前|原来|旧)|(?:，|；|(?<!\d),|,(?!\d))\s*(?:请|谢谢|麻烦|烦请|如有|若有|特此|此前|之前|以前|原来|记一下|挺|蛮|很)", value, maxsplit=1)[0]
    if value.count("（") + value.count("(") > value.count("）") + value.count(")"):
        value = re.split(r"[（(][^（）()]*$", value)[0]  # "7楼（如有疑问": an aside cut by a comma
    change = False
    previous = None
    while value != previous:
        previous = value
        value = value.strip().strip("\"'“”‘’「」『』")
        value = Z.PAREN_ASIDE.sub("", value)
        value = Z.SPOKEN_TAIL.sub("", value)
        m = Z.TRAIL.search(value)
        if m and m.start() > 0:
            if Z.CHANGE_TAIL.search(m.group(0)):
                change = True
            value = value[: m.start()]
    # "7楼，不是3楼" / "7楼而不是3楼": the contrast is not the value.
    value = re.split(r"(?:而不是|不是|而非|，|；|(?<!\d),|,(?!\d)|\s{2,})", value, maxsplit=1)[0].strip()
    return value, change


#: A relative named as the value ("我妈王秀英", "我哥 Kevin"): "我" here is part of the value; a bare "我哥" is not
_KIN_NAMED = re.compile(r"我(?:[表堂]?[哥姐弟妹]|[妈爸]|爱人|老婆|老公|儿子|女儿|室友|舅舅|姑姑|阿姨|叔叔)\s?"
                        r"(?![说帮给的也都是在要会让叫和跟去来])(?:[\u4e00-\u9fff]{2,3}|[A-Z][a-z]+(?: [A-Z][a-z]+)?)")


def _valid_value(value: str) -> bool:
    if not value or len(value) > Z.MAX_VALUE_CHARS or re.search(r"本人|我的|我是", value):
        return False
    if value.lower() in {"什么", "多少", "哪里", "哪儿", "哪个", "几", "谁", "旧", "新", "老", "对", "错", "还", "也", "就", "才", "都",
                         "记好", "记住", "记下", "收到", "一下", "好的", "求确认", "确认", "对吗", "是吗"}:
        return False
    if any(marker in value for marker in Z.VALUE_MARKERS):
        return False
    if value.startswith(Z.VALUE_BAD_START) and not _KIN_NAMED.fullmatch(value):
        return False
    if value.endswith(("吧", "吗", "呢")):
        return False
    return len(Z.HAS_CJK.findall(value)) <= 20


#: A field's label that says it changed: "X更新了：V", "X更新一下：V", "更新后的X：V"
_CHANGED_LABEL_RE = re.compile(rf"^(?:我的|本人的?)?(?:更新|变更|修改|调整|更改)后的(?P<slot2>{Z.SLOT_CHARS}{{1,18}}?)$"
                               rf"|^(?:我的|本人的?)?{Z.SLOT}\s*(?:更新|变更|修改|更改)(?:了|一下|过了)$")
#: A note's own label: "记：X V", "备忘：X V"
_NOTE_CUE = re.compile(r"(?:记|记下|备忘|备注一下|笔记|memo|note)", re.IGNORECASE)
_HAS_DIGIT = re.compile(r"\d")
_COLON_CUE = (r"(?:说一句|说一下|讲一下|记下|记一下|存一下|记一笔|记住|更新一下|补充一下|提醒一下|告诉你一声|用到|所以|备忘|备注|"
              r"顺便|对了|另外|更新)")


#: What a turn adds after the slot it names, saying nothing of its value: "V——我的X，记好", "…，好一阵子了"
_AFTERTHOUGHT = re.compile(r"(?:(?:麻烦|请|帮我)?(?:记好|记住|记一下|记下来?|存一下|别忘了)|以后(?:用得着|要用|会用到)|"
                           r"(?:好|很)(?:一阵子|久|几年|多年)了|(?:有)?(?:好)?几年了)(?:啊|哈|哦|呀|吧|了)*")


def is_afterthought(clause: str) -> bool:
    """A clause after "V，我的X" that says nothing of the value: "记好", "好一阵子了"."""
    return bool(_AFTERTHOUGHT.fullmatch(clause.strip().rstrip("。！!～~")))


def bare_value(clause: str) -> str | None:
    """A clause that is only a value ("7楼", "3rd呀", "现在是7楼"), as the answer to a slot just named."""
    if is_afterthought(clause):
        return None  # "好一阵子了" says nothing of the value
    clause = re.sub(rf"^[^：:，,]{{0,12}}?{_COLON_CUE}[^：:，,]{{0,6}}?[：:]\s*", "", clause.strip())  # "记下：V", "帮我存一下：V", "所以：V"
    body = re.sub(r"^(?:(?:现在|目前|如今|新的|新)(?=是|为|就是)|现|现为)?(?:是|为|就是|改成了?|换成了?)?", "", clause.strip())
    body = re.sub(r"(?<=\S)(?:今天|刚刚?|已经|终于|总算|正式)?(?:确认好|确定好|定下来|办好|弄好|搞定|批下来|生效)了$", "", body)  # "V今天确认好了"
    value, _ = _clean_value(body)
    if not _valid_value(value) or len(value) > 24 or Z.TIME_SPAN.match(value):
        return None
    if re.search(r"[我你他她们]|别忘|记住|知道|谢谢|明白|好的|收到", value):
        return None
    return value


def _slot(raw: str) -> str | None:
    """The user's own slot, normalised; None when someone else owns it or it is not a noun phrase."""
    slot = " ".join(raw.split()).strip()
    slot = re.sub(r"^(?:至于|关于|对于|说到|提到|说起)(?=\S)", "", slot)  # "至于工位的话"
    slot = re.sub(r"(?<=\S)(?:的部分|\s*(?:新的|最新|新)|\s+(?:update|updated|new|changed))$", "", slot,
                  flags=re.IGNORECASE)  # "工位的部分喔", "工位 新：7楼", "工位 update：7楼"
    slot = re.sub(r"^新(?=\S{2,})", "", slot)  # "新工位：7楼"
    slot = re.sub(r"(?<=\S)\s+(?:is|was)$", "", slot, flags=re.IGNORECASE)  # "我的X is V"
    if slot.startswith(("我们", "咱们")):
        return None  # "我们搬到了7楼": ours, not a slot of the user's
    slot = re.sub(r"^我(?:自己)?(?:这边|这儿|这里|那边)(?:的)?(?=\S)", "", slot)  # "我这边X是V"
    for prefix in ("把我的", "将我的", "本人的", "本人", "我那个", "我这个", "我个", "我嘅", "我得", "我地", "我现在用的", "我在用的", "我用的", "我常用的",
                   "我登记的", "我留的", "我的", "把", "将", "我"):
        if slot.startswith(prefix) and len(slot) > len(prefix):
            slot = slot[len(prefix):].strip()
            break
    for adj in ("现在的", "目前的", "新的", "最新的", "当前的", "自己的", "自己用的", "常用的", "登记的", "留的", "填的",
                "选的", "设的", "一直用的", "平时用的", "在用的", "更新后的", "变更后的", "修改后的", "调整后的", "改后的"):
        if slot.startswith(adj) and len(slot) > len(adj):
            slot = slot[len(adj):]
    if not slot or re.search(r"就(?![业诊读职餐医近])", slot) or not _OPENERS.sub("", slot).strip():
        return None  # "昵称就小鱼": a clause, not a slot
    if "的" in slot:
        parts = slot.split("的")[:-1]  # every owner before a 的: "家老大的常去的餐厅" is the eldest child's
        if any(re.search("(?:" + "|".join(Z.OTHER_OWNERS) + r")(?:用|开|住|买|在用|常用|现在用)?$", owner) or re.search(
                rf"[小老阿][{Z.CJK}]$|家(?:老[大二三四]|里人|人)$|阿[嬤嬷公婆姨]$", owner) for owner in parts):
            return None
    if any(slot.startswith(o) and len(slot) > len(o) + 1 for o in Z.OTHER_OWNERS if len(o) >= 2):
        return None  # "我男朋友WiFi密码": his, not mine
    place = re.match(rf"^(?P<place>[{Z.CJK}]{{1,4}})(?:里|上|中)的(?=\S{{2,}})", slot)
    if place and re.match(r"[妈爸哥姐弟妹儿女]", place["place"]):
        return None  # "我妈资料里的X": hers
    if place and not re.search(r"[我你他她它]|" + "|".join(Z.OTHER_OWNERS), place["place"]):
        slot = slot[place.end():]  # "资料里的X": where it is written, not whose
    if re.match(r"(?:上个?月|上周|上星期|上礼拜|前几天|前两天|前天|昨天|今天|最近|前阵子|前段时间|去年|今年|月初|月底|这几天|那天|从)", slot):
        return None  # a time, not a slot: "上个月改了", "从现在开始"
    slot = re.sub(r"(?<=\S)(?:信息)?(?:报告|说明|登记|汇报|告知|列)?如下$|(?<=\S)(?:这?部分)$", "", slot)  # "本人X信息报告如下：V"
    if re.match(r"(?:[表堂]?[哥姐弟妹]|[妈爸])(?![妹])", slot):
        return None  # "我妈王秀英": a relative, not a slot of the user's ("V是我妈王秀英" does not name a slot)
    if re.match(r"所(?:用|填|选|留|登记)", slot):
        return None  # "本人所用为V": what I use, not a slot
    if re.match(r"(?:现|目|如|已|刚|今|昨|明|正|还|也|都|就|又|在)$", slot) or re.match(
            r"(?:现在|目前|如今|已经|今天|昨天|明天|正在|一直|刚刚|马上)", slot):
        return None  # an adverb, not a slot: "我现在住在上海"
    if not Z.HAS_CJK.search(slot):
        return clean_slot(slot)  # a Latin slot inside Chinese text: "我的office floor是3rd"
    if not 1 <= len(slot) <= 14 or slot in Z.SLOT_BLOCK or slot in Z.SLOT_WHOLE_STOP or Z.TIME_SPAN.match(slot):
        return None
    if any(stop in slot for stop in Z.SLOT_STOP):
        return None
    if re.search(r"(?:最初|起初|当初|仍然|依然|依旧|仍旧|从来|向来|一向|始终|才|年来|些年|多年|好多年|几年|一开始|现|跟[着著]|随[着著]|[啊呀吧呢嘛哦])$", slot):
        return None  # an adverb left on the slot: "宽带最初是A" names a past value, not a slot "宽带最初"
    return slot


def _note(text: str, topic_open: bool) -> Clause:
    """What follows a note's label ("记：X V", "记：X"): a slot and its value after a space, or the slot alone."""
    m = re.match(rf"^(?P<slot>[^\s：:]*[{Z.CJK}])\s+(?P<value>\S.*)$", text)
    if m and (found := _found(m["slot"], m["value"], change=False)) is not None:
        return found
    if _slot(text) and not _HAS_DIGIT.search(text):
        return Topic(_slot(text) or "", False, bare=True)
    return parse_clause(text, topic_open=topic_open)


def _blocked(lead: str) -> bool:
    return any(word in lead for word in Z.LEAD_BLOCKERS)


def _found(slot_raw: str, value_raw: str, *, change: bool) -> Clause:
    slot = _slot(slot_raw)
    if slot is None or re.search(r"待定|暂定|未定|未确认|待确认|没关系|无关|(?:那|这|的)(?:件)?事|没成|没办成|未成|作罢|黄了|的话(?:会|就|$)|"
                                 r"会怎么?样|会如何", value_raw):
        return None  # "工位→7楼（待定）" is not settled
    value, tail_change = _clean_value(value_raw)
    if not _valid_value(value) or re.search(r"(?:不|没|未)$", value):
        return None
    return Found(slot, value, change or tail_change)


_PAST_FRAME = re.compile(
    r"^(?:(?:以前|之前|过去|早些年|前几年|几年前)[^，,是为]{0,12}?(?:的时候|时候|时|那会儿?|嗰阵|那阵|期间)"
    r"|(?:小时候|那时候?|那会儿?|当年|当时|读书的时候|上学的时候)[^，,是为]{0,8})$")
_PAST_LEAD = re.compile(r"^(?:以前|之前|原来|原先|本来|过去|早先)(?:的)?\s*(?P<rest>.+)$")
_HEDGE_TAIL = re.compile(r"(?:吧|吗|对吧|是吧|对不对|是不是|(?<=什么|多少|哪个|哪里|哪儿|怎么)呢|(?:什么|多少|哪|谁|几|怎么|啥)\S{0,6}呢)[？?！!。.]*$")
_BARE_IS_RE = re.compile(
    rf"^{Z.OWNER}?{Z.LEAD_ADJ}{Z.SLOT}\s*(?:其实|实际上|实际)?\s*(?:应该是|应是|应为|应当是|是|(?<![华因作成认以行更变改])为|"
    rf"(?<![联关体派院维干])系(?![统列数]))"
    rf"\s*(?P<value>.+)$"
)
#: A change dated from today, not from a day to come ("明天开始" is a plan): "今天开始", "从本月起", "自即日起"
_SINCE_NOW = re.compile(r"^(?:从|自)?(?:今天|今日|今儿|即日|本月|这个月|本周|这周|今年|现在|此刻)(?:开始|起)(?:的话)?[，,：:\s]*")
#: A change dated from a day to come: a plan, not a fact yet ("下个月起我的X是V")
_SINCE_LATER = re.compile(r"^(?:从|自)?(?:明天|明日|后天|下周|下个?星期|下个?礼拜|下个?月|明年|下学期)(?:开始|起)")
_OPENERS = re.compile(
    r"^(?:[一二三四五]是(?=我|本人)|跟你说一下|和你说一下|跟你讲一下|告诉你一下|跟你说一声|反正|总之|对了|另外|还有|然后|所以|嗯+|哦+|噢|啊|诶|哎|好的|好|那个|就是说|就是|话说|顺便说一下|顺便提一下|顺便|告诉你|跟你说|"
    r"和你说|跟你讲|说一下|提一下|记一下|请记住|记住|记得|注意|更正一下|更正(?![为成后])|勘误|纠正一下|纠正|补充一下|补充一点|补充下信息|"
    r"补充|再补充一句|更新一下|更新(?![后为成到的了])|刚才说错了|我说错了|说错了|打错了|不好意思|抱歉|其实|实际上|最新消息|通知一下|提醒一下|"
    r"备注|另外说一下|特此告知|特此说明|特此通知|供您备查|烦请更新|烦请知悉|请知悉|您好|你好|hi|hello|btw|fyi|ok|okay|"
    r"我记得|记得|我印象中|印象中|我印象里|印象里|搞半天|闹了半天|折腾了半天|呃+|嗯+那个|那个那个|就是说|欸|诶|哎呀|唉|小爱同学|天猫精灵|小度小度|小度|hey siri|siri|"
    r"等下|等等|改了改了|对对|哈喽|嘿|诶对|话说回来|对了对了|跟你讲哦|跟你说哦|告诉你哦|烦请登记|请登记|登记一下|请更新|"
    r"烦请协助处理以下事项|有几点需要告知|以下是|如下|(?:帮我|请|麻烦)?记(?:低|下|一下|住)|而且|并且|但是|不过|同时|此外|顺带一提|"
    r"跟你说个事|说个事|我想说一下|想说一下|我想告诉你|想跟你说|跟你说一下|和你说一下|打扰了|打扰您了|小同志|家人们谁懂啊|"
    r"收到|@\S{1,8}|fyi|btw|回答您的问题|回答你的问题|答复你的问题|(?:我)?(?:报|说|提供)一下(?=我的|本人)|之所以|第[一二三四五六七八九十\d]+(?:点|件|条)?|"
    r"结果(?!是)|要记的(?:就)?是|最要紧的是|最重要的是|重点是|关键是|长话短说|新(?:的)?(?:学期|一周|一年|一个月|工作|季度|赛季)[，,]?(?=新)|如果没记错的话|要是没记错的话|没记错的话|如果我没记错的话|我觉得(?=我)|我认为(?=我))[哦啊呀哈~～！!]*[：:，,、\s]*",
    re.IGNORECASE,
)


# What a field's line says of a change, before its value ("我的X：现在是V", "X：改成V", "X：新的V") or in its
# label ("我的新X：V", "X更新：V", "X update：V"); "我的X：V" says none.
_LABEL_VALUE_CHANGE = re.compile(r"(?:现在|目前|如今)(?=是|为|\S)|现(?=是|为)|新的(?=\S)|"
                                 r"(?:已经?)?(?:改|换|变|调|更新|变更|修改|调整|更改)(?:成|为|到)了?(?=\S)")
_LABEL_HEAD_CHANGE = re.compile(r"(?:新的?|最新的?|更新|变更|修改|更改|\b(?:update|updated|new|changed))\s*$|"
                                r"^(?:我的|本人的?|我)?\s*(?:新的?|最新的?|现在的)(?=\S)", re.IGNORECASE)


def parse_clause(clause: str, *, topic_open: bool, correcting: bool = False) -> Clause:
    """Read one Chinese sub-clause (no sentence punctuation inside).

    ``correcting``: the turn says an earlier statement was wrong ("打错了",
    "说错了"), so "工位应该是7楼" is the corrected value, not a guess.
    """
    clause = clause.strip().strip("\"'“”‘’「」『』 ").rstrip("—－-").strip()  # "X不得不换了——": the dash leads on
    if clause.count("（") + clause.count("(") > clause.count("）") + clause.count(")"):
        clause = re.sub(r"[（(][^（）()]*$", "", clause).strip()  # "X是V（我自己的": an aside cut by a comma
    if _SINCE_LATER.match(clause):
        return Blocked("a plan")
    since = _SINCE_NOW.match(clause)
    if since and clause[since.end():].strip():  # "今天开始X就是V了": from now on, said as a change
        read = parse_clause(clause[since.end():], topic_open=topic_open, correcting=correcting)
        if isinstance(read, Found):
            return Found(read.slot, read.value, True)
        if isinstance(read, Topic):
            return Topic(read.slot, True, bare=read.bare, back=read.back)
        return read
    m = Z.BACK_RE.match(clause)
    if m and clause.startswith("就是") and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", False, back=True)  # "7楼！对，就是我的工位": before "就是" goes as an opener
    m = Z.REMEMBER_SAID_RE.match(clause)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", True, bare=False)  # "记得我说过工位是3楼吗": the old value; the new one follows
    previous = None
    while previous != clause:
        previous = clause
        clause = _OPENERS.sub("", clause).strip()
    m = Z.BACK_TAIL_RE.match(clause)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", bool(re.search(r"改|换|更新", m["tail"])), back=True)
    for pattern in (Z.TOLD_WRONG_RE, Z.SAID_AS_RE, Z.ASKS_FOR_RE):  # "之前告诉你的X不对", "我前面把X说成A了": the right value follows
        m = pattern.match(clause)
        if m and _slot(m["slot"]):
            asks = pattern is Z.ASKS_FOR_RE  # "表格上要填X": "我的是V" follows, not any value ("示例是7楼")
            return Topic(_slot(m["slot"]) or "", not asks, bare=not asks)
    clause = re.sub(r"^(?:因为|由于|鉴于|既然|考虑到)(?=我|本人|[^，,]{1,14}?(?:已经|已)(?:改|换|变|更新))", "", clause)  # "因为我的X是V，所以…": said as a reason, still said
    clause = re.sub(r"^(?:现在|目前|如今|最近|最终|最后|后来)(?:其实|实际上)?(?=[^的是为])", "", clause)  # "现在工位换用7楼"
    clause = re.sub(r"^(?:月初|月底|月中|年初|年底|年中|上个?月|上周|上星期|上礼拜|前几天|前阵子|前段时间|前些天|昨天|前天|今天|今早|"
                    r"刚才|刚刚|日前|近日|近期|这周|本周|这个月|本月|上个?月[尾底初]|琴日|寻日|尋日|噚日)(?:的时候)?\s*(?=我|本人|把|将|说到|提到|说起|问)", "",
                    clause)  # "上周我把工位从3楼换到了7楼"
    clause = re.sub(r"^(?:你|您)(?:那边|这边|那儿|那里)\s*(?=\S)", "", clause)
    if re.match(r"^(?:明年|明天|后天|下个?月|下周|下星期|下礼拜|将来|未来|过几天|过阵子|回头|等)", clause):
        return Blocked("a plan")  # "明年我的X是V", "等搬完以后我的X是V": not yet
    clause = re.sub(r"^(?:从今以后|从今往后|从此以后|从此|今后|往后|以后)(?=[^，,]{1,20}?(?:就是|都是|就用|都用))", "", clause)  # "以后我的X就是V": from now on
    later = re.match(r"^(?P<lead>[^，,]{0,8}?)(?:以后|之后|往后|今后)", clause)
    if later and not re.search(r"[了完好]", later["lead"]) and not re.search(r"了\s*$|一律|统一|都按|就按", clause):
        return Blocked("a plan")  # "以后我的X是V"; "搬家以后我的X就变成V了" told as done stays
    clause = re.sub(r"^(?:这段时间|这阵子|最近这阵子|最近这段时间|眼下|近来)[，,]?\s*(?=\S)", "", clause)  # "这段时间我的X一直是V"
    clause = re.sub(r"^(本人|我的|我)(?:目前|现在|当前|如今)(?=[^，,]{2,14}?(?:为|是))", r"\1", clause)  # "本人目前X为V", "我现在X是V"
    clause = re.sub(r"^(?:从)?(?:上个?月|上周|上星期|上礼拜|本月|这个月|今天(?:早上|上午|下午|晚上)?|今早|今年|去年|即日|月初|本周|这周)起\s*(?=\S)", "",
                    clause)  # "上个月起X就改成V了"  # "你那边工位改一下"
    clause = re.sub(r"^\[(?P<label>[^\[\]]{1,16})\]\s*(?=\S)", r"\g<label>：", clause)  # "[X] V": a bracketed field label
    clause = re.sub(r"^【[^】]{1,16}】\s*(?=\S)", "", clause)  # a form's header: "【个人信息登记】工位——7楼"
    clause = re.sub(r"^(?:\d{1,2}(?:[)）、]|\.(?!\d))|[一二三四五六七八九十]+[、.）)]|[（(](?:\d{1,2}|[一二三四五六七八九十]{1,3})[)）]|[•·*])\s*", "",
                    clause)  # list items
    request = re.match(r"^(?:可以|能|能不能|可不可以|麻烦)(?:你|您)?(?=帮我|帮忙)(?P<rest>.+?)(?:吗|嘛|好吗|可以吗|行吗|好不好)?$", clause)
    if request:  # "可以帮我把工位从3楼改成7楼吗": a request, not a question
        clause = request["rest"]
    if not clause:
        return None
    arrow = re.fullmatch(r"(?P<old>[^→>，,：:]{1,24}?)\s*(?:→|->|=>)\s*(?P<value>[^→>]+)", clause)
    if arrow and topic_open:  # "我的工位 3楼→7楼": after the slot, the old value and the new one
        value, _ = _clean_value(arrow["value"])
        return Anaphor(value, True) if _valid_value(value) else None
    split = re.search(r"(?<![0-9A-Za-z])[:：]", clause)
    head, tail = (clause[: split.start()], clause[split.end():]) if split else (clause, "")
    if split and tail.strip():
        label = head.strip()
        if label in Z.ITEM_LABELS and _slot(tail.strip()):  # "项目：工位": the field a form is about
            return Topic(_slot(tail.strip()) or "", bool(re.search(r"变更|修改|更新", label)), bare=True)
        about = Z.ABOUT_RE.match(label)
        if about and Z.CHECKED.fullmatch(tail.strip()) and (named := _slot(about["slot"] or about["slot2"] or about["slot3"])):
            return Topic(named, False, bare=True)  # "关于X：我查了一下": the value follows
        if label in Z.ASK_LABELS and re.fullmatch(r"(?:我的|本人的?)?[^？?吗呢]+", tail.strip()) and _slot(
                re.sub(r"^(?:我的|本人的?)", "", tail.strip())):
            return Topic(_slot(re.sub(r"^(?:我的|本人的?)", "", tail.strip())) or "", False, bare=True)
        if label in Z.ANSWER_LABELS:  # "答：V" after "问：X"
            value, _ = _clean_value(tail)
            return Anaphor(value, False) if topic_open and _valid_value(value) else None
        if label in Z.VALUE_LABELS:  # "内容：7楼": the value of the field named before, if one was
            value, _ = _clean_value(tail)
            return Anaphor(value, label != "内容") if topic_open and _valid_value(value) else None
        relabel = _CHANGED_LABEL_RE.match(label)
        named = _slot(relabel["slot"] or relabel["slot2"]) if relabel and not re.search(r"我|本人|是|为|改|换|变", tail) else None
        if named and (found := _found(named, tail, change=True)) is not None:
            return found  # "X更新了：V", "更新后的X：V": the field's label says it changed
        if _NOTE_CUE.fullmatch(label):
            return _note(tail.strip(), topic_open)  # "记：X V"
        kin = _KIN_NAMED.fullmatch(_clean_value(tail)[0])  # "紧急联系人：我妈王秀英": 我 inside the value
        if kin and not re.search(_COLON_CUE, label) and not re.search(r"了|是|为|换|改|变|更", label) and (found := _found(label, tail, change=bool(_LABEL_HEAD_CHANGE.search(label)))):
            return found
        if (re.search(r"我|本人", tail) and not kin) or re.search(_COLON_CUE, label):  # "特此告知：本人的工位为7楼", "交班前说一句：X=V"
            return parse_clause(tail, topic_open=topic_open, correcting=correcting)
        m = Z.WAS_NOW_RE.match(clause)
        if m and (found := _found(m["slot"], m["value"], change=True)) is not None:
            return found
        noted = Z.NOTE_ARROW_RE.match(f"{head.strip()}→{tail.strip()}")
        if noted and re.search(f"[{Z.CJK}]$", noted["slot"]) and (found := _found(noted["slot"], noted["value"], change=True)):
            return found  # "我的工位 3楼→7楼" read as a label: the slot, the old value, then the new one
        left = parse_clause(head, topic_open=False)
        if isinstance(left, Topic):  # "工位换新的了：K2-33", "关于X：现在是V，不是OLD", "我的X：V"
            said = _LABEL_VALUE_CHANGE.match(tail.strip())
            value = re.sub(r"^(?:现在|目前|如今)?(?:是|为)(?=\S)|^(?:已经?)?(?:改|换|变|调|更新|变更|修改|调整|更改)(?:成|为|到)了?(?=\S)",
                           "", tail.strip())
            # A field and its value is a plain statement; it is a change only where the line says one.
            changed = left.change or bool(said) or bool(_LABEL_HEAD_CHANGE.search(head.strip()))
            found = _found(left.slot, value, change=changed)
            if found is not None:
                return found
    clause = re.sub(r"(是|的|那个)\1+", r"\1", clause)  # a stutter: "我的工位是是7楼"
    clause = re.sub(r"((?:换|改|变|调)了)\1+", r"\1", clause)  # "工位变了变了现在是7楼"
    clause = re.sub(r"(换|改|变|调)了\1(?=成|为|到)", r"\1", clause)  # "工位换了换成了7楼"
    clause = re.sub(r"[嗯呃]+", "", clause)  # voice fillers
    clause = re.sub(r"(?:改|换|更新|调)一下(?=改|换|更新|调)", "", clause)  # "工位改一下改成7楼"
    clause = re.sub(r"^那(?=\S{1,14}的部分)", "", clause)  # "那工位的部分就是7楼"
    clause = re.sub(r"(?<=\S)呢(?=是|为|就是)", "", clause)  # "我的工位呢是7楼"
    clause = re.sub(r"(?<=\S)[（(][^（）()]{1,20}[）)](?=\s*(?:是|为|[：:]))", "", clause)  # "我的工位（平时用的那个）是7楼"
    if re.match(r"^(?:读书|上学|念书|小时候|那时候?|当年|大学|高中|初中|小学|好?几(?:年|个月)前|(?:很|好)?多年(?:以)?前|(?:老早|很早|好久|很久)(?:以)?前|前几年|那几年|早几年|"
                r"以前住\S{1,6}的时候)(?:的时候|时|那会儿?|期间)?\s*(?=我)", clause):
        return Blocked("a past frame")  # "读书的时候我的工位是3楼"
    if re.match(r"^(?:\d{4}年)?(?:有一阵子?|有段时间|有一段时间|那段时间)|^(?:在以前|以前在|之前在)", clause) and not re.search(
            r"现在|目前|如今", clause):
        return Blocked("a past frame")  # "2019年有一阵子我的X是V", "在以前那个单位，V是我的X"
    if re.match(r"^[^，,]{0,10}?(?:的时候|那时候?|那会儿?|当年|那年|那几年|那阵子?)", clause) and not re.search(
            r"现在|目前|如今|已经|^(?:帮我|请|麻烦|你|您|给我|替我)", clause):
        return Blocked("a past frame")  # "我读大学的时候鞋码是42码"
    clause = re.sub(r"(?<=\S)(?:就这样|就這樣)$", "", clause)  # "…是V就这样": the speaker is done
    clause = re.sub(r"(?<=\S)(?:的部分|这样|這樣|这样子)(?=就?是|$)", "", clause)  # 台湾用语: "我工位的部分是7楼這樣"
    if re.search(r"(?:说|发了?句|发了?条|写|写着|道|讲|问|喊|回)[了过]?[：:]?\s*[“\"「『]", clause):
        return Blocked("quoted speech")  # 他在群里发了句“我的工位是7楼”: his words, not the user's
    if topic_open and (re.match(_PERSON_IS, clause) or re.match(r"^(?:他|她|他们|她们|你|你们)(?:的)?(?:是|呢|则是|的是)", clause)):
        return Blocked("someone else's value")  # "工位这块儿，我表哥是7楼": the cousin's, not the user's
    if re.match(rf"^我(?:的)?{_PEOPLE}(?:的)?(?![是为叫：:，,的话]|$|(?:帮|给|替)我把)", clause) and not re.match(r"^我(?:的)?(?:家|们)", clause):
        return Blocked("someone else's value")  # "我妈X用的是V，不是我的"
    if re.search(r"曾经(?:是|为|用过?|叫|填过?)|(?<!现在)(?<!目前)用过(?!了)", clause) and not re.search(r"现在|目前|如今", clause):
        return Blocked("a past value")  # "我的X曾经是V", "很多年前我X用过V"
    m = Z.IF_ASKED_RE.match(clause)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", False, bare=True)  # "如果有人问起我的工位，就说是7楼"
    m = re.match(r"^就(?:说|讲|回|答)(?:是)?(?P<value>.+)$", clause)
    if m and topic_open:
        value, _ = _clean_value(m["value"])
        if _valid_value(value):
            return Anaphor(value, False)
    m = Z.IF_YOU_NEED_RE.match(clause)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", False, bare=True)  # "要是你哪天需要我的工位，就是7楼"
    m = Z.PAREN_VALUE_RE.match(clause)
    if m and (found := _found(m["slot"], m["value"], change=False)) is not None:
        return found  # "我的工位（7楼）一直没变过"
    m = Z.REMEMBER_SAID_RE.match(clause)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", True, bare=False)  # "还记得我说工位是3楼吗？现在变成7楼了"
    topic = (re.fullmatch(r"(?:那|至于)?(?P<slot>.+?)(?:呢|嘛)", clause)
             or re.fullmatch(r"(?P<slot>[^，,]{2,14}?)(?:哦|喔|噢|啊|呀)", clause))
    if topic and re.match(r"(?:说到|提到|说起|关于|问)", topic["slot"]):
        topic = None  # "说到工位嘛": read below as "说到工位"
    if topic and topic.group(0)[-1] not in "呢嘛" and (topic_open or re.search(r"[就是为了在改换变成到]", topic["slot"])):
        topic = None  # "7楼呀" answers a slot already named
    if topic and _slot(topic["slot"]) and not re.fullmatch(_INTERJECTION, topic["slot"]) and not re.search(
            r"就|是", topic["slot"]):
        return Topic(_slot(topic["slot"]) or "", False, bare=True)  # "工位呢，我是7楼": as for my desk
    if re.search(r"(?:记为|记成|记作|写成|写为|就用|就换|就填|就写|就记|换成|改成)[^，,]{1,40}吧$", clause):
        clause = clause[:-1]  # "X就换V吧", "你就把它记为V吧": 吧 softens an instruction; it is no hedge
    elif _HEDGE_TAIL.search(clause):
        return Blocked("a question or a hedge")
    m = Z.AS_MY_RE.match(clause)
    if m and (m["me"] or m["own"]) and not _blocked_inside(clause):  # "请将7楼登记为本人的工位", "我一直拿小鱼当昵称"
        found = _found(m["slot"], m["value"], change=False)
        if found is not None:
            return found
    if _PAST_FRAME.match(clause):
        return Blocked("a past frame")  # "以前读书的时候，我的工位是3楼": what follows is the past
    m = Z.UNCHANGED_RE.match(clause)
    if m and _slot(m["slot"]) and not re.match(rf"^我(?:的)?{_PEOPLE}", clause):
        return Topic(_slot(m["slot"]) or "", False, bare=True, back=True)  # "是7楼，工位没变过"
    own = re.search(r"(?<!被)我", clause)  # the 我 of 被我 is the agent, not the owner
    owner_at = min((i for i in (own.start() if own else -1, clause.find("本人")) if i >= 0), default=-1)
    lead = clause[:owner_at] if owner_at > 0 else ""
    past = _PAST_LEAD.match(clause)
    if past and correcting and clause.startswith("原来"):
        past = None  # "原来我的工位是7楼，之前记错了": "it turns out", not "it used to be"
    gone = re.match(rf"^(?:以前|之前|原来|原先|旧)的?{Z.SLOT}(?:已经|已)?被?(?:换掉|改掉|弃用|作废|停用|注销)了?$", clause)
    if gone and _slot(gone["slot"]):
        return Topic(_slot(gone["slot"]) or "", True, bare=True)  # "之前的X被换掉了，现在是V"
    if past:  # "以前我的工位是3楼" / "原来的工位是3楼": the old value; what follows may say the new one
        m = Z.IS_RE.match("我的" + past["rest"].removeprefix("我的").removeprefix("我")) or _BARE_IS_RE.match(past["rest"])
        slot = _slot(m["slot"]) if m else None
        return Topic(slot, True) if slot else Blocked("a past value")
    if owner_at > 0 and _blocked(lead) and not re.search(r"是\s*$", lead):
        return Blocked("lead-in")
    if owner_at > 0 and (re.search(r"是\s*$|(?:帮|请|让|给|跟|和|替)\s*$", lead)
                         or not re.search(r"[把将][\s]*$", lead) and _slot_like(lead)):
        body = clause  # "工位我选了7楼": the slot stands before 我
    else:
        body = clause[owner_at:] if owner_at > 0 else clause
    if correcting:
        m = _BARE_IS_RE.match(body)
        found = _found(m["slot"], m["value"], change=True) if m else None
        if found is not None:
            return found
    m = Z.VALUE_FIRST_RE.match(body)
    if m and not re.match(r"可能|也许|大概|或许|应该|估计|好像|似乎", m["value"]) and not re.search(
            r"(?:不再|不|已经不|并不|从来不|曾经|以前|原来)$", m["value"]):
        found = _found(m["slot"], m["value"], change=False)  # "咸鱼不想翻身是我常用的昵称": the value may say anything
        if found is not None:
            return found
    if _blocked_inside(body):
        return Blocked("a plan, report, hedge or negation")
    return _core(body, topic_open)


_PEOPLE = (r"(?:[表堂]?[哥姐弟妹]|[妈爸叔姨舅爷奶]|儿子|女儿|孩子|老婆|老公|室友|同事|朋友|同学|老板|领导|邻居|闺蜜|"
           + "|".join(o for o in Z.OTHER_OWNERS if len(o) >= 2) + ")")
_PERSON_IS = rf"^我(?:的)?{_PEOPLE}(?:的)?(?:是|用的是|用的|选的是|填的是|则是|呢是)"
_DIFFERENT_FROM_RE = re.compile(rf"^我(?:和|跟|与)(?:我的?)?{_PEOPLE}(?:的)?{Z.SLOT}不一样$")  # "我和我哥工位不一样，我是7楼"
_INTERJECTION = r"(?:好|好的|对|对的|是|是的|行|可以|没问题|知道了|收到|明白|谢谢|嗯|哈哈|天哪|不是|真的|这样|那样|这个|那个)"


def _slot_like(lead: str) -> bool:
    """A lead-in before 我 that is itself a slot ("工位我选了7楼"), not an opener or a time."""
    if re.search(r"请|注意|麻烦|烦请|帮|知悉|确认|告知|记得|提醒", lead):
        return False
    return bool(re.search(r"[A-Za-z\u4e00-\u9fff]", lead)) and _slot(re.sub(r"(?:这块儿?|这边|方面|嘛|呢|的话)?[，,\s]*$", "", lead)) is not None and not re.search(
        r"[，,：:]|(?:开始|以来|起|后|时候)(?:这块儿?|这边|方面|嘛|呢|的话)?\s*$|^(?:从|自)|今天|昨天|最近|上周|这周|本周|[\d一二三四五六七八九十上下本这每]+个?月|今年|去年|明年|"
        r"\d+年|\d+日|[\d一二三四五六七八九十]号$", lead)


_NAMED_AFTER_RE = re.compile(rf"^(?P<body>.+?)\s*[（(](?:我的|本人的){Z.SLOT}[）)]$")  # "3楼→7楼（我的工位）"


def _core(body: str, topic_open: bool) -> Clause:
    m = _NAMED_AFTER_RE.match(body)
    if m and _slot(m["slot"]):
        pieces = re.split(r"\s*(?:→|->|=>)\s*", m["body"])
        value = bare_value(pieces[-1])
        if value is not None:
            return Found(_slot(m["slot"]) or "", value, len(pieces) > 1)
    m = Z.NO_LONGER_BUT_RE.match(body)
    if m:
        value = re.split(r"(?<=\S)(?=(?:你|我)\S{2,})", m["value"], maxsplit=1)[0]  # "…是V你下单的时候注意": a new clause
        named = m["slot"] and not re.fullmatch(Z.ADV, m["slot"].strip())
        if named and (found := _found(m["slot"], value, change=True)) is not None:
            return found
        value, _ = _clean_value(value)
        if not named and topic_open and _valid_value(value):
            return Anaphor(value, True)
    m = Z.WAS_REL_RE.match(body)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", True, bare=True)  # "我那个原来是3楼的工位，现在改成7楼了"
    for pattern, change in ((Z.NO_LONGER_MINE_RE, True), (Z.DONE_WITH_RE, True), (Z.TOLD_WRONG_RE, True), (Z.WROTE_WRONG_RE, True), (Z.SAID_AS_RE, True), (Z.SLOT_WAS_AT_FIRST_RE, True), (Z.APPLY_CHANGE_RE, True), (_DIFFERENT_FROM_RE, False), (Z.IF_ASKED_RE, False)):
        m = pattern.match(body)
        if m and pattern is Z.NO_LONGER_MINE_RE and m["neg"] == "不是" and not m["le"]:
            return Blocked("negated")  # "V不是我的X": a plain denial, nothing said to have changed
        if m and _slot(m["slot"]):  # a slot named now, its value in the next clause
            return Topic(_slot(m["slot"]) or "", change, bare=True)
    m = Z.NOTE_ARROW_RE.match(body)
    if m and (found := _found(m["slot"], m["value"], change=True)) is not None:
        return found  # "我的工位 3楼→7楼"
    m = Z.I_CHANGED_RE.match(body) or Z.I_CHANGED_AFTER_RE.match(body)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", True, bare=True)
    for pattern, change in ((Z.FORGET_ZH_RE, False), (Z.TELL_YOU_RE, False), (Z.THEY_BA_RE, True)):
        m = pattern.match(body)
        if m and _slot(m["slot"]):
            return Topic(_slot(m["slot"]) or "", change, bare=True)
    m = Z.DASH_NEW_RE.match(body)
    if m and (found := _found(m["slot"], m["value"], change=True)) is not None:
        return found
    for pattern in (Z.LANDED_ON_RE, Z.FILL_RE, Z.FROM_NOW_RE, Z.NEW_BARE_RE):
        m = pattern.match(body)
        if m and (found := _found(m["slot"], m["value"], change=pattern is Z.LANDED_ON_RE)) is not None:
            return found
    for pattern in (Z.BA_RE, Z.CHANGE_RE, Z.SLOT_BA_RE):
        m = pattern.match(body)
        if m and pattern is Z.SLOT_BA_RE and (m["slot"].strip() in Z.OTHER_OWNERS or re.fullmatch(rf"[小老阿][{Z.CJK}]", m["slot"].strip())):
            return Blocked("someone else's doing")  # "领导把他的X换成V了", "老王把X换成了V": the boss, Lao Wang
        if m:
            found = _found(m["slot"], m["value"], change=True)
            if found is not None:
                return found
    m = Z.TOPIC_FRONT_RE.match(body)
    if m:
        found = _found(m["slot"], m["value"], change=False)
        if found is not None:
            return found
    for pattern in (Z.TOPIC_RE, Z.SORTED_RE):
        m = pattern.match(body)
        if m and _slot(m["slot"]):
            return Topic(_slot(m["slot"]) or "", True, bare=True)
    m = Z.ABOUT_RE.match(body)
    about = _slot(m["slot"] or m["slot2"] or m["slot3"]) if m else None
    if about:
        return Topic(about, False, bare=True)
    m = Z.DEHUA_RE.match(body)
    if m:
        found = _found(m["slot"], m["value"], change=False)
        if found is not None:
            return found
    m = Z.IS_RE.match(body)
    if m:
        value = m["value"]
        if re.match(r"(?:可|并|绝|也|都|才|又|根本|从来)?(?:不是|不再|不在|不算|没有|没)", value):
            slot = _slot(m["slot"])  # "我的工位不是3楼，是7楼": only what follows is a fact
            return Topic(slot, True) if slot else Blocked("negated")
        adv = m["adv"] or ""
        if m["cop"] == "就" and (re.search(r"[了过着]\s*$", value) or len(_clean_value(value)[0]) < 2):
            return None  # "我的手机就坏了": a verb, not a value
        if "的" in m["cop"] and (re.search(r"是|为", value) or re.match(_PERSON_IS, "我" + m["slot"] + "是")):
            return None  # "我室友用的工位是7楼": the roommate's
        found = _found(m["slot"], value, change=any(a in adv for a in Z.ADV_CHANGE) or "现在的" in body[:6])
        if found is not None:
            return found
    for pattern, topic in ((Z.WAS_RE, Topic), (Z.IF_YOU_NEED_RE, Topic), (Z.DIFFERENT_RE, Topic)):
        m = pattern.match(body)
        if m and _slot(m["slot"]):
            return Topic(_slot(m["slot"]) or "", pattern is Z.WAS_RE, bare=pattern is not Z.WAS_RE)
    m = Z.IT_IS_THIS_RE.match(body)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", False, back=True)  # "7楼——我的工位就是这个"
    m = None if topic_open else Z.NEW_SLOT_RE.match(body)  # with a slot open, "新加坡IPLC" is its value
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", True, bare=True, back=True)  # "7楼——新工位"
    m = Z.OWNED_SLOT_RE.match(body)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", False, bare=True, back=True)  # "我那个工位，是7楼" / "7楼——我的工位"
    m = Z.NOW_NO_COPULA_RE.match(body)
    if m and not re.search(r"[了过着吧吗呢]$|^(?:[挤忙乱吵热冷远近贵满空堵]|便宜)", m["value"]):
        found = _found(m["slot"], m["value"], change=True)
        if found is not None:
            return found
    m = Z.BARE_NOW_RE.match(body) or Z.TERSE_NOW_RE.match(body)
    if m:
        found = _found(m["slot"], m["value"], change=True)
        if found is not None:
            return found
    m = Z.BARE_COPULA_RE.match(body)
    if m and len(m["slot"].strip()) >= 2 and "的" not in m["slot"] and not re.search(r"并非|不算|(?:不是|并不是)我", body):
        found = _found(m["slot"], m["value"], change=False)  # "工位是7楼": a bare statement, said without 我的
        if found is not None:
            return found
    m = Z.VALUE_FIRST_RE.match(body)
    if m:
        found = _found(m["slot"], m["value"], change=False)
        if found is not None:
            return found
    m = Z.BACK_RE.match(body)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", False, back=True)
    m = Z.LABEL_RE.match(body)
    if m:
        found = _found(m["slot"], m["value"], change=False)
        if found is not None:
            return found
    if topic_open:
        m = Z.ANAPHOR_RE.match(body)
        if m:
            value, _ = _clean_value(m["value"])
            if _valid_value(value):
                return Anaphor(value, True)
    return None


def topic_of_question(sentence: str) -> Topic | None:
    """A question that only names a slot ("工位？", "你问工位啊？"): the next sentence may answer it."""
    body = sentence.strip().rstrip("?？").strip()
    said = Z.REMEMBER_SAID_RE.match(body)
    if said and _slot(said["slot"]):
        return Topic(_slot(said["slot"]) or "", True)  # "还记得我说工位是3楼吗？": the old value; the new one follows
    body = re.sub(r"^(?:你|您)(?:刚才|刚刚|刚|之前|上次)?(?:问|说)(?:我|的|我的)+(?=\S)", "", body)  # "你刚才问我的工位？"
    body = re.sub(r"(?<=\S)(?:是啥|是什么|是多少|是哪个)$", "", body)  # "你刚问我工位是啥？"
    body = re.sub(r"^(?:哦|噢|啊|嗯)?(?:又|还|老|老是|怎么又|怎么还)?(?:你问|问|你说|你要|要|还记得|记得)?", "", body)
    body = re.sub(r"(?:啊|呀|吗|嘛|呢|是吧)$", "", body)
    slot = _slot(body) if body and len(body) <= 16 and not re.search(r"什么|多少|哪|几|啥|谁|吗|是|为", body) else None
    return Topic(slot, False, bare=True) if slot else None


_INSIDE_BLOCKERS = re.compile(
    r"(?:没有|没|别|未|并未|尚未|从未)(?=.{0,12}(?:是|为|改|换|变|调|更|登记))|(?:想|打算|准备|计划|考虑|可能|也许|或许|大概|应该会|拟|"
    r"即将|将要|预计|有望|"
    r"(?<![机社聚开晚学协工])会(?![议计员话场所长面见谈])|将会|(?<![重主需只不])要(?![求点素])|想要)"
    r"(?:把|将)?.{0,40}?(?:改|换|变|调|搬|是|为|更新|切|登记|设)|(?:是否|是不是|有没有|没关系|无关)|(?:(?<![小听话])说(?![明起到])|告诉我|听说|据说|觉得|认为|以为|来函称|声称|据称|自称)"
    r"|^其"
)


def _blocked_inside(body: str) -> bool:
    """A plan, report or hedge between the owner and the verb: "我打算把工位换成7楼", "我的工位可能是7楼"."""
    return bool(_INSIDE_BLOCKERS.search(body))
