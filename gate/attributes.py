"""One name per attribute: the canonical attribute table and the slot-name rules. Pure.

A model that writes one attribute under two names ("office floor", "floor
of my office") would make two registry slots: the older value would stay
"current" and the newest-per-slot protection would guard the wrong summary.
The gate therefore stores every summary slot under one name:

1. a name the attribute table knows (the built-in table below, per language,
   extended by the dataset and the configuration) is stored as its
   canonical name;
2. otherwise a name spelled like a slot the episode already has (case,
   width, punctuation, articles, possessives, "的") is stored as that slot;
3. otherwise the name is stored as written, and when it is a near-duplicate
   of a slot the episode already has (same words in another order, one name
   inside the other, a Chinese name with an extra prefix or suffix) the gate
   records a `slot_alias_suspected` event. It never merges those itself:
   an analyst decides, and a dataset's `attributes` mapping fixes the name.

Names are compared by exact keys after a fixed normalisation: no scoring,
no similarity, no model. The canonical names of the built-in table are the
slot names the synthetic generator plants, so gold facts and probes name
the slot the registry holds.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache

from ledgermem.gate.hanzi import fold

__all__ = ["BUILTIN_ATTRIBUTES", "AttributeTable", "Resolution", "Suspicion", "attribute_key", "name_facts",
           "near_duplicate", "table_for"]

#: canonical slot -> its other names, per language. A dataset extends it; a dataset's own slot name that is an
#: alias here becomes the canonical name of its attribute (the dataset's gold and probes name that one).
BUILTIN_ATTRIBUTES: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "en": {
        # the synthetic generator's slots
        "office floor": ("floor of my office", "office floor number", "floor at work", "work floor", "desk floor",
                         "office level", "floor my office is on"),
        "home Wi-Fi name": ("home wifi network", "home wifi network name", "home network name", "home wifi ssid",
                            "wifi name at home", "home wireless network name"),
        "coffee order": ("coffee", "usual coffee", "usual coffee order", "go-to coffee", "coffee preference",
                         "regular coffee order", "coffee drink"),
        "work laptop": ("work computer", "office laptop", "company laptop", "laptop for work", "work machine"),
        "alarm time": ("alarm", "morning alarm", "wake-up alarm", "alarm clock", "alarm clock time"),
        "target weight": ("goal weight", "weight goal", "weight target"),
        "emergency contact": ("emergency contact person", "ice contact", "in case of emergency contact"),
        "WeChat ID": ("wechat", "wechat handle", "wechat username", "wechat account", "weixin id"),
        "savings goal": ("savings target", "saving goal", "saving target", "savings goal amount"),
        "weekly running goal": ("running goal", "weekly run goal", "weekly running target", "running target",
                                "weekly mileage goal"),
        # the generator's constraints, open loops and poisoned slots
        "budget limit": ("budget cap", "budget ceiling", "maximum budget", "max budget"),
        "latest start time": ("latest departure time", "start time limit"),
        "maximum group size": ("max group size", "group size limit"),
        "dietary rule": ("dietary requirement", "dietary restriction", "diet rule"),
        "minimum hotel rating": ("min hotel rating", "hotel rating minimum", "minimum hotel stars"),
        "maximum flight length": ("max flight length", "longest flight", "maximum flight duration"),
        "parking spot": ("parking space", "parking bay", "parking place"),
        "spare key holder": ("spare key keeper", "keeper of my spare key"),
        "bank branch": ("branch of my bank", "home branch"),
        # common personal attributes
        "phone number": ("mobile number", "cell number", "cell phone number", "mobile phone number",
                         "telephone number", "phone no"),
        "email address": ("email", "e-mail", "e-mail address", "email addr"),
        "home address": ("address", "street address", "residential address", "home addr"),
        "birthday": ("date of birth", "birth date", "birthdate", "dob"),
        "favorite color": ("favourite color", "favourite colour", "favorite colour"),
        "hometown": ("home town", "town i grew up in"),
        "home city": ("city of residence", "residence city", "city i live in", "living city"),
        "job title": ("position title", "official title"),
        "employer": ("company i work for", "company i work at"),
        "blood type": ("blood group",),
        "shoe size": ("shoe sizes",),
    },
    "zh": {
        # the synthetic generator's slots
        "office floor": ("办公室楼层", "办公楼层", "公司楼层", "上班楼层", "办公室所在楼层", "工作楼层"),
        "工位": ("工位号", "工位号码", "座位号", "办公位", "工位编号"),
        "WiFi密码": ("无线密码", "无线网密码", "无线网络密码", "家里WiFi密码", "WiFi的密码"),
        "GitHub用户名": ("GitHub账号", "GitHub ID", "GitHub名", "GitHub帐号", "GitHub用户名称"),
        "车牌号": ("车牌", "车牌号码", "车牌照"),
        "手机": ("手机型号", "手机品牌", "用的手机"),
        "紧急联系人": ("紧急联络人", "应急联系人", "紧急情况联系人"),
        "闹钟时间": ("闹钟", "闹铃时间", "闹铃", "起床闹钟"),
        "月预算": ("每月预算", "月度预算", "每个月预算", "每月开支预算"),
        "常用邮箱": ("邮箱", "电子邮箱", "邮箱地址", "电子邮件地址", "常用邮箱地址"),
        "每日步数目标": ("每天步数目标", "日步数目标", "步数目标", "每天的步数目标"),
        # the generator's constraints, open loops and poisoned slots
        "预算上限": ("最高预算", "预算封顶", "预算最高"),
        "最晚出发时间": ("最迟出发时间",),
        "出行人数上限": ("最多出行人数", "人数上限"),
        "饮食要求": ("饮食限制", "饮食规定"),
        "酒店最低星级": ("最低酒店星级", "酒店星级下限"),
        "最长飞行时间": ("最长飞行时长", "飞行时间上限"),
        "停车位": ("车位", "停车位号", "车位号"),
        "备用钥匙保管人": ("备用钥匙在谁那", "备用钥匙保管者"),
        "开户支行": ("开户行", "开户银行支行"),
        # common personal attributes
        "咖啡口味": ("咖啡", "咖啡偏好", "常喝的咖啡", "喜欢的咖啡"),
        "手机号": ("手机号码", "电话号码", "联系电话", "电话"),
        "生日": ("出生日期", "生辰"),
        "居住城市": ("居住地", "所在城市", "常住城市", "住的城市", "居住的城市"),
        "家庭住址": ("住址", "家庭地址", "家的地址", "居住地址"),
        "血型": ("血液型",),
        "鞋码": ("鞋子尺码", "鞋号"),
    },
}

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff"
_HAS_CJK = re.compile(f"[{_CJK}]")
_JOINERS = re.compile(r"(?<=[a-z0-9])[-_·.](?=[a-z0-9])")  # Wi-Fi, e-mail, wake-up: one word
_POSSESSIVE = re.compile(r"(?<=[a-z0-9])'s\b")
_NOT_WORD = re.compile(r"[^a-z0-9" + _CJK + r"]+")
_DROPPED_WORDS = frozenset({"my", "the", "a", "an", "our", "your", "current", "present"})
_ZH_LEADS = ("我们", "我")  # after "的" is gone: "我的", "我们的"
#: Words that say nothing about which attribute a name is: dropped before two names' words are compared.
_EN_FILLER = frozenset({"of", "for", "at", "in", "on", "to"})
#: Chinese endings and beginnings that name no new attribute: a name that differs from another only by one of
#: these is reported with the rule "generic affix" rather than "contains".
_ZH_GENERIC = ("口味", "号码", "号", "名称", "名字", "名", "地址", "时间", "信息", "账号", "帐号", "类型",
               "型号", "偏好", "编号", "是什么", "常用", "每天", "每日", "每月", "目前", "现在", "平时")


@lru_cache(maxsize=8192)  # pure; the gate asks for the same few names every turn
def attribute_key(name: str) -> str:
    """The exact key a name is compared by: width, case, traditional characters, articles, possessives,
    punctuation and "的" do not matter; the words and their order do."""
    text = fold(unicodedata.normalize("NFKC", name)).lower().replace("’", "'")
    text = _POSSESSIVE.sub("", _JOINERS.sub("", text))
    if _HAS_CJK.search(text):
        text = _NOT_WORD.sub("", text).replace("的", "")
        for lead in _ZH_LEADS:
            if text.startswith(lead) and len(text) > len(lead):
                text = text[len(lead):]
                break
        return text
    return " ".join(w for w in _NOT_WORD.sub(" ", text).split() if w not in _DROPPED_WORDS)


def _reordered(key: str) -> str | None:
    """"floor of office" -> "office floor": an English "X of Y" read as "Y X" (one "of", words on both sides)."""
    words = key.split()
    if words.count("of") != 1 or _HAS_CJK.search(key):
        return None
    i = words.index("of")
    return " ".join(words[i + 1:] + words[:i]) if 0 < i < len(words) - 1 else None


def _words(key: str) -> frozenset[str]:
    out = set()
    for w in key.split():
        if w in _EN_FILLER:
            continue
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return frozenset(out)


def near_duplicate(a: str, b: str) -> str | None:
    """The rule by which two slot names look like one attribute ("reordered", "contains", "generic affix"),
    or None. Deterministic; names with equal keys are spellings of one name, not near-duplicates."""
    ka, kb = attribute_key(a), attribute_key(b)
    if not ka or not kb or ka == kb:
        return None
    if _HAS_CJK.search(ka) or _HAS_CJK.search(kb):
        ka, kb = ka.replace(" ", ""), kb.replace(" ", "")
        short, long_ = sorted((ka, kb), key=len)
        if len(short) < 2 or short == long_:
            return None
        if long_.startswith(short) or long_.endswith(short):
            rest = long_[len(short):] if long_.startswith(short) else long_[: len(long_) - len(short)]
            return "generic affix" if rest in _ZH_GENERIC else "contains"
        return None
    wa, wb = _words(ka), _words(kb)
    if not wa or not wb:
        return None
    if wa == wb:
        return "reordered"
    if wa < wb or wb < wa:
        return "contains"
    return None


@dataclass(frozen=True, slots=True)
class Resolution:
    """How one written slot name is stored: `slot`, and why (`table`, `spelling`, or `as written`)."""

    written: str
    slot: str
    how: str


class AttributeTable:
    """Keys of every known name -> its canonical name. Built once per configuration (`table_for`)."""

    __slots__ = ("_declared", "_lookup")

    def __init__(self, groups: Iterable[tuple[str, Iterable[str]]] = ()) -> None:
        self._lookup: dict[str, str] = {}
        self._declared: set[str] = set()
        for canonical, aliases in groups:
            self.add(canonical, aliases)

    def add(self, canonical: str, aliases: Iterable[str] = (), *, declared: bool = False) -> None:
        """Declare `canonical` and its aliases. A canonical name that is already known under another name
        takes that attribute over: every name of it now resolves to `canonical`, except a name declared
        canonical itself (`declared`: by a dataset or the configuration), which keeps its own."""
        canonical = " ".join(canonical.split())
        key = attribute_key(canonical)
        previous = self._lookup.get(key)
        if previous is not None and previous != canonical:
            for k, v in list(self._lookup.items()):
                if v == previous and not (previous in self._declared and k == attribute_key(previous)):
                    self._lookup[k] = canonical
        self._lookup[key] = canonical
        if declared:
            self._declared.add(canonical)
        for alias in aliases:
            k = attribute_key(alias)
            if k:
                self._lookup[k] = canonical

    def canonical(self, name: str) -> str | None:
        """The canonical name of `name` when the table knows it (as written, or "X of Y" as "Y X")."""
        key = attribute_key(name)
        found = self._lookup.get(key)
        if found is None:
            turned = _reordered(key)
            found = self._lookup.get(turned) if turned else None
        return found

    def knows(self, name: str) -> bool:
        return self.canonical(name) is not None

    def __len__(self) -> int:
        return len(self._lookup)

    def resolve(self, name: str, existing: Iterable[str]) -> Resolution:
        """Where `name` is stored, given the slots the episode already has (oldest first)."""
        written = " ".join(name.split())
        found = self.canonical(written)
        if found is not None:
            return Resolution(written, found, "table")
        key = attribute_key(written)
        for slot in existing:
            if attribute_key(slot) == key:
                return Resolution(written, slot, "spelling")
        return Resolution(written, written, "as written")


def _builtin_groups() -> list[tuple[str, tuple[str, ...]]]:
    return [(c, a) for lang in ("en", "zh") for c, a in BUILTIN_ATTRIBUTES[lang].items()]


@cache
def _table(builtin: bool, extra: tuple[tuple[str, tuple[str, ...]], ...]) -> AttributeTable:
    table = AttributeTable(_builtin_groups() if builtin else ())
    for canonical, aliases in extra:
        table.add(canonical, aliases, declared=True)
    return table


def table_for(attribute_table: str, slot_aliases: Mapping[str, Iterable[str]]) -> AttributeTable:
    """The table a configuration names: `builtin` (extended by `slot_aliases`) or `none` (only `slot_aliases`)."""
    extra = tuple((str(c), tuple(str(a) for a in aliases)) for c, aliases in slot_aliases.items())
    return _table(attribute_table == "builtin", extra)


@dataclass(frozen=True, slots=True)
class Suspicion:
    """A new slot name that looks like one the episode already has (`rule` says how)."""

    slot: str
    existing: str
    rule: str


def name_facts(table: AttributeTable, facts: Iterable[tuple[str, str]], existing: Iterable[str]) -> tuple[
        tuple[tuple[str, str], ...], tuple[tuple[str, str], ...], tuple[Suspicion, ...]]:
    """(facts under their stored names, (written, stored) for each renamed slot, suspected aliases).

    Two facts that end in one slot keep the later one, as a restatement in
    one summary does. Only a name the table does not know, new to the
    episode, is compared with the episode's slots (and the earlier new ones
    of the same summary); a pair the table knows both names of is never
    suspected: the table says they differ.
    """
    known = list(dict.fromkeys(existing))
    stored: dict[str, str] = {}
    renamed: dict[tuple[str, str], None] = {}
    suspected: list[Suspicion] = []
    for slot, value in facts:
        r = table.resolve(slot, known)
        if r.slot != slot:
            renamed[(slot, r.slot)] = None
        if r.how == "as written" and r.slot not in known:
            suspected += [Suspicion(r.slot, other, rule) for other in known
                          if (rule := near_duplicate(r.slot, other)) is not None]
        if r.slot not in known:
            known.append(r.slot)
        stored.pop(r.slot, None)
        stored[r.slot] = value
    return tuple(stored.items()), tuple(renamed), tuple(suspected)
