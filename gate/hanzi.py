"""Traditional and Cantonese forms read as their Simplified Mandarin twins, for matching only. Pure.

The fact grammar is written in Simplified Chinese. ``fold`` maps the
traditional characters and Cantonese function words it needs to their
Simplified Mandarin forms one character for one character, so a match on the
folded text has the same offsets as the original: the grammar reads
``fold(text)`` and takes values from ``text`` at those offsets, and a value
keeps the characters its writer used ("我的手機換了" has the slot 手机 and a
value written as written).
"""

from __future__ import annotations

__all__ = ["fold"]

# One character for one character: traditional -> simplified (the ones the grammar's words use, and common
# slot and value characters), Cantonese grammar words -> Mandarin.
_PAIRS = (
    "換换現现為为設设號号樓楼車车機机門门帳帐醫医時时間间額额這这個个們们說说還还會会變变麼么嗎吗經经後后從从將将對对"
    "沒没調调記记錯错請请幫帮給给讓让種种點点裡里於于與与應应該该麗丽電电話话價价錢钱貨货員员單单務务辦办覺觉"
    "認认讀读寫写買买賣卖開开關关長长則则條条處处體体東东區区們们過过進进選选遠远運运還还邊边億亿萬万億亿"
    "務务動动勞劳華华協协廠厂縣县縮缩總总聯联職职專专業业書书習习學学園园圖图團团國国場场壓压報报塊块堅坚"
    "夠够夢梦實实寶宝寬宽對对導导層层屬属岡冈嶺岭幣币幾几廣广張张當当錄录歲岁歷历氣气漢汉潔洁熱热燈灯爭争"
    "狀状獨独現现環环產产畫画異异療疗發发盤盘碼码確确禮礼稱称穩稳窗窗筆笔範范簽签節节級级組组細细終终結结"
    "給给絕绝統统絲丝經经網网綠绿線线練练績绩續续總总罰罚羅罗義义習习聯联聲声膽胆臉脸興兴舊旧艙舱藥药蘇苏"
    "處处號号蟲虫術术衛卫補补製制規规視视覽览觀观訊讯設设許许診诊証证評评詢询試试詳详語语認认說说誰谁課课"
    "調调談谈請请論论諾诺謝谢證证識识護护讀读變变貝贝負负費费資资賬账贈赠趙赵車车軟软較较載载輛辆輸输轉转"
    "辦办農农迴回這这連连週周進进遊游運运過过達达違违遲迟選选遷迁遺遗還还邊边郵邮鄉乡醫医釋释鐘钟錯错鍵键"
    "長长門门閉闭問问閒闲間间閱阅關关陸陆陽阳隊队際际陳陈隨随險险隱隐雙双雜杂雞鸡離离雲云電电靜静預预頭头"
    "題题額额顏颜類类顯显風风飯饭餘余館馆馬马駕驾騎骑驗验體体髮发鬧闹魚鱼鳥鸟麥麦黃黄點点齊齐齒齿龍龙"
    "係是嘅的咗了喺在冇没乜么嘢西啲些咁这佢他哋们嗰那唔不陣阵讀读樣样"
)
_TABLE = str.maketrans({_PAIRS[i]: _PAIRS[i + 1] for i in range(0, len(_PAIRS) - 1, 2)})
# Cantonese two-character words with Mandarin twins of the same length.
_WORDS = (("而家", "现在"), ("琴日", "昨天"), ("聽日", "明天"), ("尋日", "昨天"), ("改咗", "改了"), ("而今", "如今"),
          ("呢個", "这个"), ("嗰個", "那个"), ("點解", "为何"), ("邊個", "哪个"), ("做咗", "成了"),
          ("即係", "就是"))


def fold(text: str) -> str:
    """``text`` with traditional and Cantonese forms folded to Simplified Mandarin, offset for offset."""
    folded = text.translate(_TABLE)
    for cantonese, mandarin in _WORDS:
        folded = folded.replace(cantonese.translate(_TABLE), mandarin)
    return folded
