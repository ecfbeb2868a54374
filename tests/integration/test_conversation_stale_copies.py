"""A copy of a summary the store no longer holds is still the engine's.

Told only by the store's summaries, an injected text the host handed back was read
as the host's once its summary left the store: with ``summary_versions_kept=0`` a
request re-fed across compressions carried one more summary each time, and after
``clear`` (or ``forget``) the earlier injection rode in every request and ``add``
stored it. The engine remembers the texts it injected for each session, through
``clear`` and ``forget``.
"""

from __future__ import annotations

import pytest

from memory_summary import MessageError, SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore
from memory_summary.domain.injection import HEADERS
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.integration.test_conversation import completion
from tests.integration.test_conversation_summary_copies import _compressed

HOST = {"role": "system", "content": "Be brief."}


def _summaries(request):
    return sum(str(m.get("content")).count(HEADERS["en"]) for m in request)


@pytest.mark.parametrize("placement", ["merge", "separate"])
def test_a_request_refed_across_compressions_keeps_one_summary_with_none_kept(
    placement,
):
    config = SummaryConfig(threshold=12, keep_recent=6, summary_versions_kept=0)
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer(), config=config) as e:
        chat = e.conversation("s")
        request = None
        counts = []
        for turn in range(3):
            _compressed(e, chat)
            prepared = chat.prepare("hello", system="Be brief.")
            chat.record(completion("ok"))
            fed = (
                prepared
                if request is None
                else [*request, {"role": "user", "content": f"r{turn}"}]
            )
            request = e.assemble_openai(fed, "s", placement=placement)
            counts.append((_summaries(prepared), _summaries(request)))

        assert counts == [(1, 1)] * 3
        assert e.summary_history("s")[:-1] == []  # the older texts left the store
        with pytest.raises(MessageError, match="summary the engine injected"):
            chat.add(prepared[0])


@pytest.mark.parametrize("erase", ["clear", "forget"])
def test_a_copy_of_an_erased_summary_is_dropped_and_refused(erase):
    store = InMemoryStore()
    config = SummaryConfig(threshold=12, keep_recent=6)
    with SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine:
        chat = engine.conversation("s")
        _compressed(engine, chat)
        user = {"role": "user", "content": "hi"}
        merged = engine.assemble_openai([HOST, user], "s", placement="merge")
        separate = engine.assemble_openai([HOST, user], "s")
        prepared = chat.prepare("x", system="Be brief.")
        chat.record(completion("ok"))

        if erase == "clear":
            engine.clear("session", session_id="s")
        else:
            engine.forget("s")
        again = [
            engine.assemble_openai(merged, "s", placement="merge"),
            engine.assemble_openai(separate, "s"),
            engine.assemble_openai(prepared, "s", placement="merge"),
        ]

        assert engine.build_prompt("s") is None
        assert [_summaries(request) for request in again] == [0, 0, 0]
        assert again[0][0] == HOST
        before = len(store.get_history("s"))
        for stale in (merged[0], separate[1], prepared[0]):
            with pytest.raises(MessageError, match="summary the engine injected"):
                engine.conversation("s").add(stale)
        assert len(store.get_history("s")) == before
