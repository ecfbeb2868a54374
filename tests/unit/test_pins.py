"""Pinned facts: which identifiers are found, and how lost ones are re-attached."""

from __future__ import annotations

import pytest

from memory_summary.domain import extract_pins, pinned_section, with_pins


def words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize(
    ("line", "pin"),
    [
        ("User: see https://example.com/docs?id=3.", "https://example.com/docs?id=3"),
        ("User: mail ada@example.org today", "ada@example.org"),
        ("User: edit /srv/app/config.yaml now", "/srv/app/config.yaml"),
        ("User: edit src/app/main.py now", "src/app/main.py"),
        ("User: order ORD-2041 is late", "ORD-2041"),
        ("User: ticket #4711 is open", "#4711"),
        ("User: the code is X7K9P2", "X7K9P2"),
        ("User: it weighs 12 kg", "12 kg"),
        ("User: budget $2,400", "$2,400"),
        ("User: due 2026-03-03", "2026-03-03"),
        ("User: due March 3, 2026", "March 3, 2026"),
        ("User: my name is Ada Lovelace", "Ada Lovelace"),
        ("用户：我叫李雷，预算5000元", "李雷"),
        ("用户：预算5000元", "5000元"),
        ("用户：日期2026年3月3日", "2026年3月3日"),
        ("Tool result(search): wrote /tmp/out.json", "/tmp/out.json"),
    ],
)
def test_each_kind_of_identifier_is_found(line, pin):
    assert pin in extract_pins([line])


def test_names_are_only_taken_from_what_the_user_said():
    assert "Ada Lovelace" not in extract_pins(["Assistant: my name is Ada Lovelace"])
    assert extract_pins(["User: hello, how are you today?"]) == []


def test_each_pin_is_found_once_in_first_seen_order():
    pins = extract_pins(["User: ORD-1 and ORD-2", "Assistant: ORD-1 again, ord-1"])

    assert pins == ["ORD-1", "ORD-2"]


def test_a_summary_that_kept_everything_gets_no_section():
    kept = with_pins(
        "Order ORD-2041 weighs 12 kg.",
        transcript=["User: order ORD-2041 weighs 12 kg"],
        previous=None,
        budget_tokens=100,
        count_tokens=words,
        locale="en",
    )

    assert kept == "Order ORD-2041 weighs 12 kg."


def test_lost_identifiers_are_appended_in_one_section():
    text = with_pins(
        "The user talked about an order.",
        transcript=["User: order ORD-2041 weighs 12 kg"],
        previous=None,
        budget_tokens=100,
        count_tokens=words,
        locale="en",
    )

    assert (
        text == "The user talked about an order.\nPinned facts: ORD-2041; weighs 12 kg"
    )


def test_pins_of_the_previous_summary_are_carried_forward_before_new_ones():
    previous = "Old.\nPinned facts: ORD-1"
    text = with_pins(
        "Generic.",
        transcript=["User: ticket #4711"],
        previous=previous,
        budget_tokens=100,
        count_tokens=words,
        locale="en",
    )

    assert pinned_section(text, "en") == ("Generic.", ["ORD-1", "#4711"])


def test_the_oldest_pins_give_way_when_the_budget_is_full():
    transcript = [f"User: order ORD-{i}" for i in range(50)]
    text = with_pins(
        "Short.",
        transcript=transcript,
        previous=None,
        budget_tokens=10,
        count_tokens=words,
        locale="en",
    )

    _, pins = pinned_section(text, "en")
    assert words(text) <= 10
    assert pins[-1] == "ORD-49"
    assert "ORD-0" not in pins


def test_chinese_sections_use_the_chinese_header():
    text = with_pins(
        "摘要。",
        transcript=["用户：我叫李雷"],
        previous=None,
        budget_tokens=100,
        count_tokens=len,
        locale="zh",
    )

    assert text.endswith("固定事实：李雷")


def test_a_scan_resumes_after_the_lines_it_already_read() -> None:
    from memory_summary.domain import PinScan, extract_pins, scan_pins

    lines = ["User: order ORD-2041", "Assistant: ok", "User: my name is Ada King"]
    first = scan_pins(lines[:2])
    assert first == PinScan(2, ("ORD-2041",))
    # a resumed scan reads only the new line, and answers as a whole pass would
    assert scan_pins(lines, PinScan(2, ("ORD-2041",))).pins == tuple(
        extract_pins(lines)
    )
    assert scan_pins(lines, PinScan(3, ("X-1",))).pins == ("X-1",)  # nothing re-read


class _Unhashable:
    """A counter that cannot be a cache key: it is asked every time."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, text: str) -> int:
        self.asked.append(text)
        return len(text.split())


def test_pin_costs_are_each_counters_own():
    transcript = [f"User: order ORD-{i}" for i in range(30)]

    def pinned(count_tokens) -> list[str]:
        text = with_pins(
            "Short.",
            transcript=transcript,
            previous=None,
            budget_tokens=40,
            count_tokens=count_tokens,
            locale="en",
        )
        return pinned_section(text, "en")[1]

    def by_words(text: str) -> int:
        return len(text.split())

    def by_chars(text: str) -> int:  # another counter: pins cost more here
        return len(text)

    few, many = pinned(by_chars), pinned(by_words)
    assert len(few) < len(many)  # each counter weighs the pins its own way
    assert pinned(by_chars) == few
    assert pinned(by_words) == many

    unhashable = _Unhashable()
    assert pinned(unhashable) == many
    assert "ORD-29; " in unhashable.asked  # asked, not looked up


def _pinned(summary: str, transcript: list[str], previous: str | None = None) -> str:
    return with_pins(
        summary,
        transcript=transcript,
        previous=previous,
        budget_tokens=100,
        count_tokens=words,
        locale="en",
    )


@pytest.mark.parametrize(
    ("line", "pin"),
    [
        ("Tool result(get_weather): Lisbon: 20°C, rain", "Lisbon: 20°C"),
        (
            "User: The whole budget is 1,200 EUR, flights included.",
            "budget is 1,200 EUR",
        ),
        ('Call plan({"budget": "1,200 EUR"})', "budget: 1,200 EUR"),
        ("Assistant: Doubles cost 68 EUR a night.", "Doubles cost 68 EUR"),
    ],
)
def test_a_lost_quantity_is_pinned_with_what_it_measures(line, pin):
    assert _pinned("Nothing.", [line]) == f"Nothing.\nPinned facts: {pin}"


def test_a_quantity_said_with_nothing_it_measures_is_not_pinned():
    hits = "Tool result(web_search): 1. hotels - forum from site3.example, 12 days ago"

    assert _pinned("Nothing.", [hits, "User: 12 kg"]) == "Nothing."


def test_a_quantity_pin_is_kept_by_its_value_and_carried_once():
    assert _pinned("It was 20°C.", ["Tool result(w): Lisbon: 20°C"]) == "It was 20°C."
    carried = _pinned(
        "Nothing.",
        ["Tool result(w): Lisbon: 20°C"],
        previous="Old.\nPinned facts: Lisbon: 20°C",
    )
    assert carried == "Nothing.\nPinned facts: Lisbon: 20°C"
