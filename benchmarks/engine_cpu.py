"""CPU per turn and per compression: the host's hot path and the engine's threads apart.

A deterministic multi-session chat (seed 7) runs through a fresh ``SummaryEngine`` per
store, with a zero-latency summarizer, so every CPU second measured is the library's
(and the store's), never a model's. Sessions take turns round-robin; a turn is a user
message (20-400 chars, English with some Chinese), the assistant's reply (40-800
chars) and, every 5th turn, 1-3 tool calls (JSON arguments of 50-600 chars) first,
each answered by a tool result (100-3,000 chars). Per turn the host does what a chat
server does::

    store.save_message(sid, user)             # saving
    engine.build_prompt(sid)                  # engine, before the model call
    engine.token_usage(sid, ratio)            # engine, a ratio below the threshold
    store.save_message(sid, ...)              # saving: tool calls, results, reply
    engine.turn_after(sid)                    # engine, after the turn

Hot-path CPU is ``time.thread_time_ns()`` around those calls on the driving thread.
Background CPU is the process's CPU over the run (``time.process_time_ns()``, until
``wait_idle``) minus the driving thread's: the engine's actor and summarizer-call
threads, plus the store's own threads if it has any. The fake summarizer's share of
it is a lock and a counter. Messages are built before the clock starts.

Two more rows answer with a summary of about 4k tokens, as an LLM writes them: a
commit's cost grows with the summary (it is counted, pinned, validated, and the
lineage keeps up to ``summary_versions_kept`` + 1 of them).

After each round (one turn of every session) the host waits for ``wait_idle``, as a
model's latency between a session's turns would let the engine catch up. Without it
the count of compressions would depend on how fast the loop runs: a session's
triggers coalesce while it waits for a worker, into one late, large compression.
"""

from __future__ import annotations

import gc
import json
import random
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cpu_split import COMPONENTS, ComponentClock, SqlTrace, engine_components
from fakes import FixedSummarizer
from report import latency_summary

from memory_summary import Compressing, Message, SummaryConfig, SummaryEngine, ToolCall
from memory_summary.adapters import InMemoryStore, SqliteStore

SEED = 7
WARM_UP_TURNS = 40
IDLE_TIMEOUT_S = 600.0

_ENGLISH_TEXT = (
    "the a to and of in is it that for you with on this be are have not we can do "
    "what how why when which about from your would should could please thanks "
    "config server request error timeout retry database index query table column "
    "user account invoice payment order report deploy build test release branch "
    "python function class module import return value list dict string number "
    "file path directory log output input cache memory thread process queue lock "
    "network latency throughput budget token model prompt summary context window "
    "meeting schedule monday friday morning evening week month plan draft review "
    "customer team manager design document api endpoint version migration backup "
    "check update install remove change fix issue bug feature performance metric "
    "yesterday today tomorrow maybe probably exactly roughly quickly carefully "
    "42 7 128 2024 3.14 0.5 1000 99 v2 #17 /var/log/app.log https://example.com"
)
_CHINESE_TEXT = (
    "你好 谢谢 请问 这个 问题 怎么 解决 数据库 服务器 超时 配置 文件 部署 测试 "
    "明天 会议 报告 用户 订单 性能 优化 日志 错误 版本 迁移 备份 计划 已经 完成"
)
_WORDS = tuple(_ENGLISH_TEXT.split())
_CHINESE = tuple(_CHINESE_TEXT.split())
_TOOLS = ("search_docs", "read_file", "run_sql", "get_weather", "http_get", "calc")
_ARG_KEYS = ("query", "path", "sql", "city", "url", "expression")


def _text(rng: random.Random, low: int, high: int) -> str:
    """Return chat text of ``low``-``high`` characters, now and then Chinese."""
    target = rng.randint(low, high)
    parts: list[str] = []
    size = 0
    while size < target:
        word = rng.choice(_CHINESE) if rng.random() < 0.08 else rng.choice(_WORDS)
        if rng.random() < 0.07:
            word += rng.choice(".,?!:")
        parts.append(word)
        size += len(word) + 1
    return " ".join(parts)[:target].strip() or "ok"


Turn = tuple[str, Message, tuple[Message, ...], float]
"""(session id, user message, what follows it in the turn, usage ratio)."""


def _turn(rng: random.Random, sid: str, number: int) -> Turn:
    user = Message("user", _text(rng, 20, 400))
    after: list[Message] = []
    if number % 5 == 4:  # every 5th turn: tool calls first, each with its result
        calls = []
        for k in range(rng.randint(1, 3)):
            tool = rng.randrange(len(_TOOLS))
            arguments = json.dumps(
                {_ARG_KEYS[tool]: _text(rng, 36, 586)}, ensure_ascii=False
            )
            calls.append(ToolCall(f"call_{sid}_{number}_{k}", _TOOLS[tool], arguments))
        after.append(Message("assistant", "", tool_calls=tuple(calls)))
        after.extend(
            Message("tool", _text(rng, 100, 3_000), tool_call_id=c.id, name=c.name)
            for c in calls
        )
    after.append(Message("assistant", _text(rng, 40, 800)))
    return sid, user, tuple(after), round(rng.uniform(0.05, 0.45), 3)


def workload(
    sessions: int, turns: int, seed: int = SEED, prefix: str = "s"
) -> list[Turn]:
    """Return ``sessions`` x ``turns`` turns, the sessions interleaved round-robin."""
    rng = random.Random(seed)
    return [
        _turn(rng, f"{prefix}{s}", t) for t in range(turns) for s in range(sessions)
    ]


class _Tally:
    """Counts ``Compressing`` events; called on the engine's threads."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.details: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, event: object) -> None:
        if isinstance(event, Compressing):
            with self._lock:
                self.counts[event.status] += 1
                if event.status != "start":
                    self.details[f"{event.status}: {event.detail}"[:80]] += 1


def _drive(
    engine: SummaryEngine,
    store: Any,
    turns: list[Turn],
    round_size: int,
    *,
    report: bool = True,
) -> dict[str, Any]:
    """Run ``turns`` as a host would; return the driving thread's CPU and latencies.

    Waits for the engine to go idle after every ``round_size`` turns. Without
    ``report`` the host never calls ``token_usage``: the engine measures itself.
    """
    cpu = time.thread_time_ns
    wall = time.perf_counter_ns
    save = store.save_message
    saving = build_cpu = usage_cpu = after_cpu = 0
    build_wall: list[int] = []
    after_wall: list[int] = []
    for number, (sid, user, rest, ratio) in enumerate(turns, 1):
        c0 = cpu()
        save(sid, user)
        c1 = cpu()
        w0 = wall()
        engine.build_prompt(sid)
        w1 = wall()
        c2 = cpu()
        if report:
            engine.token_usage(sid, ratio)
        c3 = cpu()
        for message in rest:
            save(sid, message)
        c4 = cpu()
        w2 = wall()
        engine.turn_after(sid)
        w3 = wall()
        c5 = cpu()
        saving += (c1 - c0) + (c4 - c3)
        build_cpu += c2 - c1
        usage_cpu += c3 - c2
        after_cpu += c5 - c4
        build_wall.append(w1 - w0)
        after_wall.append(w3 - w2)
        if number % round_size == 0 and not engine.wait_idle(timeout=IDLE_TIMEOUT_S):
            raise RuntimeError("the engine never went idle")
    return {
        "saving_ns": saving,
        "build_prompt_ns": build_cpu,
        "token_usage_ns": usage_cpu,
        "turn_after_ns": after_cpu,
        "build_prompt_wall": build_wall,
        "turn_after_wall": after_wall,
    }


def _clock_cost_ns(samples: int = 2_000) -> int:
    """Return the median cost of one ``thread_time_ns`` reading."""
    cpu = time.thread_time_ns
    costs = []
    for _ in range(samples):
        start = cpu()
        costs.append(cpu() - start)
    return sorted(costs)[len(costs) // 2]


def _us(ns: float, turns: int) -> float:
    return round(ns / turns / 1000, 2)


def measure(
    label: str,
    make_store: Callable[[Path], Any],
    sessions: int,
    turns: int,
    *,
    context_window: int | None = None,
    summary: str | None = None,
) -> dict[str, Any]:
    """Run the workload once on a fresh store and engine; return one result row.

    With ``context_window`` the host reports no usage: the engine measures it.
    ``summary``: what the summarizer answers (by default a short fixed summary).
    """
    workdir = tempfile.TemporaryDirectory()
    store = make_store(Path(workdir.name))
    llm = FixedSummarizer() if summary is None else FixedSummarizer(summary)
    config = SummaryConfig(threshold=30, keep_recent=20, context_window=context_window)
    report = context_window is None
    engine = SummaryEngine(store, llm, config=config).start()
    try:
        # Warm-up: one session with compressions loads the tokenizer and the model's
        # context length, and touches every code path once.
        warm_up = workload(1, WARM_UP_TURNS, seed=SEED + 1, prefix="w")
        _drive(engine, store, warm_up, round_size=1, report=report)
        if not engine.wait_idle(timeout=IDLE_TIMEOUT_S):
            raise RuntimeError(f"{label}: the warm-up never went idle")
        turns_run = workload(sessions, turns)
        messages = sum(1 + len(rest) for _, _, rest, _ in turns_run)
        tally = _Tally()
        unsubscribe = engine.subscribe(tally)
        calls_before = llm.calls
        host = threading.current_thread()
        clock = ComponentClock(host)
        trace = SqlTrace(host)
        if hasattr(store, "_driver") and hasattr(store._driver, "_connect"):
            trace.attach(store)
        clock.patch(llm, "complete", "summarizer")
        split = engine_components(clock, store)
        split.__enter__()
        gc.collect()
        process0, thread0, wall0 = (
            time.process_time_ns(),
            time.thread_time_ns(),
            time.perf_counter_ns(),
        )
        driven = _drive(engine, store, turns_run, round_size=sessions, report=report)
        settled = engine.wait_idle(timeout=IDLE_TIMEOUT_S)
        process1, thread1, wall1 = (
            time.process_time_ns(),
            time.thread_time_ns(),
            time.perf_counter_ns(),
        )
        unsubscribe()
        split.__exit__(None, None, None)
    finally:
        engine.stop(timeout=30)
        close = getattr(store, "close", None)
        if close is not None:
            close()
        workdir.cleanup()
    n = len(turns_run)
    driving = thread1 - thread0
    background = max(0, (process1 - process0) - driving)
    compressions = tally.counts["done"] + tally.counts["error"]
    engine_ns = (
        driven["build_prompt_ns"] + driven["token_usage_ns"] + driven["turn_after_ns"]
    )
    hot_ns = driven["saving_ns"] + engine_ns
    per_compression = max(compressions, 1)
    bg_parts = {
        name: round(clock.ns[f"bg.{name}"] / per_compression / 1e6, 4)
        for name in COMPONENTS
    }
    bg_parts["engine_and_handoffs"] = round(
        max(background - sum(clock.ns[f"bg.{n}"] for n in COMPONENTS), 0)
        / per_compression
        / 1e6,
        4,
    )
    host_parts = {name: _us(clock.ns[f"host.{name}"], n) for name in COMPONENTS}
    host_parts["engine_and_handoffs"] = _us(
        max(engine_ns - sum(clock.ns[f"host.{c}"] for c in COMPONENTS), 0), n
    )
    return {
        "store": label,
        "sessions": sessions,
        "turns_per_session": turns,
        "turns": n,
        "messages": messages,
        "settled": settled,
        "hot_path_cpu": {
            "saving_us_per_turn": _us(driven["saving_ns"], n),
            "engine_us_per_turn": _us(engine_ns, n),
            "build_prompt_us_per_turn": _us(driven["build_prompt_ns"], n),
            "token_usage_us_per_turn": _us(driven["token_usage_ns"], n),
            "turn_after_us_per_turn": _us(driven["turn_after_ns"], n),
            "total_us_per_turn": _us(hot_ns, n),
            "saving_s_per_1k_turns": round(driven["saving_ns"] / n / 1e6, 4),
            "engine_s_per_1k_turns": round(engine_ns / n / 1e6, 4),
            "total_s_per_1k_turns": round(hot_ns / n / 1e6, 4),
            "driving_thread_s": round(driving / 1e9, 3),
        },
        "background_cpu": {
            "us_per_turn": _us(background, n),
            "ms_per_compression": (
                round(background / compressions / 1e6, 3) if compressions else None
            ),
            "s_total": round(background / 1e9, 3),
        },
        "host_engine_us_per_turn_by_component": host_parts,
        "background_ms_per_compression_by_component": bg_parts,
        "sql_per_compression": {
            "statements": round(trace.statements["bg"] / per_compression, 2),
            "transactions": round(trace.transactions["bg"] / per_compression, 2),
        },
        "sql_indexing_per_message": {
            "statements": round(trace.statements["index"] / messages, 3),
            "transactions": round(trace.transactions["index"] / messages, 3),
        },
        "sql_per_turn_on_host": {
            "statements": round(trace.statements["host"] / n, 2),
            "transactions": round(trace.transactions["host"] / n, 2),
        },
        "process_cpu_s": round((process1 - process0) / 1e9, 3),
        "wall_s": round((wall1 - wall0) / 1e9, 3),
        "compressions": compressions,
        "compression_errors": tally.counts["error"],
        "compressions_started": tally.counts["start"],
        "summarizer_calls": llm.calls - calls_before,
        "outcomes": dict(tally.details.most_common(8)),
        "turn_after": latency_summary(driven["turn_after_wall"]),
        "build_prompt": latency_summary(driven["build_prompt_wall"]),
        "thread_clock_cost_ns": _clock_cost_ns(),
    }


STORES: dict[str, Callable[[Path], Any]] = {
    "InMemoryStore": lambda _: InMemoryStore(),
    "SqliteStore": lambda workdir: SqliteStore(workdir / "engine_cpu.sqlite3"),
}


MEASURED_WINDOW = 16_000
"""The chat window of the self-measuring row: the workload's turns fill it."""
LONG_SUMMARY_CHARS = 16_000
"""The summary of the "4k-token summaries" rows (about 4k tokens, as an LLM writes)."""


def run(quick: bool) -> list[dict[str, Any]]:
    """CPU per turn and per compression for each store (10 x 40 turns when quick).

    A last row runs SQLite with ``context_window`` and no usage reports: the cost of
    the engine measuring each session itself.
    """
    sessions, turns = (10, 40) if quick else (100, 100)
    rows = [measure(label, make, sessions, turns) for label, make in STORES.items()]
    rows.append(
        measure(
            "SqliteStore, measured",
            STORES["SqliteStore"],
            sessions,
            turns,
            context_window=MEASURED_WINDOW,
        )
    )
    # An LLM's summary is thousands of tokens, and each commit writes the lineage
    # with up to ``summary_versions_kept`` + 1 of them: the cost grows with its size.
    long_summary = _text(
        random.Random(SEED + 2), LONG_SUMMARY_CHARS, LONG_SUMMARY_CHARS
    )
    rows.extend(
        measure(
            f"{label}, 4k-token summaries", make, sessions, turns, summary=long_summary
        )
        for label, make in STORES.items()
        if label in ("InMemoryStore", "SqliteStore")
    )
    return rows


def rows(results: list[dict[str, Any]]) -> list[dict[str, object]]:
    """Return the printed table's rows for ``results``."""
    return [
        {
            "store": r["store"],
            "turns": r["turns"],
            "save_us/turn": r["hot_path_cpu"]["saving_us_per_turn"],
            "engine_us/turn": r["hot_path_cpu"]["engine_us_per_turn"],
            "hot_s/1k_turns": r["hot_path_cpu"]["total_s_per_1k_turns"],
            "bg_us/turn": r["background_cpu"]["us_per_turn"],
            "bg_ms/compr": r["background_cpu"]["ms_per_compression"],
            "compressions": r["compressions"],
            "llm_calls": r["summarizer_calls"],
            "turn_after_p50/p99_us": (
                f"{r['turn_after']['p50_us']}/{r['turn_after']['p99_us']}"
            ),
            "build_prompt_p50/p99_us": (
                f"{r['build_prompt']['p50_us']}/{r['build_prompt']['p99_us']}"
            ),
            "bg_ms/compr by part": " ".join(
                f"{k.split('_')[0]}={v}"
                for k, v in r["background_ms_per_compression_by_component"].items()
            ),
            "sql stmts/tx per compr": (
                f"{r['sql_per_compression']['statements']}/"
                f"{r['sql_per_compression']['transactions']}"
            ),
            "indexing stmts/tx per msg": (
                f"{r['sql_indexing_per_message']['statements']}/"
                f"{r['sql_indexing_per_message']['transactions']}"
            ),
        }
        for r in results
    ]
