"""English constructions of forms, notes and replies: a value given for a form, a slot named after
its value, a value said alone before the slot, a note line marked as the user's own.

Written here for the grammar's parts; each rule has a control where it must not fire.
"""

from __future__ import annotations

import pytest

from ledgermem.gate.lexicon import detect_facts


def _facts(text: str) -> list[tuple[str, str]]:
    return [(m.slot, m.value) for m in detect_facts(text)]


READ = [
    # a value entered on a form as the user's
    ("Kindly enter 4471-K as my membership number on the booking.", "membership number", "4471-K"),
    ("once you open the portal, put my locker code as 9902", "locker code", "9902"),
    ("put 88 Elm Row down for my billing address on the signup form thx", "billing address", "88 Elm Row"),
    # the slot named first, its value in the next sentence or clause
    ("For the visa form, use my passport number. It's X1234567.", "passport number", "X1234567"),
    ("Fill in the gym form with my new locker code, 5521.", "locker code", "5521"),
    ("For shoe size, I have 44.", "shoe size", "44"),
    # a value that has to be the slot's from now on
    ("Wait, my locker code needs to be 7310 now, they reset it.", "locker code", "7310"),
    # a value said alone, then the slot it is for
    ("QX-19 for my parking permit, please keep it", "parking permit", "QX-19"),
    ("as of today, Bay 4 for my parking spot", "parking spot", "Bay 4"),
    # the value before a denial of the old one, then the slot
    ("it's Bay 9 now, not Bay 2 — my parking spot I mean", "parking spot", "Bay 9"),
    ("No longer Bay 2! It's Bay 9, my parking spot.", "parking spot", "Bay 9"),
    ("*Bay 9 — my parking spot, I mistyped it earlier", "parking spot", "Bay 9"),
    # an acknowledgement, the value, then the slot in the next sentence
    ("yes that's right, Bay 9. my parking spot, yeah", "parking spot", "Bay 9"),
    ("mm, Flat 3B. you've got my billing address right", "billing address", "Flat 3B"),
    ("I can never keep track of these, so: 5521. That's my locker code.", "locker code", "5521"),
    # a note line marked as the user's own
    ("locker code -> 5521 (mine)", "locker code", "5521"),
    ("shoe size — 44 (mine, for the shop)", "shoe size", "44"),
    ("me / shoe size / 44", "shoe size", "44"),
]


@pytest.mark.parametrize(("text", "slot", "value"), READ)
def test_form_note_and_reply_constructions_are_read(text: str, slot: str, value: str) -> None:
    assert _facts(text) == [(slot, value)]


NOT_READ = [
    "a present for my sister",         # a person, not a slot
    "flowers for my wife",
    "a new battery for my phone",      # an object bought for a thing, with an article
    "thanks for my refund",            # a thanks
    "it's time for my appointment",
    "Nope, decided against Bay 9 for my parking spot.",   # a verb before the value
    "Please find below some notes for my profile:",
    "I use Bay 4, Bay 9 for my parking spot? no idea",    # a question
    "It's definitely not Bay 9, my parking spot",         # only a denial before the slot
    "It's definitely not March 1, 2028, my lease end date",  # the denied value goes on past its comma
    "locker code -> 5521 (not mine)",                     # the note says it is not the user's
    "For shoe size, I have no idea.",
]


@pytest.mark.parametrize("text", NOT_READ)
def test_what_only_looks_like_those_constructions_is_not_read(text: str) -> None:
    assert _facts(text) == []


BOUNDARIES = [
    # an emphatic "only" after a code or a name is not part of it; after a word it is
    ("my pin code is 7731 only", "pin code", "7731"),
    ("Do note my dentist is Dr Ana Ruiz only na", "dentist", "Dr Ana Ruiz"),
    ("my broadband is Vodafone 5G SIM only", "broadband", "Vodafone 5G SIM only"),
    ("my payment method is cash only", "payment method", "cash only"),
    # a filler or a participle is not part of the slot; a slot may begin with a digit
    ("um my 4G router yeah it's Huawei B535", "4g router", "Huawei B535"),
    ("remember my gym being PureGym? well now it's Nuffield", "gym", "Nuffield"),
    # "quarter to seven" is a value, not "from quarter to seven"
    ("My pickup time changed to quarter to seven last week.", "pickup time", "quarter to seven"),
    # "notice period" is a slot, not a dictated full stop
    ("Field: notice period\nNew value: 8 weeks", "notice period", "8 weeks"),
    # "now" on its own between the old value and the new one is no value
    ("my locker code is not anymore 1188, now it is 9031", "locker code", "9031"),
    # "for my records" opens the line; it names no slot
    ("For my records — pin code: 4410. Cheers", "pin code", "4410"),
]


@pytest.mark.parametrize(("text", "slot", "value"), BOUNDARIES)
def test_value_and_slot_boundaries(text: str, slot: str, value: str) -> None:
    assert _facts(text) == [(slot, value)]


def test_news_of_a_change_is_not_its_value() -> None:
    assert _facts("Re my gym, bit of news.") == []
    assert _facts("my gym? some news: it's Nuffield now") == [("gym", "Nuffield")]
    assert _facts("Re my gym, bit of news: it's Nuffield now") == [("gym", "Nuffield")]


CHAT_AND_FORMS = [
    # a chat app's emoji code after the value
    ("fyi my gym is Nuffield Health :muscle:", "gym", "Nuffield Health"),
    # how the user found the value is not the value
    ("About my tyre pressure: I checked and it's 34 psi.", "tyre pressure", "34 psi"),
    ("Re my tyre pressure — looked it up, it's 36 psi.", "tyre pressure", "36 psi"),
    # "its" typed without an apostrophe; a greeting before the request
    ("hi there remember my gym its Nuffield Health", "gym", "Nuffield Health"),
    # telling it now, though the words say "forgot" or "should"
    ("oh I forgot to say my gym changed, it's PureGym now", "gym", "PureGym"),
    ("I should mention my gym isn't PureGym any longer. It is Nuffield Health.", "gym", "Nuffield Health"),
    # a subjectless "is V now" after the slot's change
    ("My gym was changed last week, is PureGym now.", "gym", "PureGym"),
    # texting "bc", a confirmation in brackets, "that's it", "obviously", a remark after a dash
    ("my gym is PureGym now bc the old one closed", "gym", "PureGym"),
    ("My tyre pressure is 34 psi (double-checked).", "tyre pressure", "34 psi"),
    ("um my tyre pressure is 34 psi that's it", "tyre pressure", "34 psi"),
    ("my tyre pressure?? 34 psi obviously", "tyre pressure", "34 psi"),
    ("my tyre pressure — 34 psi — just noting it", "tyre pressure", "34 psi"),
    # "K" and "X" inside a value are letters, not "ok" or a kiss
    ("my locker is Row K 14", "locker", "Row K 14"),
    # a relative as the value
    ("my emergency contact is my sister Ana", "emergency contact", "my sister Ana"),
    # Q and A on a form; a form's old value line leaves the field open; an updated label; an opener label
    ("Q: tyre pressure\nA: 34 psi", "tyre pressure", "34 psi"),
    ("Field: tyre pressure\nOld: 30 psi\nNew: 34 psi", "tyre pressure", "34 psi"),
    ("* tyre pressure updated → 36 psi", "tyre pressure", "36 psi"),
    ("quick update: tyre pressure → 36 psi", "tyre pressure", "36 psi"),
    # the slot named, then the value
    ("Mine's PureGym — the gym, I mean.", "gym", "PureGym"),
    ("PureGym, if you need my gym.", "gym", "PureGym"),
    ("My gym, since you asked earlier... PureGym.", "gym", "PureGym"),
    ("PureGym replaces Nuffield as my gym.", "gym", "PureGym"),
    ("I went ahead and changed my gym. It's PureGym.", "gym", "PureGym"),
    ("Finally sorted my gym out — it's PureGym now.", "gym", "PureGym"),
]


@pytest.mark.parametrize(("text", "slot", "value"), CHAT_AND_FORMS)
def test_chat_and_form_shapes_are_read(text: str, slot: str, value: str) -> None:
    assert _facts(text) == [(slot, value)]


@pytest.mark.parametrize("text", [
    "my gym changed. is it PureGym now",                  # a question without its mark
    "I forgot to say anything about my gym",              # no value
    "Field: tyre pressure\nOld: 30 psi",                  # only the old value
    "my brother's gym is PureGym",                        # someone else's
    "ok k cool",
])
def test_chat_and_form_controls_read_nothing(text: str) -> None:
    assert _facts(text) == []


@pytest.mark.parametrize(("text", "slot", "value"), [
    ("the receipt shows 4471, that's my old locker code, it's 9902 now", "locker code", "9902"),   # the old value before
    ("my gym (yes, again) has changed, and this time for good: PureGym", "gym", "PureGym"),
    ("Nuffield is out, PureGym is in as my gym", "gym", "PureGym"),
    ("Can you book the 9am class (my gym is PureGym) and tell me the price?", "gym", "PureGym"),
    ("I did changed the gym from Nuffield to PureGym, please update", "gym", "PureGym"),
])
def test_old_values_and_asides_around_the_new_one(text: str, slot: str, value: str) -> None:
    assert _facts(text) == [(slot, value)]


def test_the_old_value_named_alone_is_not_the_value() -> None:
    assert _facts("the receipt shows 4471, that's my old locker code") == []
    assert _facts("Nuffield is out") == []


@pytest.mark.parametrize(("text", "slot", "value"), [
    ("my alarm time is 5:10 a.m.", "alarm time", "5:10 a.m."),          # the abbreviation keeps its full stop
    ("alarm time: 6 p.m.", "alarm time", "6 p.m."),
    ("my alarm time is 6:30.", "alarm time", "6:30"),                   # a plain full stop is not the value's
    ("my savings target is 10% of my salary", "savings target", "10% of my salary"),
    ("my emergency contact is no longer my sister Ana, it's Marcus Lee", "emergency contact", "Marcus Lee"),
])
def test_abbreviations_relatives_and_shares_in_values(text: str, slot: str, value: str) -> None:
    assert _facts(text) == [(slot, value)]


@pytest.mark.parametrize(("text", "slot", "value"), [
    # "of", "for", "at", "on" joining the nouns of one slot
    ("my date of birth is 12/03/1990", "date of birth", "12/03/1990"),
    ("my place of work changed to Leeds General", "place of work", "Leeds General"),
    ("my password for the wifi is hunter22", "password for the wifi", "hunter22"),
    ("my seat on the train is 42A", "seat on the train", "42A"),
    # a possessive that is part of a compound noun
    ("my driver's licence number is D123-456", "driver's licence number", "D123-456"),
    ("my mother's maiden name is Okafor", "mother's maiden name", "Okafor"),
])
def test_slot_names_with_of_for_and_compound_possessives(text: str, slot: str, value: str) -> None:
    assert _facts(text) == [(slot, value)]


@pytest.mark.parametrize("text", [
    "For the avoidance of doubt, Bay 4 is not my parking spot.",  # a way of speaking, not a slot
    "most of my salary is rent",
    "my bf's car is a Golf",                                       # an owner, not a compound
    "my deputy's cost centre is 7720",
    "Tom's phone is 0777 123",
])
def test_of_phrases_and_owners_are_not_slots(text: str) -> None:
    assert _facts(text) == []
