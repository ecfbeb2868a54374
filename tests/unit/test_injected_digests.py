"""The engine's memory of the texts it injected is bounded per session and overall."""

from __future__ import annotations

from memory_summary.injected_prompts import InjectedDigests, text_digest


def test_each_session_keeps_its_latest_texts():
    digests = InjectedDigests(per_session=2, sessions=10)

    for text in ("one", "two", "one", "three"):
        digests.remember("s", text_digest(text))

    assert [digests.holds("s", t) for t in ("one", "two", "three")] == [
        True,
        False,
        True,
    ]
    assert not digests.holds("other", "one")


def test_the_least_recently_used_session_is_forgotten_first():
    digests = InjectedDigests(per_session=2, sessions=2)

    digests.remember("a", text_digest("x"))
    digests.remember("b", text_digest("x"))
    digests.remember("a", text_digest("y"))
    digests.remember("c", text_digest("x"))

    assert digests.holds("a", "x")
    assert not digests.holds("b", "x")
    assert digests.holds("c", "x")


def test_any_text_has_a_digest():
    assert text_digest("\ud800 lone") != text_digest("\ud801 lone")
