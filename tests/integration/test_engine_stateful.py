"""A stateful test of the engine: turns, usage, compressions, clears, forgets, failures
and restarts.

The property: no sequence ever archives a message that is neither in the summary, nor
in a range recorded as archived without one, nor erased by ``forget`` (a ``clear``
drops the summary on purpose: what it covered may be uncovered afterwards).
"""

from __future__ import annotations

import os

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memory_summary import Compressing, Message, SummaryConfig, SummaryEngine, ToolCall
from memory_summary.adapters import InMemoryStore
from memory_summary.testing.fakes import OverlapRecorder
from tests.conftest import chars_counter_for

SESSIONS = ("a", "b")


class SwitchableSummarizer:
    """Answers with a summary, or fails while ``failing`` is set."""

    def __init__(self) -> None:
        self.failing = False

    def context_length(self, model=None):
        return 3000  # small: long backlogs are folded in several chunks

    def complete(self, messages, **kwargs):
        if self.failing:
            raise RuntimeError("summarizer down")
        return (
            f"Summary over {len(messages[-1].content)} characters of the conversation."
        )


class EngineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = InMemoryStore()
        self.llm = SwitchableSummarizer()
        self.recorder = OverlapRecorder()
        self.engine = self._engine()
        self.saved: dict[str, list[Message]] = {sid: [] for sid in SESSIONS}
        self.may_be_uncovered: set[int] = set()
        self.archived: dict[str, set[int]] = {sid: set() for sid in SESSIONS}
        self.calls = 0

    def _engine(self) -> SummaryEngine:
        engine = SummaryEngine(
            self.store,
            self.llm,
            config=SummaryConfig(threshold=8, keep_recent=3, probe_floor=10),
            count_tokens_for=chars_counter_for,
        )
        engine.subscribe(self.recorder)
        return engine

    def teardown(self) -> None:
        self.engine.stop(timeout=5)

    def _settle(self) -> None:
        assert self.engine.wait_idle(timeout=20)
        for sid in SESSIONS:
            full = self.store.get_full_history(sid)
            active_ids = {m.id for m in self.store.get_history(sid)}
            self.archived[sid] = {m.id for m in full} - active_ids

    @rule(sid=st.sampled_from(SESSIONS), count=st.integers(1, 12), tools=st.booleans())
    def save_messages(self, sid, count, tools):
        for index in range(count):
            if tools and index % 3 == 0:
                self.calls += 1
                call = ToolCall(f"c{self.calls}", "search", '{"q": 1}')
                for message in (
                    Message("assistant", "", tool_calls=[call]),
                    Message("tool", "x" * 300, tool_call_id=call.id),
                ):
                    self.saved[sid].append(self.store.save_message(sid, message))
            else:
                role = "user" if index % 2 == 0 else "assistant"
                self.saved[sid].append(
                    self.store.save_message(sid, Message(role, f"m{index}"))
                )

    @rule(
        sid=st.sampled_from(SESSIONS),
        outcome=st.sampled_from(["replied", "aborted", "error"]),
    )
    def turn(self, sid, outcome):
        self.engine.turn_after(sid, outcome)
        self._settle()

    @rule(sid=st.sampled_from(SESSIONS), ratio=st.floats(0, 1.2))
    def usage(self, sid, ratio):
        self.engine.token_usage(sid, ratio)
        self._settle()

    @rule(sid=st.sampled_from(SESSIONS), reason=st.sampled_from(["manual", "auto"]))
    def compress(self, sid, reason):
        outcome = self.engine.compress(sid, reason).result(timeout=20)
        # failed: nothing new to fold while recovering an outage's ranges paused
        assert outcome.kind in ("compressed", "trimmed", "skipped", "failed")
        if outcome.kind == "failed":
            assert outcome.detail.startswith("recovery paused")
        self._settle()

    @rule(sid=st.sampled_from(SESSIONS))
    def resummarize(self, sid):
        outcome = self.engine.resummarize(sid).result(timeout=20)
        # trimmed: after recovering, the threshold held and the summarizer was down
        assert outcome.kind in ("compressed", "trimmed", "skipped", "failed")
        self._settle()

    @rule(sid=st.sampled_from(SESSIONS))
    def forget(self, sid):
        self.engine.forget(sid)
        self.saved[sid] = []
        self.may_be_uncovered -= self.archived[sid]
        self._settle()

    @rule()
    def restart(self):
        self.engine.stop(timeout=5)
        self.engine = self._engine()

    @rule(sid=st.sampled_from(SESSIONS))
    def burst(self, sid):
        for _ in range(3):
            self.engine.compress(sid)
            self.engine.turn_after(sid)
        self._settle()

    @rule(failing=st.booleans())
    def switch_summarizer(self, failing):
        self.llm.failing = failing

    @precondition(lambda self: any(self.saved.values()))
    @rule(sid=st.sampled_from(SESSIONS), everything=st.booleans())
    def clear(self, sid, everything):
        if everything:
            self.engine.clear("all")
            for archived in self.archived.values():
                self.may_be_uncovered |= archived
        else:
            self.engine.clear("session", sid)
            self.may_be_uncovered |= self.archived[sid]

    @invariant()
    def no_message_is_lost_and_active_is_a_suffix(self):
        for sid in SESSIONS:
            full = self.store.get_full_history(sid)
            active = self.store.get_history(sid)
            assert full == self.saved[sid]
            assert full[len(full) - len(active) :] == active

    @invariant()
    def no_kept_part_starts_inside_a_tool_call_group(self):
        for sid in SESSIONS:
            active = self.store.get_history(sid)
            archived_calls = {
                c.id
                for m in self.store.get_full_history(sid)
                if m.id in self.archived[sid]
                for c in m.tool_calls
            }
            assert not any(
                m.tool_call_id in archived_calls for m in active if m.role == "tool"
            )

    @invariant()
    def every_archived_message_is_in_the_summary_or_a_recorded_range(self):
        for sid in SESSIONS:
            must_cover = self.archived[sid] - self.may_be_uncovered
            if not must_cover:
                continue
            record = self.engine.summary(sid)
            assert record is not None
            covered = record.covered_through_id
            for mid in must_cover:
                in_summary = covered is not None and mid <= covered
                in_range = any(a <= mid <= b for a, b in record.unsummarized)
                assert in_summary or in_range, f"message {mid} is covered nowhere"

    @invariant()
    def never_two_compressions_of_one_session_at_once(self):
        assert self.recorder.overlaps == []
        assert all(
            e.status in ("start", "done", "error")
            for e in self.recorder.events
            if isinstance(e, Compressing)
        )


EngineMachine.TestCase.settings = settings(
    max_examples=150 if os.environ.get("CI") else 20,
    stateful_step_count=40,
    deadline=None,
)
TestEngineMachine = EngineMachine.TestCase
