"""A ``stop()`` racing ``record``: the reply is stored and reported, or neither.

A stop that began once the reply was saved made ``record`` raise ``EngineClosed``
with the reply stored, so a host that retried stored it twice. Now the save decides:
before it, ``EngineClosed`` and nothing stored; after it, ``record`` returns.
"""

from __future__ import annotations

import threading

import pytest

from memory_summary import EngineClosed, SummaryEngine
from memory_summary.adapters import InMemoryStore

WAIT_S = 5.0
"""Only a bound on a hang; no assertion is about time."""

REPLY = {
    "model": "gpt-4o",
    "choices": [{"message": {"role": "assistant", "content": "Done."}}],
    "usage": {"prompt_tokens": 10},
}


class PausingStore(InMemoryStore):
    """Pauses after a batch is saved, once ``armed``, until ``resume`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.saved = threading.Event()
        self.resume = threading.Event()

    def save_messages(self, session_id, messages):
        stored = super().save_messages(session_id, messages)
        if self.armed:
            self.saved.set()
            self.resume.wait(WAIT_S)
        return stored


def test_a_stop_once_the_reply_is_saved_is_no_failure_of_record():
    store = PausingStore()
    engine = SummaryEngine(store).start()
    chat = engine.conversation("s")
    chat.prepare("Finish it.")
    store.armed = True
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(_record(chat, REPLY)))

    worker.start()
    assert store.saved.wait(WAIT_S)
    engine.stop()
    store.resume.set()
    worker.join(WAIT_S)

    assert [recorded.reply.text for recorded in got] == ["Done."]
    assert [m.text for m in store.get_history("s")] == ["Finish it.", "Done."]
    with pytest.raises(EngineClosed):  # a retry is refused, never stored again
        chat.record(REPLY)


def test_a_stop_before_the_save_raises_and_stores_nothing():
    store = InMemoryStore()
    engine = SummaryEngine(store).start()
    chat = engine.conversation("s")
    chat.prepare("Finish it.")

    class StoppingUsage:  # read after record's first check, before its save
        def model_dump(self, **_):
            engine.stop()
            return {"prompt_tokens": 10}

    with pytest.raises(EngineClosed):
        chat.record(REPLY, usage=StoppingUsage())

    assert [m.text for m in store.get_history("s")] == ["Finish it."]


def _record(chat, reply):
    try:
        return chat.record(reply)
    except EngineClosed as exc:
        return exc
