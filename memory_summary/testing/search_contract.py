"""The contract of a searchable store (``SearchableStore``) as a pytest class.

Opt-in, beside ``StoreContract``: a store that offers the history search subclasses
it the same way::

    from memory_summary.testing.search_contract import SearchContract

    class TestMySearch(SearchContract):
        def make_store(self, tmp_path):
            return MyStore(...)

It checks that every message is found by its words exactly while it is stored (saved,
archived by a commit, popped, cleared, forgotten), only in its own session, ranked as
the reference ranking (``domain.ranking``) ranks it; that queries a user or a model
may type (quotes, operators, SQL, CJK, emoji, 10 KB) never break the store; and that
reads return neighbours and ranges in order. Needs ``pip install
'memory-summary[testing]'``.
"""

from __future__ import annotations

from typing import Any

import pytest

from memory_summary import Message, ToolCall
from memory_summary.domain.forms import with_forms
from memory_summary.domain.ranking import PER_TERM, reference_search
from memory_summary.domain.recall import QueryError, message_terms, query_terms

from .fencing_contract import commit
from .store_fixtures import StoreFixtures

__all__ = ["HOSTILE_QUERIES", "SearchContract"]

HOSTILE_QUERIES = (
    '"unterminated zebra',
    "zebra'; DROP TABLE messages; --",
    "zebra OR 1=1",
    "NEAR(zebra giraffe)",
    "zebra AND NOT giraffe",
    "content:zebra",
    "{content}: zebra",
    "^zebra*",
    "zebra & !giraffe | (x <-> y)",
    "zebra:* | 'quoted'",
    "%_\\ zebra",
    "zebra \x00 NUL",
    "zebra \ud800 lone surrogate",
    "zebra 🦓 emoji",
    "\uff5a\uff45\uff42\uff52\uff41 full width",
    "zebra " + "x" * 10_000,
    "zebra " * 2_000,
    "北京 zebra",
)
"""Queries that hold the word "zebra" among hostile text; each must find it."""

NOT_SEARCHABLE = ("", "   ", "🦓🦓", "\ud800", "?!*\"'", "\x00")


def _save(store: Any, sid: str, *texts: str) -> list[Message]:
    return [store.save_message(sid, Message("user", text)) for text in texts]


def _ids(found: list[Any]) -> list[int]:
    return [hit.message.id for hit in found]


def _search(store: Any, sid: str, query: str, **kwargs: Any) -> list[Any]:
    kwargs.setdefault("limit", 10)
    return list(store.search_messages(sid, query_terms(query), **kwargs))


class SearchContract(StoreFixtures):
    """Every ``SearchableStore`` test; a subclass provides ``make_store``."""

    # -- finding

    def test_a_message_is_found_by_a_word_it_holds(self, store: Any, sid: str) -> None:
        saved = _save(store, sid, "I adopted a zebra", "the weather is nice")

        found = _search(store, sid, "zebra")

        # a neighbour may follow, lent a share of the score (domain.ranking)
        assert all(hit.score < found[0].score for hit in found[1:])
        assert found[0].message == saved[0]
        assert found[0].archived is False
        assert found[0].score > 0

    def test_stemming_finds_other_forms_of_a_word(self, store: Any, sid: str) -> None:
        saved = _save(store, sid, "She went dancing on Friday", "nothing here")

        assert _ids(_search(store, sid, "Which dances?"))[0] == saved[0].id

    def test_other_sessions_are_never_returned(self, store: Any, sid: str) -> None:
        mine = _save(store, sid, "zebra one")
        _save(store, f"{sid}-other", "zebra two", "zebra three")

        assert _ids(_search(store, sid, "zebra")) == [mine[0].id]
        assert _search(store, f"{sid}-nobody", "zebra") == []

    def test_archived_messages_are_found_and_flagged(
        self, store: Any, sid: str
    ) -> None:
        saved = _save(store, sid, "old zebra", "new zebra zebra")
        store.trim_history(sid, 1)

        found = {hit.message.id: hit.archived for hit in _search(store, sid, "zebra")}
        archived = _search(store, sid, "zebra", archived_only=True)

        assert found == {saved[0].id: True, saved[1].id: False}
        assert _ids(archived) == [saved[0].id]

    def test_a_compression_commit_keeps_messages_findable(
        self, store: Any, sid: str
    ) -> None:
        saved = _save(store, sid, "zebra a", "zebra b", "zebra c")

        commit(
            store,
            sid,
            record={"text": "s", "generation": "g1"},
            through_id=saved[1].id,
            expect_archived=2,
        )

        found = {hit.message.id: hit.archived for hit in _search(store, sid, "zebra")}
        assert found == {saved[0].id: True, saved[1].id: True, saved[2].id: False}

    def test_popped_cleared_and_forgotten_messages_are_not_found(
        self, store: Any, sid: str
    ) -> None:
        _save(store, sid, "zebra kept", "zebra popped")
        _save(store, f"{sid}-c", "zebra cleared")
        _save(store, f"{sid}-f", "zebra forgotten")

        if callable(getattr(store, "pop_message", None)):
            store.pop_message(sid)
            assert [h.message.text for h in _search(store, sid, "zebra")] == [
                "zebra kept"
            ]
        store.clear_session(f"{sid}-c")
        store.forget_session(f"{sid}-f", namespaces=("summary",))

        assert _search(store, f"{sid}-c", "zebra") == []
        assert _search(store, f"{sid}-f", "zebra") == []
        store.clear_all()
        assert _search(store, sid, "zebra") == []

    def test_rarer_and_repeated_words_rank_first_like_the_reference(
        self, store: Any, sid: str
    ) -> None:
        texts = [
            "the cat sat on the mat",
            "a cat and a zebra",
            "zebra zebra zebra on the plain",
            "the dog barked at the cat",
            "nothing in common at all",
            "a long message about a cat, a dog, a bird, a fish and a horse",
        ]
        saved = _save(store, sid, *texts)
        documents = [(m.id, message_terms(m)) for m in saved]

        for query in ("zebra cat", "mat", "dog zebra", "horse cat", "plain bird"):
            ranked = reference_search(documents, query_terms(query), 3)  # type: ignore[arg-type]
            expected = [i for i, _ in ranked]
            assert _ids(_search(store, sid, query, limit=3)) == expected, query

    def test_a_big_session_ranks_its_bounded_candidates_like_the_reference(
        self, store: Any, sid: str
    ) -> None:
        # "common" is held by more messages than a term brings candidates
        # (PER_TERM): the reference and the store must bound them alike, and an old
        # message holding a rare term is still found.
        size = 3 * (PER_TERM + 20)
        texts = [
            ("common " if i % 3 == 0 else "") + f"word{i % 50} " + "pad " * (i % 7)
            for i in range(size)
        ]
        texts[3] = "common rare and common again"
        saved = _save(store, sid, *texts)
        documents = [(m.id, message_terms(m)) for m in saved]

        for query in ("common rare", "common", "common word7", "word3 pad"):
            ranked = reference_search(documents, query_terms(query), 10)  # type: ignore[arg-type]
            expected = [i for i, _ in ranked]
            assert _ids(_search(store, sid, query)) == expected, query
        assert _ids(_search(store, sid, "common rare"))[0] == saved[3].id

    def test_statistics_are_the_sessions_own_whatever_other_sessions_hold(
        self, store: Any, sid: str
    ) -> None:
        # "common" fills another session: counted over the whole store, it would be
        # in over half the messages and dropped from the query, and this session's
        # message holding it (no neighbour of a match) would never be found. Long
        # messages (200 and 20,000 terms) check each store counts lengths alike.
        _save(store, f"{sid}-other", *(f"common filler {i}" for i in range(20)))
        texts = [
            "common ground",
            "pad " * 200,
            "filler " * 20_000,
            "more padding here",
            "rare zebra",
            "rare zebra again",
        ]
        saved = _save(store, sid, *texts)
        documents = [(m.id, message_terms(m)) for m in saved]

        assert _ids(_search(store, sid, "common rare"))[0] == saved[0].id
        for query in ("common rare", "zebra common", "pad rare", "filler zebra"):
            ranked = reference_search(documents, query_terms(query), 10)  # type: ignore[arg-type]
            found = [(h.message.id, h.score) for h in _search(store, sid, query)]
            assert [i for i, _ in found] == [i for i, _ in ranked], query
            assert [s for _, s in found] == pytest.approx([s for _, s in ranked])

    def test_the_forms_of_a_word_rank_as_one_term_like_the_reference(
        self, store: Any, sid: str
    ) -> None:
        # The engine asks for "meet" with "met" (domain.forms): a message saying
        # "met" must score as one saying "meet" would, the forms' counts summed
        # ("met" in many messages makes the word common), and each form brings
        # candidates as rare as its word.
        texts = [
            "we met at the park",
            "meet me at the station",
            "the children met the teacher",
            "a child at the park",
            *(f"met filler {i}" for i in range(PER_TERM + 10)),
            "nothing here",
            "meeting the children again",
        ]
        saved = _save(store, sid, *texts)
        documents = [(m.id, message_terms(m)) for m in saved]

        for query in ("meet", "met children", "child park", "teacher meet child"):
            terms = with_forms(query_terms(query))
            ranked = reference_search(documents, terms, 10)  # type: ignore[arg-type]
            found = [
                (h.message.id, h.score)
                for h in store.search_messages(sid, terms, limit=10)
            ]
            assert [i for i, _ in found] == [i for i, _ in ranked], query
            assert [s for _, s in found] == pytest.approx([s for _, s in ranked])

    def test_neighbours_are_the_sessions_own_when_sessions_interleave(
        self, store: Any, sid: str
    ) -> None:
        # Another session writes 0 to 3 messages between two of this one's: a
        # neighbour is the session's next message, however far its id.
        saved = []
        for i in range(40):
            saved += _save(store, sid, f"w{i % 7} w{i % 11} pad{i % 3}")
            _save(store, f"{sid}-other", *[f"w{i % 7} other"] * (i * 5 % 4))
        documents = [(m.id, message_terms(m)) for m in saved]

        for query in ("w3 w5", "w6 pad1", "w10", "w0 w1 w2"):
            ranked = reference_search(documents, query_terms(query), 10)  # type: ignore[arg-type]
            found = [(h.message.id, h.score) for h in _search(store, sid, query)]
            assert [i for i, _ in found] == [i for i, _ in ranked], query
            assert [s for _, s in found] == pytest.approx([s for _, s in ranked])

    def test_limit_bounds_the_hits(self, store: Any, sid: str) -> None:
        _save(store, sid, *[f"zebra {i}" for i in range(12)])

        assert len(_search(store, sid, "zebra", limit=5)) == 5

    # -- what is indexed

    def test_tool_calls_names_and_content_parts_are_indexed(
        self, store: Any, sid: str
    ) -> None:
        call = store.save_message(
            sid,
            Message(
                "assistant",
                None,
                tool_calls=(ToolCall("c1", "lookup_weather", '{"city": "Lisbon"}'),),
            ),
        )
        parts = store.save_message(
            sid,
            Message(
                "user",
                [
                    {"type": "text", "text": "see this giraffe"},
                    {
                        "type": "image_url",
                        "image_url": {"url": "https://example.com/okapi.png"},
                    },
                ],
            ),
        )
        named = store.save_message(sid, Message("user", "hello", name="Melanie"))

        assert _ids(_search(store, sid, "lisbon"))[0] == call.id
        assert _ids(_search(store, sid, "weather"))[0] == call.id
        assert _ids(_search(store, sid, "giraffe"))[0] == parts.id
        assert _search(store, sid, "okapi") == []  # media is never indexed
        assert _ids(_search(store, sid, "melanie"))[0] == named.id

    def test_chinese_and_mixed_text_is_searchable(self, store: Any, sid: str) -> None:
        saved = _save(
            store,
            sid,
            "我们明天去北京大学参观",
            "上海的天气很好",
            "Meeting at 北京 station tomorrow",
        )

        assert set(_ids(_search(store, sid, "北京"))[:2]) == {saved[0].id, saved[2].id}
        assert _ids(_search(store, sid, "北京大学在哪里"))[0] == saved[0].id
        assert _ids(_search(store, sid, "天气"))[0] == saved[1].id
        assert _ids(_search(store, sid, "海"))[0] == saved[1].id
        assert _ids(_search(store, sid, "station 北京"))[0] == saved[2].id

    # -- hostile queries

    @pytest.mark.parametrize("query", HOSTILE_QUERIES)
    def test_hostile_queries_find_their_word_and_nothing_else_happens(
        self, store: Any, sid: str, query: str
    ) -> None:
        saved = _save(store, sid, "a zebra", "a giraffe")
        _save(store, f"{sid}-other", "zebra elsewhere")

        found = _search(store, sid, query)

        assert saved[0].id in _ids(found)
        assert all(hit.message.id in {m.id for m in saved} for hit in found)
        assert [m.id for m in store.get_full_history(sid)] == [m.id for m in saved]

    @pytest.mark.parametrize("query", NOT_SEARCHABLE)
    def test_a_query_without_words_is_a_clear_error(self, query: str) -> None:
        with pytest.raises(QueryError):
            query_terms(query)

    def test_stored_hostile_text_is_found_too(self, store: Any, sid: str) -> None:
        saved = _save(store, sid, '\'; DROP TABLE x; -- "zebra" NEAR(a) 🦓 \ud800')

        assert _ids(_search(store, sid, "zebra")) == [saved[0].id]

    # -- reading

    def test_read_returns_neighbours_in_order_archived_or_not(
        self, store: Any, sid: str
    ) -> None:
        saved = _save(store, sid, *[f"m{i}" for i in range(8)])
        _save(store, f"{sid}-other", "other")
        store.trim_history(sid, 4)

        around = store.read_messages(sid, saved[3].id, before=2, after=2)

        assert [h.message for h in around] == saved[1:6]
        assert [h.archived for h in around] == [True, True, True, False, False]
        assert [
            h.message for h in store.read_messages(sid, saved[0].id, before=5, after=0)
        ] == saved[:1]

    @pytest.mark.parametrize(
        ("before", "after"), [(-1, 2), (2, -1), (True, 2), (2, 1.5), (2, "3")]
    )
    def test_a_neighbourhood_that_is_no_count_is_a_clear_error(
        self, store: Any, sid: str, before: object, after: object
    ) -> None:
        saved = _save(store, sid, *[f"m{i}" for i in range(4)])

        with pytest.raises(ValueError, match="invalid"):
            store.read_messages(sid, saved[2].id, before=before, after=after)

    def test_read_of_an_id_not_in_the_session_is_empty(
        self, store: Any, sid: str
    ) -> None:
        _save(store, sid, "mine")
        other = _save(store, f"{sid}-other", "theirs")

        assert store.read_messages(sid, other[0].id, before=3, after=3) == []
        assert store.read_messages(sid, 10**12, before=3, after=3) == []

    def test_a_range_is_read_in_order_and_bounded(self, store: Any, sid: str) -> None:
        saved = _save(store, sid, *[f"m{i}" for i in range(6)])
        other = _save(store, f"{sid}-other", "theirs")

        found = store.read_message_range(sid, saved[1].id, other[0].id, limit=3)

        assert [h.message for h in found] == saved[1:4]
        assert store.read_message_range(sid, other[0].id, other[0].id, limit=3) == []
