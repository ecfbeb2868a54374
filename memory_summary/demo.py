"""``memory-summary demo``: a simulated multi-session chat server on the real engine.

N sessions of generated conversations are driven from host threads through one
``SummaryEngine`` on a SQLite file, each turn as a chat server's: the conversation
handle's ``prepare``, the model (the generated reply), ``record`` with the request's
tokens as its usage (``add`` for a tool's result).

The demo starts from a fresh database and marks it as its own (a ``memory_summary_demo``
table): a later run replaces only a marked database, never a file it did not create,
unless asked to (``force``), and never creates directories.

Why about 480 lines: one command, its run (the host threads, the live display) and its
report (what each summary kept, to check against the conversation).
"""

from __future__ import annotations

import shlex
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from memory_summary.adapters import SqliteArchive, SqliteStore, TiktokenCounter
from memory_summary.domain import (
    Compressing,
    Summarizer,
    SummaryConfig,
    pinned_section,
)
from memory_summary.domain.redundancy import redundancy

from .conversations import SessionPlan, session_plan, session_turns
from .engine import SummaryEngine
from .sqlite_file import prepare_demo_database

HOST_CONTEXT_TOKENS = 8192  # the simulated chat model's window, for usage ratios
SHOWN_SESSIONS = 3  # sessions whose summary the report checks (s0, s1 and s2: Chinese)
STOP_WAIT_S = 10.0  # how long Ctrl-C or a failure waits for the running turns
Where = str  # "summary", "pinned", "recent messages" or "not kept"


def _plain(text: str) -> str:
    """Return ``text`` case-folded, without a leading article (compaction drops it)."""
    words = text.casefold().split()
    while words and words[0] in ("a", "an", "the"):
        words.pop(0)
    return " ".join(words)


def _where(key: str, summary: str, pins: str, active: str) -> Where:
    """Return where ``key`` is kept: in the summary, its pins, the active messages."""
    plain = _plain(key)
    for name, text in (("summary", summary), ("pinned", pins)):
        if plain in " ".join(text.casefold().split()):
            return name
    if plain in " ".join(active.casefold().split()):
        return "recent messages"
    return "not kept"


@attrs.frozen
class SessionKept:
    """What one session's summary kept of what its conversation was about."""

    session: str
    plan: SessionPlan
    summary_tokens: int
    compressions: int
    subjects: tuple[tuple[str, Where], ...]
    facts: tuple[tuple[str, str, Where], ...]  # the fact's words, its kind, where

    def lines(self) -> list[str]:
        locale = "Chinese" if self.plan.zh else "English"
        subjects = "; ".join(f"{s}: {w}" for s, w in self.subjects)
        facts = "; ".join(f"{k} ({kind}): {w}" for k, kind, w in self.facts)
        return [
            f"  {self.session}  {self.plan.topic.name} ({locale}), summary of "
            f"{self.summary_tokens} tokens after {self.compressions} compression(s)",
            f"      asked about   {subjects}",
            f"      facts stated  {facts}",
        ]


def session_kept(
    sid: str, plan: SessionPlan, injected: str, active: str, tokens: int, calls: int
) -> SessionKept:
    """Return what ``injected`` (a session's summary) kept of its ``plan``."""
    body, pins = pinned_section(injected, "zh" if plan.zh else "en")
    pinned = "; ".join(pins)
    return SessionKept(
        sid,
        plan,
        tokens,
        calls,
        tuple((s, _where(s, body, pinned, active)) for s in plan.topic.subjects),
        tuple(
            (f.key, f.kind, _where(f.key, body, pinned, active))
            for f in plan.topic.facts
        ),
    )


@attrs.define
class DemoStats:
    """Counters the progress display and the report read (guarded by ``lock``)."""

    sessions: int
    turns_planned: int
    sessions_done: int = 0
    turns: int = 0
    running: int = 0
    compressed: int = 0
    degraded: int = 0
    lock: threading.Lock = attrs.Factory(threading.Lock)
    turn_ns: list[int] = attrs.Factory(list)  # the library's calls' CPU, per turn

    def on_event(self, event: object) -> None:
        if not isinstance(event, Compressing):
            return
        with self.lock:
            if event.status == "start":
                self.running += 1
            else:
                self.running -= 1
                if event.status == "error":
                    self.degraded += 1
                elif event.detail != "nothing to compress":
                    self.compressed += 1

    def line(self) -> str:
        with self.lock:
            return (
                f"sessions {self.sessions_done}/{self.sessions} | turns "
                f"{self.turns}/{self.turns_planned} | {self._compressions()}"
            )

    def _compressions(self) -> str:
        return (
            f"compressions running {self.running}, done {self.compressed}, "
            f"degraded {self.degraded}"
        )

    def snapshot(self) -> tuple[int, str, str]:
        """Return turns done, the sessions text and the compressions text."""
        with self.lock:
            return (
                self.turns,
                f"sessions {self.sessions_done}/{self.sessions}",
                self._compressions(),
            )


@attrs.frozen
class DemoReport:
    """What the demo measured."""

    db: Path
    sessions: int
    turns: int
    compressions: int
    degraded: int
    tokens_without: int
    tokens_with: int
    turn_p50_us: float  # the CPU of the library's calls per turn (prepare, record, add)
    turn_p99_us: float
    seconds: float
    summarizer: str
    command: str = "memory-summary"
    kept: tuple[SessionKept, ...] = ()
    redundancy: float = 0.0  # of the final summaries (``domain.redundancy``)

    @property
    def saved_ratio(self) -> float:
        """Return the share of context tokens the summaries saved."""
        return (
            1 - self.tokens_with / self.tokens_without if self.tokens_without else 0.0
        )

    def render(self) -> str:
        db = shlex.quote(str(self.db))
        kept = []
        if self.kept:
            kept = [
                "",
                "What the summaries kept (each session is about one topic, asks about "
                "its subjects and states its facts once; compare with "
                f"`{self.command} inspect SESSION --db {db}`):",
            ]
            for session in self.kept:
                kept += session.lines()
        return "\n".join(
            [
                "",
                "memory-summary demo: done",
                f"  summarizer        {self.summarizer}",
                f"  sessions          {self.sessions}",
                f"  turns             {self.turns} in {self.seconds:.1f} s",
                f"  compressions      {self.compressions} "
                f"({self.degraded} degraded to trim-only)",
                f"  context tokens    {self.tokens_without:,} without summaries -> "
                f"{self.tokens_with:,} with them ({self.saved_ratio:.0%} saved)",
                f"  redundancy        {self.redundancy:.1%} of the summaries' "
                "characters repeat an earlier clause",
                f"  library per turn  p50 {self.turn_p50_us:.0f} us, "
                f"p99 {self.turn_p99_us:.0f} us of CPU (prepare, record, add)",
                f"  database          {self.db}",
                *kept,
                "",
                "Look inside:",
                f"  {self.command} inspect s0 --db {shlex.quote(str(self.db))}",
                f"  sqlite3 {shlex.quote(str(self.db))} "
                "'SELECT session_id, count(*) FROM messages GROUP BY 1'",
            ]
        )


def _percentile_us(samples: list[int], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] / 1000


def _drive_session(
    engine: SummaryEngine,
    store: SqliteStore,
    stats: DemoStats,
    index: int,
    turns: int,
    seed: int,
    count: Callable[[str], int],
    cancel: threading.Event,
) -> None:
    """Drive one session as a chat server does: ``prepare``, the model, ``record``.

    The model is the generated conversation: its reply is the turn's next message,
    and the request the handle prepared is what it would have read (its tokens
    are the reply's usage). A tool turn records the call, adds the tool's result
    and prepares again, as a host runs the tool and asks the model once more.
    """
    sid = f"s{index}"
    chat = engine.conversation(sid)
    for turn in session_turns(index, turns, seed):
        if cancel.is_set():  # Ctrl-C: the remaining turns never run
            return
        user, *rest = turn.messages
        elapsed = 0
        started = time.thread_time_ns()  # CPU: 8 host threads share one GIL
        request = chat.prepare(user)
        elapsed += time.thread_time_ns() - started
        for message in rest:
            if message.role == "tool":
                started = time.thread_time_ns()
                chat.add(message)
                request = chat.prepare()
                elapsed += time.thread_time_ns() - started
                continue
            used = _request_tokens(request, count)
            started = time.thread_time_ns()
            chat.record(message, usage=used)
            elapsed += time.thread_time_ns() - started
        with stats.lock:
            stats.turns += 1
            stats.turn_ns.append(elapsed)
    with stats.lock:
        stats.sessions_done += 1


def _request_tokens(request: object, count: Callable[[str], int]) -> int:
    """Return the tokens of an OpenAI request's texts, plus 4 a message."""
    assert isinstance(request, list)  # ``prepare``'s default format
    return sum(count(str(m.get("content") or "")) + 4 for m in request)


class RateColumn(ProgressColumn):
    """Turns per second, averaged since the start (shown from the first moment)."""

    def render(self, task: Task) -> Text:
        elapsed = task.elapsed or 0.0
        rate = task.completed / elapsed if elapsed > 0 else 0.0
        return Text(f"{rate:,.0f}/s", style="progress.data.speed")


class DemoProgress(Progress):
    """The progress line, and the compressions under it."""

    def __init__(self, stats: DemoStats, console: Console) -> None:
        self._stats = stats  # before Progress renders the first time
        super().__init__(
            TextColumn("{task.description}"),
            BarColumn(bar_width=16),
            MofNCompleteColumn(),
            TextColumn("turns"),
            TimeElapsedColumn(),
            RateColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            refresh_per_second=5,
        )

    def get_renderables(self) -> Iterator[RenderableType]:
        yield self.make_tasks_table(self.tasks)
        yield Text(self._stats.snapshot()[2], style="progress.description")


def _progress(stats: DemoStats, stop: threading.Event, console: Console) -> None:
    """Show live progress on a terminal; elsewhere, one closing line."""
    if not console.is_terminal:
        stop.wait()
        console.print(stats.line(), soft_wrap=True, highlight=False)
        return
    with DemoProgress(stats, console) as display:
        task = display.add_task(stats.snapshot()[1], total=stats.turns_planned)
        while True:
            stopping = stop.wait(0.1)
            turns, sessions, _ = stats.snapshot()
            display.update(task, completed=turns, description=sessions)
            if stopping:
                break


def _drive_all(
    engine: SummaryEngine,
    store: SqliteStore,
    stats: DemoStats,
    sessions: int,
    turns: int,
    seed: int,
    workers: int,
    count: Callable[[str], int],
) -> None:
    """Drive every session from ``workers`` host threads; stop early on Ctrl-C.

    On an interrupt (``KeyboardInterrupt`` in this thread) the sessions not yet
    begun never start, the running ones stop after their current turn, and the
    interrupt is re-raised within ``STOP_WAIT_S`` even when a turn is stuck: the host
    threads are daemons, so none of them can hold the process open. A session that
    fails stops the others the same way, and its error is raised here within
    ``STOP_WAIT_S``.
    """
    cancel = threading.Event()
    pending = iter(range(sessions))
    taking = threading.Lock()
    failures: list[BaseException] = []

    def host() -> None:
        while not cancel.is_set():
            with taking:
                index = next(pending, None)
            if index is None:
                return
            try:
                _drive_session(engine, store, stats, index, turns, seed, count, cancel)
            except BaseException as exc:  # noqa: BLE001 - raised in the main thread
                failures.append(exc)
                cancel.set()
                return

    threads = [
        threading.Thread(target=host, name=f"demo-host-{n}", daemon=True)
        for n in range(workers)
    ]
    try:
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads) and not cancel.wait(0.05):
            pass  # a failed session sets ``cancel``: stop as on Ctrl-C
    except BaseException:
        cancel.set()
        _wait(threads)
        raise
    if failures:
        _wait(threads)
        raise failures[0]


def _wait(threads: list[threading.Thread]) -> None:
    """Wait at most ``STOP_WAIT_S`` for ``threads`` (daemons) to end."""
    deadline = time.monotonic() + STOP_WAIT_S
    for thread in threads:  # an unstarted thread is not alive: skipped
        if thread.is_alive():
            thread.join(max(0.0, deadline - time.monotonic()))


def run_demo(
    db: Path,
    *,
    sessions: int = 50,
    turns: int = 40,
    seed: int = 7,
    workers: int = 8,
    llm: Summarizer | None = None,
    config: SummaryConfig | None = None,
    progress: bool = True,
    force: bool = False,
    command: str = "memory-summary",
    console: Console | None = None,
) -> DemoReport:
    """Run the demo against a fresh SQLite database at ``db`` and return its report.

    Raises:
        ConfigError: ``db`` cannot be used (see ``prepare_demo_database``).
    """
    prepare_demo_database(db, force=force)
    count = TiktokenCounter("o200k_base").count
    stats = DemoStats(sessions, sessions * turns)
    stop = threading.Event()
    display = threading.Thread(
        target=_progress,
        args=(stats, stop, console or Console(stderr=True)),
        daemon=True,
    )
    started = time.perf_counter()
    store = SqliteStore(db, pool_size=workers + 4)
    try:  # the store is closed whatever fails from here, the engine's wiring included
        config = config or SummaryConfig()
        if config.context_window is None:  # the simulated model's: usage -> ratio
            config = attrs.evolve(config, context_window=HOST_CONTEXT_TOKENS)
        engine = SummaryEngine(store, llm, config=config, archive=SqliteArchive(store))
        engine.subscribe(stats.on_event)
        with engine:
            if progress:
                display.start()
            _drive_all(engine, store, stats, sessions, turns, seed, workers, count)
            engine.wait_idle(timeout=300)
            tokens_with = 0
            tokens_without = 0
            for index in range(sessions):
                sid = f"s{index}"
                tokens_without += sum(
                    count(m.text) + 4 for m in store.get_full_history(sid)
                )
                context = engine.assemble(store.get_history(sid), sid)
                tokens_with += sum(count(m.text) + 4 for m in context)
            label = engine.stats().summarizer
            kept = []
            summaries = [engine.build_prompt(f"s{i}") or "" for i in range(sessions)]
            for index in range(min(sessions, SHOWN_SESSIONS)):
                sid = f"s{index}"
                record = engine.summary(sid)
                kept.append(
                    session_kept(
                        sid,
                        session_plan(index, seed),
                        summaries[index],
                        "\n".join(m.text for m in store.get_history(sid)),
                        record.tokens if record else 0,
                        record.compressions if record else 0,
                    )
                )
    finally:
        stop.set()
        if display.is_alive():
            display.join(timeout=5)
        store.close()
    samples = stats.turn_ns or [0]
    return DemoReport(
        db=db.resolve(),
        sessions=sessions,
        turns=stats.turns,
        compressions=stats.compressed,
        degraded=stats.degraded,
        tokens_without=tokens_without,
        tokens_with=tokens_with,
        turn_p50_us=statistics.median(samples) / 1000,
        turn_p99_us=_percentile_us(samples, 0.99),
        seconds=time.perf_counter() - started,
        summarizer=label,
        command=command,
        kept=tuple(kept),
        redundancy=redundancy(summaries),
    )
