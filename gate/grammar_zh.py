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

from ledgermem.gate.clauses import Anaphor, Blocked, Clause, Found, Topic
from ledgermem.gate.values_en import clean_slot

__all__ = ["bare_value", "is_afterthought", "parse_clause", "topic_of_question"]

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff"
_HAS_CJK = re.compile(f"[{_CJK}]")
_SLOT_CHARS = rf"[{_CJK}A-Za-z0-9 _\-()]"
_SLOT = rf"(?P<slot>{_SLOT_CHARS}{{1,18}}?)"
_ADV = (r"(?:现在|目前|如今|已经|已|刚刚|刚|其实|实际上|实际|真的|也|还|就|都|暂时|最近|正式|终于|又|重新|今天|这周|本周|"
        r"最后|最终|后来|自[^，,]{1,6}?起|从[^，,]{1,6}?起|即日起|"
        r"早就|早已|一直|始终|还是|不得不|只好|只能|已经被我|已被我|被我|已被|被|现已|均|亦|则|便|特|仍|仍然|依然|照样|一向|向来|这些年|多年来|"
        r"这[\d一两二三四五六七八九十几]+(?:年|个月|天|周)|年初|年底|年中|去年|今年|上半年|下半年|前些天|前些日子|这两天|"
        r"近[\d一两二三四五六七八九十几]+(?:年|个月)|相应|随之|同步|"
        r"确(?=为|是|实)|确实|的确|现(?=变更|改|调整|更新|换|为|是)|应(?=为|是|更正|改为|调整)|跟着|随着|直接|干脆|而家|已经|最后|总算|就(?=定)|"
        r"上个?(?:礼拜|星期|月)|上周末?|这周末|周末|跟著|隨著|随着|前几天|前两天|前天|昨天|月初|月底|这几天|前阵子|前段时间|刚才|"
        r"从来都|从来|打?从一开始就|一开始就|最初就|依旧|仍旧|照旧|(?:好多|好几|很多|这么多|这些|许多)年(?:来|都|了)?|多年|常年|长期|"
        r"(?:这个?|上个?|本|下个?)?(?:月|周|星期|礼拜|年)(?:起|开始)|才|顺便|顺带|顺手|一并)*")
_ADV_CHANGE = ("现在", "目前", "如今", "已经", "已", "刚刚", "刚", "其实", "实际上", "终于", "最近", "正式", "重新", "又",
               "早就", "早已", "被", "现已")
_CHANGE = (r"(?P<verb>改成|改为|改到|改回|换成|换为|换到|换回|变成|变为|变回|调成|调为|调到|调整为|调整到|调整成|"
           r"更新为|更新成|更新到|更改为|更改成|升到|升为|升级为|升级到|升级成|降到|降为|搬到|搬去|挪到|转到|定为|定成|"
           r"设为|设成|设置为|设置成|修改为|修改成|涨到|涨为|降低到|降低为|提高到|提高为|增加到|增加为|减少到|减少为|"
           r"变更为|变更成|改用|换用|成了|登记为|登记成|记为|记成|写成|写为|填为|填成|切换到|切换成|切换为|调换为|"
           r"更换为|更换成|替换为|替换成|更正为|更正成|改正为|回到|重回|确定为|确定成|核定为|调回|改回到|换回到|恢复为|恢复成|恢复到|切到|切成|切为|切回|"
           r"change成|change到|changed?\s+to\s+|update成|update为|updated?\s+to\s+|switch成|switch到|转了做|转成|转为|改了做|(?<=就)定(?![下了好来])|落在|定在|弄成了|搞成了|(?:变|换|改)了\s*(?:现在|而家|目前)(?:是|系|为)|"
           r"改(?![了过掉成为到回用变动天日好一个完下正善名口进革])(?=\S{2,})|换了成|改了成|记录为|记录成|存为|保存为|标记为|改做|改了做|变做|换做|转做|弄成|搞成|定了|设了|选了|→|->|换(?![了过掉成为到回用新个一])|"
           r"变(?![了过掉成为到回化动更])(?=[A-Za-z0-9]))")
_COPULA = (r"(?P<cop>\s+is\s+|\s*==\s*|(?:用|选|填|设|定|登记|留)的就是|(?:用|选|填|设|定|登记|留)的是|显示(?:的)?是|显示为|(?<=现在|目前|一直|平时)用(?![了过着])|(?<=[A-Za-z0-9\u3400-\u9fff])(?:用|选|填|设|登记)的(?=\s*[^\s是就])|乃|"
           r"就(?:记|写|填|用)(?=\S{2,})|就(?![是在要会能得不没好行可用也都记写填])(?=\S{2,})|是|(?<![华因作成认以行更变改])为|(?<![联关体派院维干])系(?![统列数])|叫|叫做|在|(?<![0-9]):|(?<![0-9])：|=|＝)")
_OWNER = (r"(?:本人的|本人|我(?:自己)?(?:这边|这儿|这里|那边)(?:的)?|我自己(?:用|选|填|登记|设|定)?的|我(?:那个|这个|那|这|个|嘅|哋)|我[得地](?=\S{1,14}?(?:是|为|[：:]))|我(?:平时|一直|现在|目前|常|经常|还)?(?:在用|用着|常用|用|登记|留|填|设|定|选)的|"
          r"我的|我)")
_LEAD_ADJ = r"(?:现在的|目前的|新的|最新的|当前的|新)?"

_CHANGE_RE = re.compile(
    rf"^{_OWNER}?{_LEAD_ADJ}{_SLOT}\s*{_ADV}\s*(?:(?:从|(?<![路理自缘])由)(?P<old>.{{1,24}}?))?\s*(?:帮我|请帮我|请|麻烦)?\s*{_ADV}\s*{_CHANGE}"
    rf"\s*了?\s*(?P<value>.+)$"
)
_BA_RE = re.compile(
    rf"^(?:(?:麻烦|烦请|请)(?:您|你)?(?:帮我|帮忙)?|帮我|帮忙|现|我们|我(?:[^，,我]{{1,4}}?帮我)?|本人)?(?:{_ADV})?(?:把|将)\s*{_OWNER}?{_LEAD_ADJ}{_SLOT}\s*"
    rf"(?:(?:从|(?<![路理自缘])由)(?P<old>.{{1,24}}?))?\s*{_ADV}\s*{_CHANGE}\s*了?\s*(?P<value>.+)$"
)
_IS_RE = re.compile(rf"^{_OWNER}{_LEAD_ADJ}{_SLOT}\s*(?P<adv>{_ADV})\s*{_COPULA}\s*(?P<value>.+)$")
_BARE_NOW_RE = re.compile(rf"^{_SLOT}\s*(?P<adv>(?:现在|目前|如今|已经|现已|已)+{_ADV})\s*(?:是|为)\s*(?P<value>.+)$")
_NOW_NO_COPULA_RE = re.compile(rf"^{_SLOT}\s*(?:现在|目前|如今)(?!是|为|在|的|还|也|都|就|又|已|正|要|会|能|可|得|很|挺|太|非常|比较|更|最|好|不|没|有)"
                                rf"(?P<value>\S.{{1,30}})$")  # "工位现在9楼"
_TERSE_NOW_RE = re.compile(rf"^{_SLOT}\s*现(?:为|是)?(?![在场金代象实])(?P<value>\S.+)$")
_LABEL_RE = re.compile(rf"^(?![0-9]){_SLOT}\s*(?P<cop>(?<![0-9])[:：]|[=＝]|——)\s*(?P<value>.+)$")
_WAS_NOW_RE = re.compile(  # "工位变更：原3楼，现7楼"
    rf"^(?![0-9]){_SLOT}\s*(?:变更|更新|调整|修改|变动)?\s*[：:]\s*(?:由|原|原来|以前|之前)(?:为|是)?(?P<old>[^，,]+?)[，,]\s*"
    rf"(?:现|现在|改为|变更为|更新为|调整为|改成)(?:为|是)?(?P<value>.+)$"
)
_BARE_COPULA_RE = re.compile(rf"^(?:现在的|目前的|当前的)?(?:新的|新)?{_SLOT}\s*(?:就|也|还|一直|仍然|依然|依旧|仍旧|始终|从来都|从来|一向|向来)?是\s*(?P<value>.+)$")
_WAS_RE = re.compile(rf"^(?![0-9]){_SLOT}\s*(?:变更|更新|调整|修改|变动)?\s*[：:]\s*(?:由|原|原来|以前|之前)(?:为|是)?(?P<old>.+)$")
_IF_YOU_NEED_RE = re.compile(rf"^(?:要是|如果|万一|假如)你(?:哪天|以后|之后|什么时候)?(?:需要|要|想要|想知道|用得上)(?:我的)?{_SLOT}$")
_REMEMBER_SAID_RE = re.compile(
    rf"^(?:(?:你)?还?记得我(?:说|讲|提)过?|(?:你)?还?记得(?=我)|(?:之前|上次|以前)(?:我)?(?:提过|说过|讲过|告诉过你)|"
    rf"(?:你|您)(?:那边|那儿|这边|那里)?(?:记的|存的|登记的|记录的))(?:的)?(?:我的|我)?{_SLOT}(?:是|为|还是)"
    rf"(?P<old>.+?)(?:吗|嘛|不|对吧|是吧|吧)?$")
_DIFFERENT_RE = re.compile(rf"^.{{0,8}}的{_SLOT}(?:(?:跟|和|与)我(?:的)?不一样|五花八门|各不相同|各有不同|都不一样|不尽相同|千奇百怪|"
                           rf"各种各样|各式各样)$")
_IT_IS_THIS_RE = re.compile(rf"^{_OWNER}{_SLOT}(?:一直|也|还|都)?(?:用的|选的|填的)?(?:就是|是)(?:这个|这|它|这一个)$")
_PAREN_VALUE_RE = re.compile(rf"^{_OWNER}{_SLOT}\s*[（(](?P<value>[^（）()]+)[）)]\s*(?:一直|从来|还是|也)?(?:没变过?|没改过?|不变|没换过?)$")
_OWNED_SLOT_RE = re.compile(rf"^(?:本人的|本人|我(?:那个|这个|那|这)|我的){_SLOT}$")
_VALUE_FIRST_RE = re.compile(
    rf"^(?P<value>.{{1,24}}?)(?:现在|目前)?(?:是|就是|才是|(?:正式|已经|已)?(?:成了|成为了?|变成了?))(?:我(?:的|在用的|用的|现在用的|新的|现在的|常用的|登记的|留的|填的|选的|设的|自己的|自己用的|一直用的|平时用的|那个|这个|个|嘅)?|本人的?){_LEAD_ADJ}{_SLOT}(?:了|哦|哈|啦|啊|呀|哟|嘛|呢)?$"
)
_TOPIC_FRONT_RE = re.compile(  # "工位我选了7楼", "工位我用的是7楼"
    rf"^{_SLOT}\s*(?:这块儿?|这边|方面|嘛|呢|的话|这一?栏|那一?栏|这一?项|那一?项|一栏|一项|这?部分|这个)?[，,\s]*我(?:的|这里|这边|这儿)?\s*(?:现在|目前|一直)?\s*"
    rf"(?:选了|选的是|选的|用的是|用的|用|定了|定的是|设的是|设成了?|填的是|填的|填了|写的是|写的|报的是|报的|登记的是|是|就是|换成了?|改成了?|换到了?|改到了?)\s*(?P<value>.+)$"
)
_TOPIC_RE = re.compile(
    rf"^{_OWNER}?{_LEAD_ADJ}{_SLOT}\s*{_ADV}\s*(?:换了|改了|变了|调了|更新了|更改了|变动了|有变化|有变动|换过了|改过了|换掉了|"
    rf"改掉了|换掉了|换新的了|换新了|换了新的|改新的了|也换了|又换了|又改了|又变了|变啦|换啦|改啦|弄好了|搞定了|办好了|定下来了|"
    rf"(?:那边|这边)?(?:帮我)?(?:更新|改|换)一下|我?重新(?:弄|换|改|搞|设)了(?:一个|个新的|一?下)?|拍板了|敲定了|"
    rf"不再是.+?了?|已经不是.+?了?|不是.+?(?:了|喇)|不用.+?了|不要.+?了|弃了.+?|弃用了?.+?|告别了?.+?|换掉了?.+?|以前是.+?|之前是.+?|原来是.+?|本来是.+?|有改(?:动|过)?|有变(?:过)?|有更新|有调整|不对了?|错了|(?:要|得|需要)(?:改|更新|换)(?:一下)?)(?:哈|啊|呀|哦|喔|嘛|哟|啦|呢|喇|啰|喽|咯|囉)*$"
)
_FORGET_ZH_RE = re.compile(rf"^我?(?:老|总|总是|一直|经常|又)?(?:记不住|记不得|记不清|忘记|忘了)(?:自己的|我的)?{_SLOT}$")  # "我老记不住自己的X，是V"
_TELL_YOU_RE = re.compile(rf"^我(?:想|要)(?:告诉|跟|和|给)你(?:说|讲)?(?:一下)?(?:我的|本人的){_SLOT}$")  # "我想告诉你我的X。它是V"
_THEY_BA_RE = re.compile(rf"^\S{{1,6}}?(?:给我|帮我|替我)把(?:我的)?{_SLOT}(?:换|改|调|更新|变)了$")  # "公司给我把X换了，今天起是V"
_I_CHANGED_RE = re.compile(rf"^(?:我|本人)?(?:已经|刚|刚刚|又)?(?:(?:换了|改了|更新了|调了|更换了|变更了)(?:一下)?|有了?)(?:个|一个)?(?:新的?)?(?:我的|本人的)?{_SLOT}了?$")
#: "我换X了": the verb before the slot, 了 after it
_I_CHANGED_AFTER_RE = re.compile(rf"^(?:我|本人)(?:已经|刚|刚刚|又)?(?:换|改|更新|更换|变更)(?:个|一个)?(?:新的?)?{_SLOT}了$")  # "我换了X，现在是V"
_FROM_NOW_RE = re.compile(rf"^(?:今后|以后|往后|从今往后|从今以后|从现在起)?{_OWNER}?{_SLOT}\s*(?:一律|都|就|统一)?按(?:照)?(?P<value>.+?)(?:来|处理|算|填|写)$")
_DASH_NEW_RE = re.compile(rf"^(?P<value>[^，,——]{{1,24}}?)\s*——\s*(?:我的)?(?:新的|新)(?P<slot>{_SLOT_CHARS}{{1,18}}?)$")  # "V——新X"
_SLOT_BA_RE = re.compile(rf"^{_OWNER}?{_SLOT}\s*(?:我)?(?:已经|刚|又)?(?:把|将)(?P<old>.{{1,24}}?)\s*{_CHANGE}\s*了?\s*(?P<value>.+)$")  # "X把OLD换成V了"
_NEW_BARE_RE = re.compile(rf"^(?:新的|新)(?P<slot>{_SLOT_CHARS}{{1,18}}?)\s*(?:是|为)\s*(?P<value>.+)$")  # "OLD作废了，新的X是V"
_NO_LONGER_MINE_RE = re.compile(rf"^(?P<old>.{{1,24}}?)(?P<neg>不再是|已经不是|不是)我的{_SLOT}(?P<le>了?)$")  # "3楼不再是我的工位了"
_DONE_WITH_RE = re.compile(rf"^(?:刚|才|终于|总算)?(?:折腾完|弄完|搞完|搞定|处理完|改完|换完|弄好|搞好)了?{_OWNER}?{_SLOT}$")
_TOLD_WRONG_RE = re.compile(  # "我之前给你的工位是错的": what follows is the right value
    rf"^我?(?:之前|上次|刚才|刚刚|以前|前面)?(?:给|告诉|跟|和|发)你(?:说)?的{_SLOT}(?:(?:是|写|填)?错的?了?|不对|有误|有错)$")
_APPLY_CHANGE_RE = re.compile(rf"^(?:现|特)?(?:申请|要求|需要)?(?:变更|更改|修改|更新)(?:本人的?|我的){_SLOT}$")  # "现申请变更本人工位"
_WROTE_WRONG_RE = re.compile(rf"^(?:刚才|刚刚|之前|上次)?(?:那个|我的)?{_SLOT}(?:写|打|说|记|填)错了$")  # "刚才那个工位写错了"
_SAID_AS_RE = re.compile(rf"^我?(?:之前|前面|刚才|刚刚|上次)?(?:把|将)(?:我的)?{_SLOT}(?:说|写|打|记|填)(?:成|为)(?P<old>.{{1,24}}?)了$")  # "我前面把X说成A了"
_ASKS_FOR_RE = re.compile(  # "表格上要填X", "订票的时候会问X", "系统提示缺X": a form asks for the slot; mine follows
    rf"^[^，,我你他她=＝:：是为把将改换变]{{0,12}}?(?:(?:要(?:求)?|让|需要)(?:(?:我的|本人的|我)?(?:填|写|提供|输入|填写)|(?=我的|本人的))|会问|问到|提示缺|缺)"
    rf"(?:我的|本人的)?(?P<slot>{_SLOT_CHARS}{{1,18}}?)$")
_SLOT_WAS_AT_FIRST_RE = re.compile(  # "我X最初是A，后来改成了B": the first value; what follows says the new one
    rf"^{_OWNER}?{_SLOT}(?:最初|起初|当初|原来|原先|本来|一开始|刚开始)(?:的时候)?(?:是|为|用的是)(?P<old>.{{1,24}})$")
_IF_ASKED_RE = re.compile(rf"^(?:如果|要是|万一)(?:有人|别人|谁)(?:问起|问到|问)(?:我的|我)?{_SLOT}$")
_LANDED_ON_RE = re.compile(rf"^{_OWNER}?{_SLOT}\s*{_ADV}\s*(?:落在|定在|停在)了?(?P<value>.+?)上$")  # "工位最后落在7楼上"
#: "我那个原来是A的X": a relative clause names the old value; what follows says the new one
_WAS_REL_RE = re.compile(rf"^{_OWNER}?(?:原来|以前|之前|原先|本来)(?:是|用的是|用的|为)(?P<old>[^，,的]{{1,24}})的{_SLOT}$")
#: "我的X A→V": a note with the slot, the old value and the new one
_NOTE_ARROW_RE = re.compile(rf"^{_OWNER}{_SLOT}\s+(?P<old>[^\s→>]+)\s*(?:→|->|=>)\s*(?P<value>.+)$")
#: "V——新X", "V，我的新X": only the slot, said new, after its value
_NEW_SLOT_RE = re.compile(rf"^(?:我的|本人的?)?(?:新的|新)(?P<slot>{_SLOT_CHARS}{{1,18}}?)$")
#: "X啊就是已经不是A了是V": no longer the old value, now the new one, said in one breath
_NO_LONGER_BUT_RE = re.compile(rf"^(?:{_OWNER}?{_SLOT}\s*(?:啊|呀|呢|嘛)?)?\s*(?:就是)?{_ADV}(?:不再是|不是)(?P<old>[^，,]{{1,24}}?)(?:了|啦)"
                               rf"\s*(?:现在|而是)?(?:是|为)(?P<value>.+)$")
#: "是V，X没变过": the slot said unchanged, its value before or after it
_UNCHANGED_RE = re.compile(rf"^{_OWNER}?{_SLOT}(?:一直|从来|都|也|还)?(?:没变过?|没换过?|没改过?|没动过|没有变过?|没有换过?|不曾变过?)(?:哦|啊|呀)?$")
_FILL_RE = re.compile(rf"^{_OWNER}?{_SLOT}\s*(?:填|写)(?:的是)?\s*(?P<value>.+?)就(?:对了|行了?|好了?|可以了?)$")
_SORTED_RE = re.compile(
    rf"^(?:就|于是|所以|干脆|后来)?(?:终于|总算|刚|已经)?(?:把|将){_OWNER}?{_SLOT}\s*(?:搞定|弄好|办好|改好|换好|处理好|定下来|换了|改了|更新了)了?$"
)
_ABOUT_RE = re.compile(
    rf"^(?:(?:(?:比如说|比如|例如|譬如)(?=\S{{2}})|关于你(?:之前|刚才|刚刚|刚)?问的|你(?:之前|刚才|刚刚|刚|上次|前面)?问(?:的|到的|过的)(?:那个|这个)?|回你(?:之前|刚才|刚刚|刚)?问的|"
    rf"关于|至于|说到|对于|说起|提到|你(?:之前|刚才|刚刚|刚|上次|前面)?问(?:过)?(?:我)?|问)\s*{_OWNER}?{_SLOT}"
    rf"(?:的话|嘛|呢|啊|呀|这块儿?|方面|这个|一项|这一?项|一栏|这一?栏|的问题(?:回你一下|回复一下|答复一下)?)?"
    rf"|{_OWNER}?(?P<slot2>{_SLOT_CHARS}{{1,18}}?)(?:的话|这块儿?|这边|方面|呢|嘛|的部分|这个|这一项|的问题(?:回你一下|回复一下|答复一下)?)(?:喔|哦|啊|呀|呢)?"
    rf"|(?:大家|他们|我们|同事们?|朋友们?)?(?:都)?(?:在)?(?:聊|说|问|讨论|比(?!如)|对比|晒|比较)(?:起|了)?(?P<slot3>{_SLOT_CHARS}{{1,18}}?))$"
)
_ANAPHOR_RE = re.compile(
    rf"^(?:不过|但是|但|而|所以)?\s*(?:这次|这回|如今)?\s*(?:{_ADV})\s*(?:新的|新)?(?:(?:更新|变更|修改|调整|更改|改)后(?:的)?(?:为|是)|改用|换用|改成用|对的是|正确的是|正确的应该是|"
    rf"应该是|就说是|就说|弄成了?|搞成了?|变成了?|变(?!更)|系|填|写|改成了?|换成了?|变成了?|调到了?|改为|更新为|变更为|现为|现是|现|是|为|就是|"
    rf"我(?:的|这里|这边|这儿)?(?:就|也|还|则)?是|我(?:这些年|这几年|多年来|一直|始终|向来|一向)+(?:都)?是|我的呢是|它是|这个是|我用的是|用的是|我用|我选了|我选的是|我定的是|我现在用|(?:本人|我)(?:所用|所填|所选)(?:的)?(?:为|是)|"
    rf"(?:你)?(?:就)?(?:把它|它)?(?:记为|记成|记作|写成|写为|写作)|改(?!了))\s*(?P<value>.+?)(?:吧|就行了?|就好了?|就可以了?)?$"
)
_AS_MY_RE = re.compile(
    rf"^(?:(?:劳驾|麻烦|烦请|请|请您|帮我|帮忙)(?:您|你)?(?:帮我|帮忙)?)?(?P<me>我|本人)?{_ADV}"
    rf"(?:将|把|拿|用)(?P<value>(?:[^，,]|(?<=\d),(?=\d)){{1,24}}?)(?:登记为|登记成|记为|记成|记作|写作|写成|存为|存成|保存为|设为|设成|设置为|设置成|当作|当成|当|作为|做)"
    rf"(?P<own>我的|本人的|我|本人)?{_LEAD_ADJ}{_SLOT}$"
)
_BACK_RE = re.compile(rf"^(?:(?:这|那)(?:个|一个)?)?(?:就|才)?是我(?:的|新的|现在的|在用的|用的)?{_LEAD_ADJ}{_SLOT}(?:了|哦|哈|啦|啊|呀|哟|嘛|呢)?$")
#: "V，我的X现在是这个了", "V！我的X刚改的", "V——我的X，记好", "V呀，我嘅X嚟㗎": the value said first, the slot after it
_BACK_TAIL_RE = re.compile(rf"^(?:我的|我|本人的?){_LEAD_ADJ}{_SLOT}\s*(?:现在|目前|以后)?(?P<tail>(?:就|也)?是这个|就这个|用这个|(?:是)?刚(?:改|换|更新)的|"
                           rf"新(?:改|换)的|嚟㗎|来的|[，,\s]*记好|[，,\s]*记住|[，,\s]*记一下)(?:了|哦|哈|啦|啊|呀|喔)*$")
_DEHUA_RE = re.compile(rf"^{_OWNER}?{_SLOT}的话\s*(?:是|为|就是|就)?\s*(?P<value>.+)$")

_LEAD_BLOCKERS = (
    "如果", "假如", "要是", "万一", "假设", "但愿", "希望", "想", "打算", "准备", "计划", "考虑", "可能", "也许",
    "大概", "或许", "应该会", "说", "告诉", "听说", "据说", "觉得", "认为", "以为", "梦见", "梦到", "别", "是否",
    "是不是", "有没有", "猜", "怀疑", "不确定", "忘了", "曾经", "当时", "那时", "小时候", "要不要", "该不该",
    "倘若", "若是", "假若", "如若", "一旦", "万一", "若", "写着", "显示", "上面写", "表上", "记录上", "系统里", "据",
    "就当", "权当", "姑且", "讲", "講", "諗住", "谂住", "諗", "谂",
)
_OTHER_OWNERS = (
    "同事", "朋友", "妈妈", "妈", "爸爸", "爸", "父母", "老婆", "老公", "妻子", "丈夫", "太太", "先生", "女朋友",
    "男朋友", "女友", "男友", "哥哥", "哥", "姐姐", "姐", "弟弟", "弟", "妹妹", "妹", "儿子", "女儿", "孩子", "老板",
    "领导", "上司", "室友", "邻居", "家人", "亲戚", "舅舅", "叔叔", "阿姨", "爷爷", "奶奶", "外婆", "外公", "同学",
    "客户", "他", "她", "它", "他们", "她们", "你", "你们", "别人", "大家", "对方", "队友", "导师", "老师", "经理",
    "助理", "秘书", "搭档", "合伙人", "伙伴", "闺蜜", "兄弟", "我们", "咱们", "组", "团队", "部门", "公司",
    "閨蜜", "媽媽", "媽", "老闆", "同學", "領導", "鄰居", "親戚", "兒子", "女兒", "男朋友", "女朋友", "室友",
)
_SLOT_STOP = ("我", "你", "他", "她", "它", "把", "将", "不", "没", "如果", "假如", "假设", "假若", "万一", "要是", "应该", "可能", "打算", "准备", "想用", "想要", "想换", "想改", "讲", "講", "跑去", "諗", "谂", "希望", "但愿",
              "觉得", "认为", "是", "吗", "呢", "吧", "什么", "多少", "哪", "谁", "几", "现在", "目前", "如今", "以前",
              "之前", "原来", "刚才", "已经", "今天", "昨天", "明天", "被", "已", "一直", "这块", "这是", "就是", "并非",
              "并不", "不是", "绝非", "并未", "这次", "这回", "后来", "上个月", "这个月", "下个月", "上周",
              "上礼拜", "前几天", "前天", "月初", "月底", "明显", "显然", "肯定", "估计", "好像", "似乎",
              "示例", "例子", "样例", "模板", "主角", "角色", "小说", "比如", "例如", "譬如", "可以", "本人", "倘若", "如果", "但", "那是", "那", "们")
_SLOT_WHOLE_STOP = frozenset({"的", "是", "了", "呢", "啊", "算了", "里", "边", "儿", "这里", "这边", "那里", "那边", "新的", "新", "旧的", "现在的", "目前的", "原来的", "这个", "那个",
                              "嘛", "呀", "话", "的话", "对的", "弄", "搞", "用的", "选的", "定的", "填的", "设的", "登记的", "留的",
                              "换", "改", "变", "调", "换了", "改了", "所用", "所填", "所选", "结果", "帮", "请", "麻烦", "帮忙"})
_SLOT_BLOCK = frozenset({"意思", "天", "天哪", "想法", "问题", "看法", "建议", "理解", "意见", "感觉", "猜测",
                         "计划", "目标", "回答", "答案", "心情", "错", "错误", "习惯", "状态", "身体", "工作", "事",
                         "东西", "情况", "信息", "资料", "事项",
                         # a form's own fields, not facts about the user: "变更原因：工作调整"
                         "原因", "变更原因", "修改原因", "理由", "备注", "说明", "附件", "申请人", "项目", "变更项目",
                         "修改项目", "内容", "主题", "标题", "变更后", "变更前", "更新后", "修改后", "调整后", "新值",
                         "旧值", "原值", "现值", "日期", "结果", "处理结果",
                         # discourse words that stand before 是 without naming an attribute: "主要是图省事"
                         "主要", "关键", "重点", "记", "备忘", "笔记", "好处", "坏处", "优点", "缺点", "目的", "毕竟", "反正", "一来", "二来"})
# A form names the field in one label and gives its value in another: "项目：工位；内容：7楼".
_ITEM_LABELS = frozenset({"项目", "变更项目", "修改项目", "更新项目", "登记项目", "事项", "字段", "信息项", "主题"})
#: How the user found the value, before giving it: "我查了一下", "刚确认过", "我看了下"
_CHECKED = re.compile(r"(?:我|本人)?(?:刚|刚刚|特意|专门)?(?:查|看|问|确认|核对|核实|翻)(?:了|过)?(?:一下|一遍|下)?(?:了)?")
#: An interview written as lines of question and answer: "问：X" names the field, "答：V" gives its value
_ASK_LABELS = frozenset({"问", "问题", "提问"})
_ANSWER_LABELS = frozenset({"答", "回答", "答复"})
_VALUE_LABELS = frozenset({"内容", "变更后", "更新后", "修改后", "调整后", "新值", "现值", "新内容", "变更内容", "登记内容",
                           "填写内容", "值", "新的"})
_VALUE_MARKERS = ("什么", "多少", "哪", "吗", "几", "谁", "怎么", "如何", "啥")
_VALUE_BAD_START = ("不是", "不再", "不用", "不要", "不会", "不想", "不知", "不清楚", "不确定", "不一样", "没", "也", "还是",
                    "就是", "都", "否", "一样", "同样", "差不多", "这", "那", "挺好", "很好", "太好", "有点", "不错", "好的",
                    "我", "你", "他", "她", "在", "是", "它", "如果", "假如", "要是", "笔误", "错的", "写错", "打错", "从来",
                    "早就", "早已", "已经不", "早不")
_TRAIL = re.compile(
    r"(?:了|啦|哦|喔|噢|哈|哈哈|呀|啊|嘛|的|哟|呢|噢|么|呗|咯|捏|耶|齁|囉|咧|唷|㗎|嚟|喎|啫|嘞|喇|啰|哒|句号|逗号|就这样|对没错|没错|好久|记好|✔|✓|"
    r"～|~|…|\.\.\.|！|!|。|，|,|；|;|—|－|\s)+$"
    r"|(?:了)?(?:现在|目前|如今|今天起|上岗|接班|上任|从今天起|从现在起|开始|以后|以后就是这个|为准|这个|喔|为止|特此告知|请查收|"
    r"请知悉|谢谢|多谢|感谢|麻烦了|辛苦了|算了|才对|才是对的|就对了|就行了?|就好了?|就可以了?|没错|没错的|对的)$"
)
_CHANGE_TAIL = re.compile(r"(?:今天起|从今天起|从现在起|以后|为准)$")
#: A spoken turn with no punctuation runs its request on after the value: "V记住啊", "V你帮我记一下", "V就这个",
#: "V了记得改一下", "V你更新一下", "V好了".
_SPOKEN_TAIL = re.compile(r"(?<=[A-Za-z0-9\u3400-\u9fff@.%])(?:了|啦)?(?:就这个|就这样吧?|好了|"
                          r"(?:你|您)?(?:帮我|给我)?(?:记得)?(?:记住|记一下|记下|记着|记好|更新一下|改一下|存一下|同步一下))"
                          r"(?:啊|哈|哦|呀|吧|了|啦|哟)*$")
# Asides in brackets that are not part of the value: "（之前是3楼）", "（已更新）".
_PAREN_ASIDE = re.compile(r"[（(](?:原|之前|以前|已|新|注|备注|即|不是|旧|变更|更新|特此|请|如|若|长期有效|有效|暂定|仅供参考|为准|最新|"
                          r"刚|才|别|千万|终于|总算|记得|记住|确认|核对|亲测)[^（）()]*[）)]$"
                          r"|[（(][^（）()]*(?:请|联系|谢谢|如有|若有|备查|存档|详见|参见|见附件|附件)[^（）()]*[）)]$|[（(](?:本人|我的|自己|我)[）)]$")
_MAX_VALUE_CHARS = 40
#: A stretch of time ("一周", "新的一年", "这学期"): neither a slot nor a value
_TIME_SPAN = re.compile(r"^(?:新的|新|这|这个|上个?|下个?|本)?[一二三四五六七八九十两几\d]*(?:周|年|个月|月|天|星期|礼拜|学期|季度|赛季)$")


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
        value = _PAREN_ASIDE.sub("", value)
        value = _SPOKEN_TAIL.sub("", value)
        m = _TRAIL.search(value)
        if m and m.start() > 0:
            if _CHANGE_TAIL.search(m.group(0)):
                change = True
            value = value[: m.start()]
    # "7楼，不是3楼" / "7楼而不是3楼": the contrast is not the value.
    value = re.split(r"(?:而不是|不是|而非|，|；|(?<!\d),|,(?!\d)|\s{2,})", value, maxsplit=1)[0].strip()
    return value, change


#: A relative named as the value ("我妈王秀英", "我哥 Kevin"): "我" here is part of the value; a bare "我哥" is not
_KIN_NAMED = re.compile(r"我(?:[表堂]?[哥姐弟妹]|[妈爸]|爱人|老婆|老公|儿子|女儿|室友|舅舅|姑姑|阿姨|叔叔)\s?"
                        r"(?![说帮给的也都是在要会让叫和跟去来])(?:[\u4e00-\u9fff]{2,3}|[A-Z][a-z]+(?: [A-Z][a-z]+)?)")


def _valid_value(value: str) -> bool:
    if not value or len(value) > _MAX_VALUE_CHARS or re.search(r"本人|我的|我是", value):
        return False
    if value.lower() in {"什么", "多少", "哪里", "哪儿", "哪个", "几", "谁", "旧", "新", "老", "对", "错", "还", "也", "就", "才", "都",
                         "记好", "记住", "记下", "收到", "一下", "好的", "求确认", "确认", "对吗", "是吗"}:
        return False
    if any(marker in value for marker in _VALUE_MARKERS):
        return False
    if value.startswith(_VALUE_BAD_START) and not _KIN_NAMED.fullmatch(value):
        return False
    if value.endswith(("吧", "吗", "呢")):
        return False
    return len(_HAS_CJK.findall(value)) <= 20


#: A field's label that says it changed: "X更新了：V", "X更新一下：V", "更新后的X：V"
_CHANGED_LABEL_RE = re.compile(rf"^(?:我的|本人的?)?(?:更新|变更|修改|调整|更改)后的(?P<slot2>{_SLOT_CHARS}{{1,18}}?)$"
                               rf"|^(?:我的|本人的?)?{_SLOT}\s*(?:更新|变更|修改|更改)(?:了|一下|过了)$")
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
    if not _valid_value(value) or len(value) > 24 or _TIME_SPAN.match(value):
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
        if any(re.search("(?:" + "|".join(_OTHER_OWNERS) + r")(?:用|开|住|买|在用|常用|现在用)?$", owner) or re.search(
                rf"[小老阿][{_CJK}]$|家(?:老[大二三四]|里人|人)$|阿[嬤嬷公婆姨]$", owner) for owner in parts):
            return None
    if any(slot.startswith(o) and len(slot) > len(o) + 1 for o in _OTHER_OWNERS if len(o) >= 2):
        return None  # "我男朋友WiFi密码": his, not mine
    place = re.match(rf"^(?P<place>[{_CJK}]{{1,4}})(?:里|上|中)的(?=\S{{2,}})", slot)
    if place and re.match(r"[妈爸哥姐弟妹儿女]", place["place"]):
        return None  # "我妈资料里的X": hers
    if place and not re.search(r"[我你他她它]|" + "|".join(_OTHER_OWNERS), place["place"]):
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
    if not _HAS_CJK.search(slot):
        return clean_slot(slot)  # a Latin slot inside Chinese text: "我的office floor是3rd"
    if not 1 <= len(slot) <= 14 or slot in _SLOT_BLOCK or slot in _SLOT_WHOLE_STOP or _TIME_SPAN.match(slot):
        return None
    if any(stop in slot for stop in _SLOT_STOP):
        return None
    if re.search(r"(?:最初|起初|当初|仍然|依然|依旧|仍旧|从来|向来|一向|始终|才|年来|些年|多年|好多年|几年|一开始|现|跟[着著]|随[着著]|[啊呀吧呢嘛哦])$", slot):
        return None  # an adverb left on the slot: "宽带最初是A" names a past value, not a slot "宽带最初"
    return slot


def _note(text: str, topic_open: bool) -> Clause:
    """What follows a note's label ("记：X V", "记：X"): a slot and its value after a space, or the slot alone."""
    m = re.match(rf"^(?P<slot>[^\s：:]*[{_CJK}])\s+(?P<value>\S.*)$", text)
    if m and (found := _found(m["slot"], m["value"], change=False)) is not None:
        return found
    if _slot(text) and not _HAS_DIGIT.search(text):
        return Topic(_slot(text) or "", False, bare=True)
    return parse_clause(text, topic_open=topic_open)


def _blocked(lead: str) -> bool:
    return any(word in lead for word in _LEAD_BLOCKERS)


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
    rf"^{_OWNER}?{_LEAD_ADJ}{_SLOT}\s*(?:其实|实际上|实际)?\s*(?:应该是|应是|应为|应当是|是|(?<![华因作成认以行更变改])为|"
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
    m = _BACK_RE.match(clause)
    if m and clause.startswith("就是") and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", False, back=True)  # "7楼！对，就是我的工位": before "就是" goes as an opener
    m = _REMEMBER_SAID_RE.match(clause)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", True, bare=False)  # "记得我说过工位是3楼吗": the old value; the new one follows
    previous = None
    while previous != clause:
        previous = clause
        clause = _OPENERS.sub("", clause).strip()
    m = _BACK_TAIL_RE.match(clause)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", bool(re.search(r"改|换|更新", m["tail"])), back=True)
    for pattern in (_TOLD_WRONG_RE, _SAID_AS_RE, _ASKS_FOR_RE):  # "之前告诉你的X不对", "我前面把X说成A了": the right value follows
        m = pattern.match(clause)
        if m and _slot(m["slot"]):
            asks = pattern is _ASKS_FOR_RE  # "表格上要填X": "我的是V" follows, not any value ("示例是7楼")
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
        if label in _ITEM_LABELS and _slot(tail.strip()):  # "项目：工位": the field a form is about
            return Topic(_slot(tail.strip()) or "", bool(re.search(r"变更|修改|更新", label)), bare=True)
        about = _ABOUT_RE.match(label)
        if about and _CHECKED.fullmatch(tail.strip()) and (named := _slot(about["slot"] or about["slot2"] or about["slot3"])):
            return Topic(named, False, bare=True)  # "关于X：我查了一下": the value follows
        if label in _ASK_LABELS and re.fullmatch(r"(?:我的|本人的?)?[^？?吗呢]+", tail.strip()) and _slot(
                re.sub(r"^(?:我的|本人的?)", "", tail.strip())):
            return Topic(_slot(re.sub(r"^(?:我的|本人的?)", "", tail.strip())) or "", False, bare=True)
        if label in _ANSWER_LABELS:  # "答：V" after "问：X"
            value, _ = _clean_value(tail)
            return Anaphor(value, False) if topic_open and _valid_value(value) else None
        if label in _VALUE_LABELS:  # "内容：7楼": the value of the field named before, if one was
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
        m = _WAS_NOW_RE.match(clause)
        if m and (found := _found(m["slot"], m["value"], change=True)) is not None:
            return found
        noted = _NOTE_ARROW_RE.match(f"{head.strip()}→{tail.strip()}")
        if noted and re.search(f"[{_CJK}]$", noted["slot"]) and (found := _found(noted["slot"], noted["value"], change=True)):
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
    m = _IF_ASKED_RE.match(clause)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", False, bare=True)  # "如果有人问起我的工位，就说是7楼"
    m = re.match(r"^就(?:说|讲|回|答)(?:是)?(?P<value>.+)$", clause)
    if m and topic_open:
        value, _ = _clean_value(m["value"])
        if _valid_value(value):
            return Anaphor(value, False)
    m = _IF_YOU_NEED_RE.match(clause)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", False, bare=True)  # "要是你哪天需要我的工位，就是7楼"
    m = _PAREN_VALUE_RE.match(clause)
    if m and (found := _found(m["slot"], m["value"], change=False)) is not None:
        return found  # "我的工位（7楼）一直没变过"
    m = _REMEMBER_SAID_RE.match(clause)
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
    m = _AS_MY_RE.match(clause)
    if m and (m["me"] or m["own"]) and not _blocked_inside(clause):  # "请将7楼登记为本人的工位", "我一直拿小鱼当昵称"
        found = _found(m["slot"], m["value"], change=False)
        if found is not None:
            return found
    if _PAST_FRAME.match(clause):
        return Blocked("a past frame")  # "以前读书的时候，我的工位是3楼": what follows is the past
    m = _UNCHANGED_RE.match(clause)
    if m and _slot(m["slot"]) and not re.match(rf"^我(?:的)?{_PEOPLE}", clause):
        return Topic(_slot(m["slot"]) or "", False, bare=True, back=True)  # "是7楼，工位没变过"
    own = re.search(r"(?<!被)我", clause)  # the 我 of 被我 is the agent, not the owner
    owner_at = min((i for i in (own.start() if own else -1, clause.find("本人")) if i >= 0), default=-1)
    lead = clause[:owner_at] if owner_at > 0 else ""
    past = _PAST_LEAD.match(clause)
    if past and correcting and clause.startswith("原来"):
        past = None  # "原来我的工位是7楼，之前记错了": "it turns out", not "it used to be"
    gone = re.match(rf"^(?:以前|之前|原来|原先|旧)的?{_SLOT}(?:已经|已)?被?(?:换掉|改掉|弃用|作废|停用|注销)了?$", clause)
    if gone and _slot(gone["slot"]):
        return Topic(_slot(gone["slot"]) or "", True, bare=True)  # "之前的X被换掉了，现在是V"
    if past:  # "以前我的工位是3楼" / "原来的工位是3楼": the old value; what follows may say the new one
        m = _IS_RE.match("我的" + past["rest"].removeprefix("我的").removeprefix("我")) or _BARE_IS_RE.match(past["rest"])
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
    m = _VALUE_FIRST_RE.match(body)
    if m and not re.match(r"可能|也许|大概|或许|应该|估计|好像|似乎", m["value"]) and not re.search(
            r"(?:不再|不|已经不|并不|从来不|曾经|以前|原来)$", m["value"]):
        found = _found(m["slot"], m["value"], change=False)  # "咸鱼不想翻身是我常用的昵称": the value may say anything
        if found is not None:
            return found
    if _blocked_inside(body):
        return Blocked("a plan, report, hedge or negation")
    return _core(body, topic_open)


_PEOPLE = (r"(?:[表堂]?[哥姐弟妹]|[妈爸叔姨舅爷奶]|儿子|女儿|孩子|老婆|老公|室友|同事|朋友|同学|老板|领导|邻居|闺蜜|"
           + "|".join(o for o in _OTHER_OWNERS if len(o) >= 2) + ")")
_PERSON_IS = rf"^我(?:的)?{_PEOPLE}(?:的)?(?:是|用的是|用的|选的是|填的是|则是|呢是)"
_DIFFERENT_FROM_RE = re.compile(rf"^我(?:和|跟|与)(?:我的?)?{_PEOPLE}(?:的)?{_SLOT}不一样$")  # "我和我哥工位不一样，我是7楼"
_INTERJECTION = r"(?:好|好的|对|对的|是|是的|行|可以|没问题|知道了|收到|明白|谢谢|嗯|哈哈|天哪|不是|真的|这样|那样|这个|那个)"


def _slot_like(lead: str) -> bool:
    """A lead-in before 我 that is itself a slot ("工位我选了7楼"), not an opener or a time."""
    if re.search(r"请|注意|麻烦|烦请|帮|知悉|确认|告知|记得|提醒", lead):
        return False
    return bool(re.search(r"[A-Za-z\u4e00-\u9fff]", lead)) and _slot(re.sub(r"(?:这块儿?|这边|方面|嘛|呢|的话)?[，,\s]*$", "", lead)) is not None and not re.search(
        r"[，,：:]|(?:开始|以来|起|后|时候)(?:这块儿?|这边|方面|嘛|呢|的话)?\s*$|^(?:从|自)|今天|昨天|最近|上周|这周|本周|[\d一二三四五六七八九十上下本这每]+个?月|今年|去年|明年|"
        r"\d+年|\d+日|[\d一二三四五六七八九十]号$", lead)


_NAMED_AFTER_RE = re.compile(rf"^(?P<body>.+?)\s*[（(](?:我的|本人的){_SLOT}[）)]$")  # "3楼→7楼（我的工位）"


def _core(body: str, topic_open: bool) -> Clause:
    m = _NAMED_AFTER_RE.match(body)
    if m and _slot(m["slot"]):
        pieces = re.split(r"\s*(?:→|->|=>)\s*", m["body"])
        value = bare_value(pieces[-1])
        if value is not None:
            return Found(_slot(m["slot"]) or "", value, len(pieces) > 1)
    m = _NO_LONGER_BUT_RE.match(body)
    if m:
        value = re.split(r"(?<=\S)(?=(?:你|我)\S{2,})", m["value"], maxsplit=1)[0]  # "…是V你下单的时候注意": a new clause
        named = m["slot"] and not re.fullmatch(_ADV, m["slot"].strip())
        if named and (found := _found(m["slot"], value, change=True)) is not None:
            return found
        value, _ = _clean_value(value)
        if not named and topic_open and _valid_value(value):
            return Anaphor(value, True)
    m = _WAS_REL_RE.match(body)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", True, bare=True)  # "我那个原来是3楼的工位，现在改成7楼了"
    for pattern, change in ((_NO_LONGER_MINE_RE, True), (_DONE_WITH_RE, True), (_TOLD_WRONG_RE, True), (_WROTE_WRONG_RE, True), (_SAID_AS_RE, True), (_SLOT_WAS_AT_FIRST_RE, True), (_APPLY_CHANGE_RE, True), (_DIFFERENT_FROM_RE, False), (_IF_ASKED_RE, False)):
        m = pattern.match(body)
        if m and pattern is _NO_LONGER_MINE_RE and m["neg"] == "不是" and not m["le"]:
            return Blocked("negated")  # "V不是我的X": a plain denial, nothing said to have changed
        if m and _slot(m["slot"]):  # a slot named now, its value in the next clause
            return Topic(_slot(m["slot"]) or "", change, bare=True)
    m = _NOTE_ARROW_RE.match(body)
    if m and (found := _found(m["slot"], m["value"], change=True)) is not None:
        return found  # "我的工位 3楼→7楼"
    m = _I_CHANGED_RE.match(body) or _I_CHANGED_AFTER_RE.match(body)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", True, bare=True)
    for pattern, change in ((_FORGET_ZH_RE, False), (_TELL_YOU_RE, False), (_THEY_BA_RE, True)):
        m = pattern.match(body)
        if m and _slot(m["slot"]):
            return Topic(_slot(m["slot"]) or "", change, bare=True)
    m = _DASH_NEW_RE.match(body)
    if m and (found := _found(m["slot"], m["value"], change=True)) is not None:
        return found
    for pattern in (_LANDED_ON_RE, _FILL_RE, _FROM_NOW_RE, _NEW_BARE_RE):
        m = pattern.match(body)
        if m and (found := _found(m["slot"], m["value"], change=pattern is _LANDED_ON_RE)) is not None:
            return found
    for pattern in (_BA_RE, _CHANGE_RE, _SLOT_BA_RE):
        m = pattern.match(body)
        if m and pattern is _SLOT_BA_RE and (m["slot"].strip() in _OTHER_OWNERS or re.fullmatch(rf"[小老阿][{_CJK}]", m["slot"].strip())):
            return Blocked("someone else's doing")  # "领导把他的X换成V了", "老王把X换成了V": the boss, Lao Wang
        if m:
            found = _found(m["slot"], m["value"], change=True)
            if found is not None:
                return found
    m = _TOPIC_FRONT_RE.match(body)
    if m:
        found = _found(m["slot"], m["value"], change=False)
        if found is not None:
            return found
    for pattern in (_TOPIC_RE, _SORTED_RE):
        m = pattern.match(body)
        if m and _slot(m["slot"]):
            return Topic(_slot(m["slot"]) or "", True, bare=True)
    m = _ABOUT_RE.match(body)
    about = _slot(m["slot"] or m["slot2"] or m["slot3"]) if m else None
    if about:
        return Topic(about, False, bare=True)
    m = _DEHUA_RE.match(body)
    if m:
        found = _found(m["slot"], m["value"], change=False)
        if found is not None:
            return found
    m = _IS_RE.match(body)
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
        found = _found(m["slot"], value, change=any(a in adv for a in _ADV_CHANGE) or "现在的" in body[:6])
        if found is not None:
            return found
    for pattern, topic in ((_WAS_RE, Topic), (_IF_YOU_NEED_RE, Topic), (_DIFFERENT_RE, Topic)):
        m = pattern.match(body)
        if m and _slot(m["slot"]):
            return Topic(_slot(m["slot"]) or "", pattern is _WAS_RE, bare=pattern is not _WAS_RE)
    m = _IT_IS_THIS_RE.match(body)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", False, back=True)  # "7楼——我的工位就是这个"
    m = None if topic_open else _NEW_SLOT_RE.match(body)  # with a slot open, "新加坡IPLC" is its value
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", True, bare=True, back=True)  # "7楼——新工位"
    m = _OWNED_SLOT_RE.match(body)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", False, bare=True, back=True)  # "我那个工位，是7楼" / "7楼——我的工位"
    m = _NOW_NO_COPULA_RE.match(body)
    if m and not re.search(r"[了过着吧吗呢]$|^(?:[挤忙乱吵热冷远近贵满空堵]|便宜)", m["value"]):
        found = _found(m["slot"], m["value"], change=True)
        if found is not None:
            return found
    m = _BARE_NOW_RE.match(body) or _TERSE_NOW_RE.match(body)
    if m:
        found = _found(m["slot"], m["value"], change=True)
        if found is not None:
            return found
    m = _BARE_COPULA_RE.match(body)
    if m and len(m["slot"].strip()) >= 2 and "的" not in m["slot"] and not re.search(r"并非|不算|(?:不是|并不是)我", body):
        found = _found(m["slot"], m["value"], change=False)  # "工位是7楼": a bare statement, said without 我的
        if found is not None:
            return found
    m = _VALUE_FIRST_RE.match(body)
    if m:
        found = _found(m["slot"], m["value"], change=False)
        if found is not None:
            return found
    m = _BACK_RE.match(body)
    if m and _slot(m["slot"]):
        return Topic(_slot(m["slot"]) or "", False, back=True)
    m = _LABEL_RE.match(body)
    if m:
        found = _found(m["slot"], m["value"], change=False)
        if found is not None:
            return found
    if topic_open:
        m = _ANAPHOR_RE.match(body)
        if m:
            value, _ = _clean_value(m["value"])
            if _valid_value(value):
                return Anaphor(value, True)
    return None


def topic_of_question(sentence: str) -> Topic | None:
    """A question that only names a slot ("工位？", "你问工位啊？"): the next sentence may answer it."""
    body = sentence.strip().rstrip("?？").strip()
    said = _REMEMBER_SAID_RE.match(body)
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
