"""A pure, scripted world for ``domain.compression``: it answers every action.

No threads, no store, no clock: the history is a list, the record a value, the
summarizer a script of answers. Tests drive ``start``/``step`` through it and look
at what was committed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from memory_summary.domain import (
    Message,
    NativeArtifact,
    SummaryConfig,
    SummaryRecord,
    SummaryReply,
    is_host_instruction,
    plan_compression,
)
from memory_summary.domain.compression import CompressionState, start, step
from memory_summary.domain.compression_io import (
    Action,
    ArchivedRead,
    BacklogRead,
    Began,
    Begin,
    BreakerRefused,
    CallFailed,
    Cancelled,
    Commit,
    Committed,
    Fenced,
    Finish,
    LeaseHeld,
    Measure,
    Measured,
    Observation,
    ReadArchived,
    ReadBacklog,
    ReadRecord,
    ReadWindow,
    RecordRead,
    Replied,
    Setting,
    StoreFailed,
    Summarize,
    SummaryModel,
    ThreadFailed,
    WindowRead,
)
from memory_summary.domain.events import Event

GOOD = "The user and the assistant talked about trains, timetables and tickets."
ANSWERS = ("ok", "fail", "long", "reject", "open", "cancel", "store")


def count(text: str) -> int:
    """Count tokens as a quarter of the characters, at least one."""
    return len(text) // 4 + 1


def history(count_: int, *, first_id: int = 1) -> list[Message]:
    """Return ``count_`` stored user/assistant messages with ids from ``first_id``."""
    return [
        Message(
            "user" if i % 2 == 0 else "assistant",
            f"turn {i} about order ORD-{i}",
            id=first_id + i,
        )
        for i in range(count_)
    ]


@attrs.define
class World:
    """A session's store and summarizer, answering a compression's actions.

    Attributes:
        answers: what the summarizer does per call, in order (``ANSWERS``); when
            the script runs out, it answers well.
        fence_commit: the commit (1-based) that is fenced, if any.
        lease_held: another worker holds the lease.
        breaker_open: the breaker reads as open when the window is read.
        context_length: the summary model's context length.
        estimate_usage: counts usage the summarizer does not report (else ``count``).
    """

    config: SummaryConfig
    active: list[Message]
    record: SummaryRecord | None = None
    archived: list[Message] = attrs.field(factory=list)
    answers: list[str] = attrs.field(factory=list)
    fence_commit: int | None = None
    lease_held: bool = False
    breaker_open: bool = False
    context_length: int | None = 128_000
    estimate_usage: Callable[[str], int] | None = None
    native: bool = False  # folds natively; "native" (or "native-long") answers a block
    commits: list[Commit] = attrs.field(factory=list)
    actions: list[Action] = attrs.field(factory=list)
    events: list[Event] = attrs.field(factory=list)
    calls: int = 0

    def model(self) -> SummaryModel:
        config, length = self.config, self.context_length

        def plan(reason, keep, instructions=""):
            return plan_compression(
                config,
                context_length=length,
                reason=reason,
                keep=keep,
                count_tokens=count,
                instructions=instructions,
            )

        return SummaryModel(
            "fake-model", count, plan, self.estimate_usage, native=self.native
        )

    def answer(self, action: Action) -> Observation:
        match action:
            case Measure(limit=limit):
                return Measured(
                    self.record, tuple(self.active[-limit:]), len(self.active)
                )
            case Begin():
                return LeaseHeld() if self.lease_held else Began(self.model())
            case ReadRecord(window=None):
                return RecordRead(self.record)
            case ReadRecord(window=limit):
                window = self.answer(ReadWindow(limit))
                assert isinstance(window, WindowRead)
                return RecordRead(self.record, window)
            case ReadArchived(after_id=after, through_id=through, limit=limit):
                page = [m for m in self.archived if after < m.id <= through]
                return ArchivedRead(tuple(page[:limit]))
            case ReadWindow(limit=limit):
                return WindowRead(
                    tuple(self.active[-limit:]), len(self.active), self.breaker_open
                )
            case ReadBacklog(after_id=after, limit=limit):
                page = [m for m in self.active if after is None or m.id > after]
                return BacklogRead(tuple(page[:limit]))
            case Summarize():
                return self._summarize()
            case Commit():
                return self._commit(action)
        raise AssertionError(f"unexpected action {action!r}")

    def _summarize(self) -> Observation:
        self.calls += 1
        answer = self.answers.pop(0) if self.answers else "ok"
        match answer:
            case "ok":
                return Replied(SummaryReply(f"{GOOD} Call {self.calls}."), 0.5)
            case "native" | "native-long":
                text = f"{GOOD} Call {self.calls}."
                if answer == "native-long":  # far over any summary budget
                    text = f"{text} {GOOD * 2000}"
                block = {"type": "compaction", "content": text, "signature": "s"}
                artifact = NativeArtifact("anthropic", "m", block)
                return Replied(SummaryReply(text, native=artifact), 0.5)
            case "fail":
                return CallFailed("RuntimeError: down")
            case "long":
                return CallFailed("context length exceeded", too_long=True)
            case "reject":
                return Replied(SummaryReply(""), 0.5)
            case "open":
                return BreakerRefused()
            case "cancel":
                return Cancelled()
            case "store":
                return StoreFailed("the database restarted")
            case "thread":
                return ThreadFailed("memory-summary-llm: can't start new thread")
        raise AssertionError(answer)

    def _commit(self, action: Commit) -> Observation:
        self.commits.append(action)
        if self.fence_commit == len(self.commits):
            return Fenced("generation")
        expected = None if self.record is None else self.record.generation or ""
        if action.expect_generation != expected:
            return Fenced("generation")
        archived: list[Message] = []
        if action.through_id is not None:
            archived = [
                m
                for m in self.active
                if m.id <= action.through_id and not is_host_instruction(m)
            ]
            if len(archived) != action.expect_archived:
                return Fenced("archive")
            self.active = [m for m in self.active if m not in archived]
            self.archived = sorted([*self.archived, *archived], key=lambda m: m.id)
        self.record = attrs.evolve(action.record, generation=f"g{len(self.commits)}")
        return Committed(self.record, len(archived))


def run(
    world: World, setting: Setting, *, max_steps: int = 10_000
) -> tuple[Finish, CompressionState]:
    """Drive one compression to its end; return its ``Finish`` and last state."""
    state, action = start(setting)
    for _ in range(max_steps):
        world.actions.append(action)
        world.events.extend(action.effects.events)
        if isinstance(action, Finish):
            return action, state
        state, action = step(state, world.answer(action))
    raise AssertionError("the compression did not finish")


def setting_for(
    config: SummaryConfig, reason: str = "manual", **changes: object
) -> Setting:
    """Return a ``Setting`` for session ``s``."""
    return Setting(session_id="s", reason=reason, config=config, **changes)  # type: ignore[arg-type]


def ids(messages: Sequence[Message]) -> list[int]:
    """Return the ids of ``messages``."""
    return [m.id for m in messages]  # type: ignore[misc]
