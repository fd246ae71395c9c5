"""`replaced_value`: the old value an update names beside its new one, in the text the user wrote."""

from __future__ import annotations

import pytest

from ledgermem.gate.replaced import replaced_value


@pytest.mark.parametrize("text, new, old", [
    ("my bike lock code is no longer 4471, it's 9020 now", "9020", "4471"),
    ("bike lock code: no longer Copper Fox - it is Silver Owl", "Silver Owl", "Copper Fox"),
    ("I changed my bike lock code from 4471 to 9020", "9020", "4471"),
    ("switched the bike lock code over from Copper Fox to Silver Owl", "Silver Owl", "Copper Fox"),
    ("bike lock code: 4471 -> 9020", "9020", "4471"),
    ("bike lock code 4471 → 9020 (new lock)", "9020", "4471"),
    ("gym slot: 06:15 => 07:45", "07:45", "06:15"),  # a time's colon is not a field's
    ("my bike lock code is 9020 instead of 4471 now", "9020", "4471"),
    ("my bike lock code is not 4471 any more, it is 9020", "9020", "4471"),
    ("我的车锁密码从4471改成9020了", "9020", "4471"),
    ("我的车锁密码不再是铜狐，现在是银鸮", "银鸮", "铜狐"),
    ("车锁密码：4471→9020", "9020", "4471"),
    ("我的车锁密码是9020，不是4471", "9020", "4471"),
])
def test_the_value_an_update_says_it_replaced(text: str, new: str, old: str) -> None:
    slot = "车锁密码" if "车锁" in text else ("gym slot" if "gym" in text else "bike lock code")
    assert replaced_value(text, new, slot) == old


@pytest.mark.parametrize("text, new", [
    ("my bike lock code is 9020", "9020"),  # nothing replaced is named
    ("I moved from Leeds to York and my bike lock code is 9020", "9020"),  # a "from … to" about something else
    ("my bike lock code is no longer 4471, it's 9020 now", "1234"),  # the value is not in the text
    ("my bike lock code went from 9020 to 9020", "9020"),  # the "old" one is the value itself
    ("", "9020"),
])
def test_control_no_replaced_value_where_none_is_named(text: str, new: str) -> None:
    assert replaced_value(text, new, "bike lock code") is None


def test_without_the_slot_a_field_name_before_an_arrow_stays_in_the_span() -> None:
    """Why the answerer passes the slot: with no colon, only the slot's name tells where the old value begins."""
    assert replaced_value("bike lock code 4471 → 9020", "9020") == "bike lock code 4471"
    assert replaced_value("bike lock code 4471 → 9020", "9020", "bike lock code") == "4471"
