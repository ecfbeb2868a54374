"""A compression that archived the oldest messages costs the next turn no history read.

The store's ``ActiveSpan`` (with its id sum) is then what remains of the handle's
transcript: the archived messages are dropped from it (``Transcript.archived_to``).
Anything else beside the compression (another writer's message, a cut through a
group of tool calls) reads the history again, and the request is ``assemble``'s.
"""

from __future__ import annotations

import pytest

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore
from memory_summary.domain import ActiveSpan, ToolCall
from memory_summary.testing.fakes import InstrumentedSummarizer
from memory_summary.transcripts import Transcript
from tests.contract.stores import SQL_KINDS, dispose, make_store
from tests.integration.test_conversation import completion, reference

CONFIG = SummaryConfig(threshold=400, keep_recent=4)  # compressions when asked


@pytest.fixture(params=SQL_KINDS)
def store(request, tmp_path):
    """A SQL store (its span carries an id sum) counting whole-history reads."""
    store = make_store(request.param, tmp_path)
    real = store.get_history
    store.history_reads = 0

    def get_history(session_id, limit=None):
        store.history_reads += 1
        return real(session_id, limit)

    store.get_history = get_history
    yield store
    dispose(store)


def _turns(chat, count, start=0):
    for turn in range(start, start + count):
        chat.prepare(f"question {turn}", system="Be brief.")
        chat.record(completion(f"answer {turn}"))


@pytest.mark.parametrize("format", ["openai", "anthropic", "responses"])
def test_a_committed_compression_drops_the_archived_messages_unread(store, format):
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("ann")
        _turns(chat, 6)
        chat.prepare(format=format)  # the transcript's Anthropic turns or items
        assert engine.compress("ann").result(timeout=10).kind == "compressed"
        reads = store.history_reads
        request = chat.prepare("after the compression", system="Be brief.")
        assert store.history_reads == reads  # nothing read again
        assert request == reference(engine, "ann", system="Be brief.")
        assert "answer 0" not in str(request)  # archived: in the summary alone
        reads = store.history_reads  # reference read it
        again = chat.prepare(format=format)
        assert store.history_reads == reads
        fresh = engine.conversation("ann")
        engine._transcripts.drop("ann")  # what a handle reading it all sends
        assert again == fresh.prepare(format=format)


def test_a_foreign_message_beside_a_compression_reads_the_history_again(store):
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("bob")
        _turns(chat, 6)
        store.save_message("bob", Message("user", "from another process"))
        assert engine.compress("bob").result(timeout=10).kind == "compressed"
        chat.record(completion("the handle's own reply"))
        reads = store.history_reads
        request = chat.prepare("next", system="Be brief.")
        assert store.history_reads == reads + 1
        assert request == reference(engine, "bob", system="Be brief.")
        assert "from another process" in str(request)


def _transcript() -> Transcript:
    """ids 1-7: user, assistant calling a and b, b's result, a's result, assistant,
    user, assistant (the results in the calls' order: a's, then b's)."""
    calls = (ToolCall("a", "f", "{}"), ToolCall("b", "f", "{}"))
    return Transcript.of(
        [
            Message("user", "one", id=1),
            Message("assistant", "", tool_calls=calls, id=2),
            Message("tool", "for a", tool_call_id="a", id=4),
            Message("tool", "for b", tool_call_id="b", id=3),
            Message("assistant", "five", id=5),
            Message("user", "six", id=6),
            Message("assistant", "seven", id=7),
        ]
    )


def test_the_span_of_the_newest_messages_drops_the_older_ones():
    transcript = _transcript()
    assert transcript.plain
    transcript.response_items()  # kept per message: cut with them
    assert transcript.archived_to(ActiveSpan(3, 5, 7, 18))
    assert [m.id for m in transcript.messages] == [5, 6, 7]
    assert [d["content"] for d in transcript.dicts] == ["five", "six", "seven"]
    assert len(transcript.response_items()) == 3
    assert transcript.anthropic_turns()[0]["role"] == "user"  # built again
    assert transcript.span == ActiveSpan(3, 5, 7, 18)


@pytest.mark.parametrize(
    "span",
    [
        ActiveSpan(3, 5, 7, None),  # no id sum: nothing proves the rest
        ActiveSpan(3, 5, 8, 19),  # another writer's newer message
        ActiveSpan(3, 5, 7, 19),  # the same ends, other ids between
        ActiveSpan(4, 3, 7, 21),  # a cut between the calls and their results
        ActiveSpan(7, 1, 7, 28),  # nothing archived: not this case
        ActiveSpan(0, None, None, 0),  # cleared
        ActiveSpan(2, 6, 7, 13),  # a message the transcript holds is not the first
    ],
)
def test_any_other_span_leaves_the_transcript_as_it_was(span):
    transcript = _transcript()
    before = (list(transcript.messages), transcript.span)
    if span.first_id == 6:
        transcript.messages[4] = Message("assistant", "five", id=9)  # out of order
        before = (list(transcript.messages), transcript.span)
    assert not transcript.archived_to(span)
    assert (transcript.messages, transcript.span) == before


def test_a_transcript_that_is_not_plain_is_read_again():
    transcript = Transcript.of(
        [
            Message("system", "kept below any summary", id=1),
            Message("user", "two", id=2),
            Message("assistant", "three", id=3),
        ]
    )
    assert not transcript.plain
    assert not transcript.archived_to(ActiveSpan(1, 3, 3, 3))


def test_an_anthropic_request_shares_the_closed_turns_it_kept():
    # Every thinking kept (the default): the turns are the transcript's, not copied
    # turn by turn for each request; the list is the caller's.
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer(), config=CONFIG) as e:
        chat = e.conversation("cy")
        _turns(chat, 3)
        first = chat.prepare("one more", format="anthropic")["messages"]
        first.append({"role": "assistant", "content": "the host's"})
        again = chat.prepare(format="anthropic")["messages"]
        assert len(again) == len(first) - 1
        assert all(a is b for a, b in zip(first[:-2], again[:-1], strict=True))
