from __future__ import annotations

from memory_summary.actors.turn_cover import TurnCover


def test_a_claimed_trigger_covers_turns_until_it_is_heard():
    cover = TurnCover()

    assert cover.claim("s")
    assert not cover.claim("s")  # one on its way: send no second
    assert cover.covered("s")
    assert not cover.covered("t")
    cover.heard("s")
    assert not cover.covered("s")
    assert cover.claim("s")


def test_a_waiting_follow_up_covers_turns_until_it_starts():
    cover = TurnCover()

    cover.follow_up("s", waiting=True)
    assert cover.covered("s")
    assert cover.claim("s")  # a follow-up is no trigger on its way
    cover.heard("s")
    assert cover.covered("s")
    cover.follow_up("s", waiting=False)
    assert not cover.covered("s")


def test_forgetting_a_session_drops_both():
    cover = TurnCover()
    cover.claim("s")
    cover.follow_up("s", waiting=True)

    cover.forget("s")

    assert not cover.covered("s")
