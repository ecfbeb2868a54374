"""The history index of every store: ``SearchContract``, plus a stateful property.

The property: after any sequence of saves, compactions, trims, pops, clears and
forgets, a message is found by a word only it holds exactly while it is stored, and
never after it was popped, cleared or forgotten; no search returns another session's
message.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from memory_summary import Message
from memory_summary.adapters import InMemoryStore
from memory_summary.domain.recall import query_terms
from memory_summary.testing.search_contract import SearchContract
from tests.contract.stores import dispose, make_store

SEARCHABLE_KINDS = ["memory"]


@pytest.fixture(params=SEARCHABLE_KINDS)
def store(request, tmp_path):
    made = make_store(request.param, tmp_path)
    yield made
    dispose(made)


class TestInMemorySearch(SearchContract):
    def make_store(self, tmp_path):
        return InMemoryStore()


_WORDS = itertools.count()


def _unique_word() -> str:
    # Letters only: a word no stemmer folds into another one of the run.
    n = next(_WORDS)
    letters = ""
    while True:
        n, r = divmod(n, 26)
        letters += "abcdefghijklmnopqrstuvwxyz"[r]
        if n == 0:
            break
    return f"qz{letters}x"


class IndexMachine(RuleBasedStateMachine):
    """Two sessions; the model is the set of stored (session, word, id) triples."""

    store: object

    @initialize()
    def start(self) -> None:
        base = _unique_word()
        self.sessions = (f"{base}-a", f"{base}-b")
        self.stored: dict[str, dict[int, str]] = {s: {} for s in self.sessions}
        self.gone: list[tuple[str, str]] = []
        self.generation: dict[str, str | None] = dict.fromkeys(self.sessions)

    @rule(which=st.integers(0, 1), filler=st.sampled_from(["", "the cat ", "北京 "]))
    def save(self, which: int, filler: str) -> None:
        sid = self.sessions[which]
        word = _unique_word()
        saved = self.store.save_message(sid, Message("user", f"{filler}{word}"))
        self.stored[sid][saved.id] = word

    @rule(which=st.integers(0, 1), keep=st.integers(0, 3))
    def compact(self, which: int, keep: int) -> None:
        sid = self.sessions[which]
        active = self.store.get_history(sid)
        fold = active[: max(len(active) - keep, 0)]
        if not fold:
            return
        generation = _unique_word()
        result = self.store.commit_compaction(
            sid,
            namespace="summary",
            record={"text": "s", "generation": generation},
            expect_generation=self.generation[sid],
            through_id=fold[-1].id,
            expect_archived=len(fold),
        )
        assert result.committed
        self.generation[sid] = generation

    @rule(which=st.integers(0, 1), keep=st.integers(0, 3))
    def trim(self, which: int, keep: int) -> None:
        self.store.trim_history(self.sessions[which], keep)

    @rule(which=st.integers(0, 1))
    def pop(self, which: int) -> None:
        sid = self.sessions[which]
        popped = self.store.pop_message(sid)
        if popped is not None:
            self.gone.append((sid, self.stored[sid].pop(popped.id)))

    @rule(which=st.integers(0, 1), forget=st.booleans())
    def clear(self, which: int, forget: bool) -> None:
        sid = self.sessions[which]
        if forget:
            self.store.forget_session(sid, namespaces=("summary",))
            self.generation[sid] = None
        else:
            self.store.clear_session(sid)
        self.gone.extend((sid, word) for word in self.stored[sid].values())
        self.stored[sid] = {}

    @invariant()
    def found_exactly_while_stored(self) -> None:
        for sid in self.sessions:
            for message_id, word in self.stored[sid].items():
                hits = self.store.search_messages(sid, query_terms(word), limit=5)
                assert [h.message.id for h in hits] == [message_id]
            for other in self.sessions:
                if other != sid:
                    for word in self.stored[other].values():
                        hits = self.store.search_messages(
                            sid, query_terms(word), limit=5
                        )
                        assert hits == []
        for sid, word in self.gone[-10:]:
            assert self.store.search_messages(sid, query_terms(word), limit=5) == []


def test_a_message_is_found_exactly_while_it_is_stored(store) -> None:
    IndexMachine.store = store
    run_state_machine_as_test(
        IndexMachine,
        settings=settings(max_examples=25, stateful_step_count=20, deadline=None),
    )
