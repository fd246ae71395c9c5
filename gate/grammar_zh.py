"""Chinese clause grammar for facts users state about themselves. Pure.

The same parts as the English grammar (``gate.grammar_en``): a lead-in that
must hold no condition, plan, report, hedge or negation; an owner (``我的``,
``我`` before the slot, ``把我的``); a slot of any script (``工位``,
``office floor``, ``WiFi密码``); a copula (``是``, ``为``, ``叫``, ``在``,
``：``) or a change verb (``改成``, ``换成``, ``变成``, ``调到``,
``更新为``, ``从OLD…到``); the value, with aspect particles (``了``,
``啦``) and trailing adverbs removed. A clause that only names the slot
("我的工位换了", "我的工位不再是3楼了") opens a topic, and a clause that only
gives a value ("现在是7楼", "改成7楼了") binds to it.

A slot owned by someone else (``我同事的工位``, ``他的工位``, ``小王的工位``)
yields nothing: the person before ``的`` is the owner, not the user.
"""

from __future__ import annotations

import re

from gate.grammar_en import Anaphor, Blocked, Clause, Found, Topic, clean_slot

__all__ = ["parse_clause"]

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff"
_HAS_CJK = re.compile(f"[{_CJK}]")
_SLOT_CHARS = rf"[{_CJK}A-Za-z0-9 _\-]"
_SLOT = rf"(?P<slot>{_SLOT_CHARS}{{1,16}}?)"
_ADV = r"(?:现在|目前|如今|已经|已|刚刚|刚|其实|实际上|真的|也|还|就|都|暂时|最近|正式|终于|又|重新|今天|这周|本周)*"
_ADV_CHANGE = ("现在", "目前", "如今", "已经", "已", "刚刚", "刚", "其实", "实际上", "终于", "最近", "正式", "重新", "又")
_CHANGE = (r"(?P<verb>改成|改为|改到|改回|换成|换为|换到|换回|变成|变为|变回|调成|调为|调到|调整为|调整到|调整成|"
           r"更新为|更新成|更新到|更改为|更改成|升到|升为|升级为|升级到|升级成|降到|降为|搬到|搬去|挪到|转到|定为|定成|"
           r"设为|设成|设置为|设置成|修改为|修改成|涨到|涨为|降低到|提高到|增加到|减少到|变更为|改用|换用|成了|变了成)")
_COPULA = r"(?P<cop>是|为|叫|叫做|在|:|：|=|＝)"
_OWNER = r"(?:我的|我)"
_LEAD_ADJ = r"(?:现在的|目前的|新的|最新的|当前的)?"

_CHANGE_RE = re.compile(
    rf"^(?:把)?{_OWNER}?{_LEAD_ADJ}{_SLOT}\s*(?:从(?P<old>.{{1,24}}?))?\s*{_ADV}\s*{_CHANGE}\s*了?\s*(?P<value>.+)$"
)
_BA_RE = re.compile(
    rf"^(?:我们|我)?(?:{_ADV})?把\s*{_OWNER}?{_LEAD_ADJ}{_SLOT}\s*(?:从(?P<old>.{{1,24}}?))?\s*{_ADV}\s*{_CHANGE}\s*了?\s*(?P<value>.+)$"
)
_IS_RE = re.compile(rf"^{_OWNER}{_LEAD_ADJ}{_SLOT}\s*(?P<adv>{_ADV})\s*{_COPULA}\s*(?P<value>.+)$")
_LABEL_RE = re.compile(rf"^{_SLOT}\s*(?P<cop>[:：=＝])\s*(?P<value>.+)$")
_VALUE_FIRST_RE = re.compile(rf"^(?P<value>.{{1,20}}?)(?:现在|目前)?(?:是|就是)我(?:的)?{_LEAD_ADJ}{_SLOT}(?:了)?$")
_TOPIC_RE = re.compile(
    rf"^{_OWNER}?{_LEAD_ADJ}{_SLOT}\s*{_ADV}\s*(?:换了|改了|变了|调了|更新了|更改了|变动了|有变化|有变动|换过了|改过了|换掉了|"
    rf"改掉了|换新的了|换新了|换了新的|改新的了|也换了|又换了|又改了|"
    rf"不再是.+?了?|已经不是.+?了?|不是.+?了|以前是.+?|之前是.+?|原来是.+?|本来是.+?)(?:哈|啊|呀|哦|嘛|哟)?$"
)
_ABOUT_RE = re.compile(rf"^(?:关于|至于|说到|对于)\s*{_OWNER}?{_SLOT}(?:的话|嘛|呢)?$")
_ANAPHOR_RE = re.compile(
    rf"^(?:不过|但是|但|而|所以)?\s*(?:{_ADV})\s*(?:新的|新)?(?:改成了?|换成了?|变成了?|调到了?|改为|更新为|是|为|就是)\s*(?P<value>.+)$"
)

_LEAD_BLOCKERS = (
    "如果", "假如", "要是", "万一", "假设", "但愿", "希望", "想", "打算", "准备", "计划", "考虑", "可能", "也许",
    "大概", "或许", "应该会", "会", "将", "要", "说", "告诉", "听说", "据说", "觉得", "认为", "以为", "梦见",
    "梦到", "不", "没", "别", "是否", "是不是", "有没有", "猜", "怀疑", "不确定", "忘了", "以前", "之前", "原来",
    "本来", "曾经", "当时", "那时", "小时候",
)
_OTHER_OWNERS = (
    "同事", "朋友", "妈妈", "妈", "爸爸", "爸", "父母", "老婆", "老公", "妻子", "丈夫", "太太", "先生", "女朋友",
    "男朋友", "女友", "男友", "哥哥", "哥", "姐姐", "姐", "弟弟", "弟", "妹妹", "妹", "儿子", "女儿", "孩子", "老板",
    "领导", "上司", "室友", "邻居", "家人", "亲戚", "舅舅", "叔叔", "阿姨", "爷爷", "奶奶", "外婆", "外公", "同学",
    "客户", "他", "她", "它", "他们", "她们", "你", "你们", "别人", "大家", "对方", "队友", "导师", "老师", "经理",
    "助理", "秘书", "搭档", "合伙人", "伙伴", "闺蜜", "兄弟",
)
_SLOT_STOP = ("我", "你", "他", "她", "它", "把", "不", "没", "如果", "假如", "要是", "应该", "可能", "打算", "准备",
              "觉得", "认为", "是", "吗", "呢", "吧", "什么", "多少", "哪", "谁", "几", "现在", "目前", "如今", "以前",
              "之前", "原来", "刚才", "已经", "今天", "昨天", "明天")
_SLOT_BLOCK = frozenset({"意思", "天", "天哪", "想法", "问题", "看法", "建议", "理解", "意见", "感觉", "猜测",
                         "计划", "目标", "回答", "答案", "心情", "错", "错误", "习惯", "状态", "身体", "工作"})
_VALUE_MARKERS = ("什么", "多少", "哪", "吗", "几", "谁", "怎么", "如何")
_VALUE_BAD_START = ("不", "没", "也", "还", "就", "都", "否", "一样", "同样", "差不多", "这个", "那个", "这样",
                    "那样", "挺", "很", "太", "有点", "不错", "好")
_TRAIL = re.compile(
    r"(?:了|啦|哦|喔|噢|哈|哈哈|呀|啊|嘛|的|哟|呢|噢|么|～|~|…|\.\.\.|！|!|。|，|,|\s)+$"
    r"|(?:了)?(?:现在|目前|如今|今天起|从今天起|从现在起|开始|以后|以后就是这个|为准|这个|喔|为止)$"
)
_CHANGE_TAIL = re.compile(r"(?:今天起|从今天起|从现在起|以后|为准)$")
_MAX_VALUE_CHARS = 30


def _clean_value(raw: str) -> tuple[str, bool]:
    value = raw.strip()
    change = False
    previous = None
    while value != previous:
        previous = value
        value = value.strip().strip("\"'“”‘’「」『』")
        value = re.sub(r"[（(][^（）()]*[）)]$", "", value)
        m = _TRAIL.search(value)
        if m and m.start() > 0:
            if _CHANGE_TAIL.search(m.group(0)):
                change = True
            value = value[: m.start()]
    # "7楼，不是3楼" / "7楼而不是3楼": the contrast is not the value.
    value = re.split(r"(?:而不是|不是|而非|，|(?<!\d),|,(?!\d))", value, maxsplit=1)[0].strip()
    return value, change


def _valid_value(value: str) -> bool:
    if not value or len(value) > _MAX_VALUE_CHARS:
        return False
    if value.lower() in {"什么", "多少", "哪里", "哪儿", "哪个", "几", "谁"}:
        return False
    if any(marker in value for marker in _VALUE_MARKERS):
        return False
    if value.startswith(_VALUE_BAD_START):
        return False
    if value.endswith(("吧", "吗", "呢")):
        return False
    return not _HAS_CJK.search(value) or len(value) <= 20


def _slot(raw: str) -> str | None:
    """The user's own slot, normalised; None when someone else owns it or it is not a noun phrase."""
    slot = " ".join(raw.split()).strip()
    for prefix in ("我的", "把我的", "把", "我"):
        if slot.startswith(prefix) and len(slot) > len(prefix):
            slot = slot[len(prefix):].strip()
            break
    for adj in ("现在的", "目前的", "新的", "最新的", "当前的"):
        if slot.startswith(adj) and len(slot) > len(adj):
            slot = slot[len(adj):]
    if not slot:
        return None
    if "的" in slot:
        owner = slot.rsplit("的", 1)[0]
        if owner.endswith(_OTHER_OWNERS) or re.search(rf"(?:^|[^{_CJK}])?[小老阿][{_CJK}]$", owner):
            return None
    if re.match(r"(?:现|目|如|已|刚|今|昨|明|正|还|也|都|就|又|在)$", slot) or re.match(
            r"(?:现在|目前|如今|已经|今天|昨天|明天|正在|一直|刚刚|马上)", slot):
        return None  # an adverb, not a slot: "我现在住在上海"
    if not _HAS_CJK.search(slot):
        return clean_slot(slot)  # a Latin slot inside Chinese text: "我的office floor是3rd"
    if not 1 <= len(slot) <= 12 or slot in _SLOT_BLOCK:
        return None
    if any(stop in slot for stop in _SLOT_STOP):
        return None
    return slot


def _blocked(lead: str) -> bool:
    return any(word in lead for word in _LEAD_BLOCKERS)


def _found(slot_raw: str, value_raw: str, *, change: bool) -> Clause:
    slot = _slot(slot_raw)
    if slot is None:
        return None
    value, tail_change = _clean_value(value_raw)
    if not _valid_value(value):
        return None
    return Found(slot, value, change or tail_change)


_PAST_LEAD = re.compile(r"^(?:以前|之前|原来|原先|本来|过去|曾经|早先)(?:的)?\s*(?P<rest>.+)$")
_HEDGE_TAIL = re.compile(r"(?:吧|吗|呢|对吧|是吧|对不对|是不是)[？?！!。.]*$")


_BARE_IS_RE = re.compile(rf"^{_OWNER}?{_LEAD_ADJ}{_SLOT}\s*(?:其实|实际上)?\s*(?:应该是|应是|应为|是|为)\s*(?P<value>.+)$")


def parse_clause(clause: str, *, topic_open: bool, correcting: bool = False) -> Clause:
    """Read one Chinese sub-clause (no sentence punctuation inside).

    ``correcting``: the turn says an earlier statement was wrong ("打错了",
    "说错了"), so "工位应该是7楼" is the corrected value, not a guess.
    """
    clause = clause.strip().strip("\"'“”‘’「」『』 ")
    clause = re.sub(r"^(?:对了|另外|还有|然后|所以|嗯+|哦+|噢|啊|诶|哎|好的|好|那个|就是|话说|顺便说一下|顺便提一下|顺便|"
                    r"告诉你|跟你说|和你说|说一下|提一下|记一下|请记住|记住|记得|注意|更正一下|更正|纠正一下|纠正|"
                    r"补充一下|补充|更新一下|更新|刚才说错了|我说错了|说错了|不好意思|抱歉|其实|实际上|最新消息|通知一下|"
                    r"提醒一下|备注|另外说一下)[：:，,、\s]*", "", clause)
    if not clause:
        return None
    split = re.search(r"(?<![0-9A-Za-z])[:：]", clause)
    head, tail = (clause[: split.start()], clause[split.end():]) if split else (clause, "")
    if split and tail.strip():
        left = parse_clause(head, topic_open=False)
        if isinstance(left, Topic):  # "工位换新的了：K2-33"
            found = _found(left.slot, tail, change=True)
            if found is not None:
                return found
    if _HEDGE_TAIL.search(clause):
        return Blocked("a question or a hedge")
    owner = clause.find("我")
    lead = clause[:owner] if owner > 0 else ""
    past = _PAST_LEAD.match(clause)
    if past:  # "以前我的工位是3楼" / "原来的工位是3楼": the old value; what follows may say the new one
        m = _IS_RE.match("我的" + past["rest"].removeprefix("我的").removeprefix("我"))
        slot = _slot(m["slot"]) if m else None
        return Topic(slot, True) if slot else Blocked("a past value")
    if owner > 0 and _blocked(lead):
        return Blocked("lead-in")
    body = clause[owner:] if owner > 0 else clause
    if owner > 0 and lead and not re.fullmatch(r"[\s，,、：:]*(?:今天|现在|目前|从今天起|从现在起|最近|这周|本周|如今)?[\s，,]*", lead):
        # An unknown lead-in before 我: only plain time words may stand there.
        if not re.search(r"把$", lead):
            return None
    if correcting:
        m = _BARE_IS_RE.match(body)
        found = _found(m["slot"], m["value"], change=True) if m else None
        if found is not None:
            return found
    if _blocked_inside(body):
        return Blocked("a plan, report, hedge or negation")
    for pattern in (_BA_RE, _CHANGE_RE):
        m = pattern.match(body)
        if m:
            found = _found(m["slot"], m["value"], change=True)
            if found is not None:
                return found
    m = _TOPIC_RE.match(body)
    if m:
        slot = _slot(m["slot"])
        return Topic(slot, True) if slot else None
    m = _ABOUT_RE.match(body)
    if m:
        slot = _slot(m["slot"])
        return Topic(slot, False) if slot else None
    m = _IS_RE.match(body)
    if m:
        value = m["value"]
        if value.startswith(("不是", "不", "没")):
            return Blocked("negated")
        adv = m["adv"] or ""
        found = _found(m["slot"], value, change=any(a in adv for a in _ADV_CHANGE) or "现在的" in body[:6])
        if found is not None:
            return found
    m = _VALUE_FIRST_RE.match(body)
    if m:
        result = _found(m["slot"], m["value"], change=False)
        if result is not None:
            return result
    m = _LABEL_RE.match(body)
    if m:
        result = _found(m["slot"], m["value"], change=False)
        if result is not None:
            return result
    if topic_open:
        m = _ANAPHOR_RE.match(body)
        if m:
            value, _ = _clean_value(m["value"])
            if _valid_value(value):
                return Anaphor(value, True)
    return None


_INSIDE_BLOCKERS = re.compile(
    r"(?:不是|不再是|没有|没|别)(?=.{0,12}(?:是|改成|换成|变成))|(?:想|打算|准备|计划|考虑|可能|也许|或许|大概|应该会|"
    r"(?<![机社聚开晚学协工])会(?![议计员话场所长面见谈])|将(?![军来])|(?<![重主需只不])要(?![求点素])|想要)"
    r"(?:把|将)?.{0,14}(?:改成|换成|变成|调到|改为|搬到|是)|(?:说|告诉我|听说|据说|觉得|认为|以为)"
)


def _blocked_inside(body: str) -> bool:
    """A plan, report or hedge between the owner and the verb: "我打算把工位换成7楼", "我的工位可能是7楼"."""
    m = _INSIDE_BLOCKERS.search(body)
    if not m:
        return False
    # "不再是OLD了" and "不是OLD了" are topics (a change), read by _TOPIC_RE, not negations.
    return not re.search(r"(?:不再是|已经不是|不是).+?了$", body)
