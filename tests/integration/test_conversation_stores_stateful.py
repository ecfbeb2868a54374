"""The handle's request is assemble's on every store, whoever wrote what between turns.

``test_conversation_requests`` drives the handle against ``assemble`` on the
in-memory store; this drives it on SQLite and Redis too (each store tells its own
``ActiveSpan``), with the edits a second writer makes most (a reply popped and
another saved, then the handle's own save) and the engine's ``forget`` and
``clear``. Each store is opened by the machine and closed in its teardown.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore, SqliteStore
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.contract.stores import dispose, make_redis
from tests.integration.test_conversation_requests import (
    SID,
    HandleAgainstAssemble,
    words,
)


class HandleOnAStore(HandleAgainstAssemble):
    """``HandleAgainstAssemble`` on the store ``kind`` names, with more writers."""

    kind = "memory"

    @initialize(
        mask=st.sampled_from([None, 1, 3]),
        system=st.sampled_from([None, "", "Be brief."]),
    )
    def start(self, mask, system):
        self.folder = None
        if self.kind == "sqlite":
            self.folder = tempfile.TemporaryDirectory()
            self.store = SqliteStore(Path(self.folder.name) / "store.sqlite3")
        elif self.kind == "redis":
            self.store = make_redis()
        else:
            self.store = InMemoryStore()
        config = SummaryConfig(
            threshold=400, keep_recent=3, mask_tool_results_after=mask
        )
        self.engine = SummaryEngine(
            self.store, InstrumentedSummarizer(), config=config
        ).start()
        self.chat = self.engine.conversation(SID)
        self.system = system
        self.calls = 0

    def teardown(self):
        super().teardown()
        if hasattr(self, "store"):
            dispose(self.store)
        if getattr(self, "folder", None) is not None:
            self.folder.cleanup()

    def a_request_list_is_the_callers(self):
        """Not an invariant here: a prepare after every step would read each write
        beside the handle before the handle's own next save (the case to find)."""

    @rule(text=words)
    def regenerate(self, text):
        """Another writer takes the newest message back and saves another."""
        self.store.pop_message(SID)
        self.store.save_message(SID, Message("assistant", f"{text} (again)"))

    @rule(text=words)
    def add_user(self, text):
        self.chat.add({"role": "user", "content": text})

    @rule()
    def forget(self):
        self.engine.forget(SID)

    @rule()
    def clear_summary(self):
        assert self.engine.clear("session", SID)[0].success


def _case(kind: str) -> type:
    machine = type(f"HandleOn_{kind}", (HandleOnAStore,), {"kind": kind})
    case = machine.TestCase
    case.settings = settings(
        settings.get_profile(settings._current_profile or "dev"),
        stateful_step_count=30,
    )
    return case


TestHandleOnMemory = _case("memory")
TestHandleOnSqlite = _case("sqlite")
TestHandleOnRedis = pytest.mark.redis(_case("redis"))
