"""What the library adds to a FastAPI chat server's turn, sync and async faces.

A real FastAPI app under uvicorn on loopback, in its own process; the driver (this
process) holds ``SESSIONS`` conversations at once over httpx, each a turn at a time.
The model is in process: 20 ms of waiting (``asyncio.sleep`` on the async face,
``time.sleep`` in the request's thread on the sync one), then the testing kit's
``ScriptedChatModel`` echo (usage counted from the request). History is on SQLite
(WAL, ``synchronous=NORMAL``, a pool of 4 connections) in four apps, run one after
the other, round-robin, in the same run:

- ``by_hand_sync`` / ``by_hand_async``: the server keeps its history itself: save the
  user's message, read the last 30 messages (the library's default threshold, so
  both send the model about as much), call the model, save the reply; a ``def``
  endpoint (FastAPI's threadpool), or an ``async def`` one doing its SQLite in
  ``asyncio.to_thread``.
- ``library_sync`` / ``library_async``: ``engine.conversation(sid)``, ``prepare``,
  the model, ``record``: ``SummaryEngine`` in a ``def`` endpoint, or
  ``AsyncSummaryEngine`` in an ``async def`` one; default config (compress at 30
  messages to 20, the offline extractive summarizer), so compressions run during
  the run on the engine's threads, in the server's process, and take its CPU.
- ``library_sync_proc`` / ``library_async_proc``: the same with
  ``offline_fold="process"`` (what the FastAPI guide configures): the offline
  summarizer folds in its child process, off the server's GIL. The server's CPU per
  turn then leaves the folds out; ``fold_cpu_ms_per_turn`` reports them.
- ``library_sync_llm`` / ``library_async_llm``: the same with a summarizer that
  waits 200 ms and answers, as a remote model does (no CPU of its own).

Reported per app: the turn's latency as the client sees it (p50 / p99 / max), the
server's time per turn outside the model's 20 ms (p50 / p99), the server process's
CPU time per turn (all its threads: uvicorn, the app, the engine's compressions and
indexing; the machine's load barely moves it), the event loop's longest stall
and p99 lateness (a task that sleeps 1 ms at a time records how late it wakes), the
full garbage collections (their count and longest pause: a pause stops every thread,
and its length grows with the objects the process keeps, the library's caches among
them; ``tracked_objects`` counts those at the end, and the ``added`` rows the
library's share), the compressions; and per face, the latency the library adds
(library minus by hand, per percentile). The targets (issue 33): at most 2 ms at
p50 and 10 ms at p99. Two loads, each app under both, in the same run:

- ``saturated``: no pause between a session's turns. The server process is saturated
  (its CPU, not the model, sets the pace), so every turn queues behind the others and
  the latency added is about ``SESSIONS`` times the CPU added: a throughput figure.
- ``paced`` (rows named ``<app> paced``): each session pauses ``PACED_THINK_S``
  between its turns (a person reading and typing, much faster than people do), a load
  the process keeps up with: the latency a turn gains from the library's own work and
  from its background threads holding the GIL.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import queue
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

APPS = (
    "by_hand_sync",
    "library_sync",
    "library_sync_proc",
    "library_sync_llm",
    "by_hand_async",
    "library_async",
    "library_async_proc",
    "library_async_llm",
)
LLM_S = 0.2  # the ``_llm`` apps' summarizer: a remote model's wait, no CPU
SESSIONS = 20
MODEL_S = 0.020
PACED_THINK_S = 0.25
"""A session's pause between its turns under the ``paced`` load."""
LOADS = (("saturated", 0.0), ("paced", PACED_THINK_S))
MODEL = "gpt-4o-mini"
SYSTEM = "You are a helpful assistant."
HAND_WINDOW = 30  # messages the by-hand server sends: the library's default threshold
POOL = 4
TICK_S = 0.001
SPY_HZ = 100


# -- the server process ------------------------------------------------------------


class HandStore:
    """A chat history kept by hand in SQLite: one row per OpenAI message dict."""

    def __init__(self, path: str) -> None:
        self._pool: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        for _ in range(POOL):
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, "
                "session TEXT NOT NULL, body TEXT NOT NULL)"
            )
            conn.execute(
                "CREATE INDEX IF NOT EXISTS by_session ON messages(session, id)"
            )
            self._pool.put(conn)

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        conn = self._pool.get()
        try:
            yield conn
        finally:
            self._pool.put(conn)

    def save(self, session: str, message: dict[str, Any]) -> None:
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO messages (session, body) VALUES (?, ?)",
                (session, json.dumps(message)),
            )

    def save_and_read(self, session: str, message: dict[str, Any]) -> list[Any]:
        self.save(session, message)
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT body FROM messages WHERE session = ? ORDER BY id DESC LIMIT ?",
                (session, HAND_WINDOW),
            ).fetchall()
        return [json.loads(body) for (body,) in reversed(rows)]

    def close(self) -> None:
        for _ in range(POOL):
            self._pool.get().close()


def _summary(samples: list[int]) -> dict[str, float]:
    if not samples:
        return {"count": 0, "p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0}
    ordered = sorted(samples)

    def at(fraction: float) -> float:
        index = min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))
        return round(ordered[index] / 1e6, 3)

    return {
        "count": len(ordered),
        "p50_ms": at(0.5),
        "p99_ms": at(0.99),
        "max_ms": round(ordered[-1] / 1e6, 3),
    }


def build_app(kind: str, path: str) -> Any:
    """Return the FastAPI app ``kind`` with its history in ``path``."""
    from fastapi import FastAPI

    from memory_summary import Compressing, SummaryConfig, SummaryEngine
    from memory_summary.adapters import SqliteStore
    from memory_summary.aio import AsyncSummaryEngine
    from memory_summary.testing import ScriptedChatModel

    fake = ScriptedChatModel()
    full_gc_ns: list[int] = []  # each full (oldest-generation) collection's pause
    gc_started = [0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_started[0] = time.perf_counter_ns()
        elif info["generation"] == 2:
            full_gc_ns.append(time.perf_counter_ns() - gc_started[0])

    gc.callbacks.append(on_gc)
    handler_ns: list[int] = []  # per turn: the server's time outside the model
    lateness_ns: list[int] = []
    compressed: list[str] = []
    cpu_since = [time.process_time()]  # the server process's CPU, all its threads
    fold_since = [0.0]  # the fold worker's CPU (``_proc`` apps)
    library = kind.startswith("library")
    hand = None if library else HandStore(path)
    engine = None
    if library:
        from fakes import LatencySummarizer

        llm = LatencySummarizer(LLM_S) if kind.endswith("_llm") else None
        fold = "process" if kind.endswith("_proc") else "thread"
        engine = SummaryEngine(
            SqliteStore(path, pool_size=POOL),
            llm=llm,
            config=SummaryConfig(offline_fold=fold),
        )
        engine.subscribe(
            lambda e: (
                compressed.append(e.session_id)
                if isinstance(e, Compressing) and e.status == "done"
                else None
            )
        )
    aengine = AsyncSummaryEngine(engine) if engine is not None else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if engine is not None:
            engine.start()  # before serving: the tokenizer's first load holds the GIL
        running = True

        async def tick() -> None:
            while running:
                started = time.perf_counter_ns()
                await asyncio.sleep(TICK_S)
                lateness_ns.append(time.perf_counter_ns() - started - 1_000_000)

        ticker = asyncio.create_task(tick())
        yield
        running = False
        await ticker
        if engine is not None:
            engine.stop()
            engine.memory.close()
        if hand is not None:
            hand.close()

    app = FastAPI(lifespan=lifespan)

    @app.get("/stats")
    def stats() -> dict[str, object]:
        return {
            "server_ms": _summary(handler_ns),
            "stall_ms": _summary([max(n, 0) for n in lateness_ns]),
            "compressions": len(compressed),
            "full_gc_ms": _summary(full_gc_ns),
            "tracked_objects": len(gc.get_objects()),
            "cpu_ms_per_turn": round(
                (time.process_time() - cpu_since[0]) * 1e3 / max(len(handler_ns), 1), 3
            ),
            "idle": engine.wait_idle(timeout=60) if engine is not None else True,
            "fold_cpu_ms_per_turn": round(
                (_fold_cpu_s(engine) - fold_since[0]) * 1e3 / max(len(handler_ns), 1),
                3,
            ),
        }

    @app.post("/reset")
    def reset() -> None:
        handler_ns.clear()
        lateness_ns.clear()
        full_gc_ns.clear()
        compressed.clear()
        cpu_since[0] = time.process_time()
        fold_since[0] = _fold_cpu_s(engine)

    if kind == "by_hand_sync":
        assert hand is not None

        @app.post("/chat/{sid}")
        def by_hand_sync(sid: str, turn: dict[str, str]) -> dict[str, object]:
            started = time.perf_counter_ns()
            user = {"role": "user", "content": turn["message"]}
            request = [
                {"role": "system", "content": SYSTEM},
                *hand.save_and_read(sid, user),
            ]
            asked = time.perf_counter_ns()
            time.sleep(MODEL_S)
            completion = fake.chat_completion({"model": MODEL, "messages": request})
            answered = time.perf_counter_ns()
            reply = completion["choices"][0]["message"]
            hand.save(sid, reply)
            handler_ns.append(time.perf_counter_ns() - answered + asked - started)
            return {"reply": reply["content"]}

    elif kind == "by_hand_async":
        assert hand is not None

        @app.post("/chat/{sid}")
        async def by_hand_async(sid: str, turn: dict[str, str]) -> dict[str, object]:
            started = time.perf_counter_ns()
            user = {"role": "user", "content": turn["message"]}
            history = await asyncio.to_thread(hand.save_and_read, sid, user)
            request = [{"role": "system", "content": SYSTEM}, *history]
            asked = time.perf_counter_ns()
            await asyncio.sleep(MODEL_S)
            completion = fake.chat_completion({"model": MODEL, "messages": request})
            answered = time.perf_counter_ns()
            reply = completion["choices"][0]["message"]
            await asyncio.to_thread(hand.save, sid, reply)
            handler_ns.append(time.perf_counter_ns() - answered + asked - started)
            return {"reply": reply["content"]}

    elif kind.startswith("library_sync"):
        assert engine is not None

        @app.post("/chat/{sid}")
        def library_sync(sid: str, turn: dict[str, str]) -> dict[str, object]:
            started = time.perf_counter_ns()
            chat = engine.conversation(sid, model=MODEL)
            request = chat.prepare(turn["message"], system=SYSTEM)
            asked = time.perf_counter_ns()
            time.sleep(MODEL_S)
            completion = fake.chat_completion({"model": MODEL, "messages": request})
            answered = time.perf_counter_ns()
            chat.record(completion)
            handler_ns.append(time.perf_counter_ns() - answered + asked - started)
            return {"reply": completion["choices"][0]["message"]["content"]}

    else:
        assert aengine is not None

        @app.post("/chat/{sid}")
        async def library_async(sid: str, turn: dict[str, str]) -> dict[str, object]:
            started = time.perf_counter_ns()
            chat = aengine.conversation(sid, model=MODEL)
            request = await chat.prepare(turn["message"], system=SYSTEM)
            asked = time.perf_counter_ns()
            await asyncio.sleep(MODEL_S)
            completion = fake.chat_completion({"model": MODEL, "messages": request})
            answered = time.perf_counter_ns()
            await chat.record(completion)
            handler_ns.append(time.perf_counter_ns() - answered + asked - started)
            return {"reply": completion["choices"][0]["message"]["content"]}

    return app


def _fold_cpu_s(engine: Any) -> float:
    """CPU seconds of the engine's fold worker process so far (0 without one)."""
    pid = None if engine is None else getattr(engine.llm, "worker_pid", None)
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve(kind: str, path: str) -> None:
    """Serve app ``kind`` on a free loopback port; print the port, then serve."""
    import uvicorn

    # IPPROTO_TCP named, as uvicorn's own sockets have it: asyncio sets TCP_NODELAY
    # only on a socket whose proto says TCP, and without it every keep-alive
    # response waited out the client's delayed ACK (about 40 ms a turn).
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)  # a client waits in the backlog until the app serves
    print(os.getpid(), listener.getsockname()[1], flush=True)
    # uvicorn closes a keep-alive connection idle for 5 s by default; on a loaded
    # machine the client could send its next turn on one just closing (a ReadError)
    config = uvicorn.Config(
        build_app(kind, path), log_level="warning", timeout_keep_alive=600
    )
    uvicorn.Server(config).run(sockets=[listener])


# -- the driver --------------------------------------------------------------------


@contextmanager
def _server(kind: str, workdir: Path) -> Iterator[str]:
    """Serve app ``kind`` in a child process; with CHAT_SERVER_PROFILE set, py-spy it.

    ``CHAT_SERVER_PROFILE=DIR`` runs each server under ``py-spy record --gil
    --nonblocking`` (the samples of the threads holding the GIL, all of them) and
    writes ``DIR/<app>.txt`` (collapsed stacks) when it exits; ``python
    benchmarks/chat_server.py buckets DIR TURNS`` sorts them into buckets.
    """
    path = workdir / f"{kind}.sqlite3"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, __file__, "serve", kind, str(path)]
    profile = os.environ.get("CHAT_SERVER_PROFILE")
    if profile:
        spy = shutil.which("py-spy") or Path(sys.executable).with_name("py-spy")
        out = Path(profile) / f"{kind}.txt"
        command = [str(spy), "record", "--gil", "--nonblocking", "-r", str(SPY_HZ),
                   "-f", "raw", "-o", str(out), "--", *command]  # fmt: skip
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    server_pid = None
    try:
        assert child.stdout is not None
        for line in child.stdout:  # py-spy's own notes come first
            if line.split() and all(part.isdigit() for part in line.split()):
                server_pid, port = map(int, line.split())
                break
        else:
            raise RuntimeError(f"the {kind} server exited: {child.wait()}")
        yield f"http://127.0.0.1:{port}"
    finally:
        if server_pid is not None:
            os.kill(server_pid, signal.SIGTERM)  # py-spy writes when it exits
        else:
            child.terminate()
        child.wait(timeout=120)


async def _drive(
    base_url: str, turns: int, offset: int, think_s: float
) -> dict[str, Any]:
    """Hold ``SESSIONS`` conversations at once; return the client's samples."""
    import httpx

    limits = httpx.Limits(max_connections=SESSIONS, max_keepalive_connections=SESSIONS)
    async with httpx.AsyncClient(
        base_url=base_url, timeout=120, limits=limits
    ) as client:
        await asyncio.gather(  # warm: connections, imports, first reads
            *(
                client.post(f"/chat/warm{n}", json={"message": "hi"})
                for n in range(SESSIONS)
            )
        )
        await client.post("/reset")
        latencies: list[int] = []
        wrong = 0

        async def talk(session: str) -> None:
            nonlocal wrong
            for turn in range(turns):
                text = f"{session} says number {offset + turn}: " + "words " * 12
                started = time.perf_counter_ns()
                response = await client.post(f"/chat/{session}", json={"message": text})
                latencies.append(time.perf_counter_ns() - started)
                if response.json().get("reply") != f"echo: {text}":
                    wrong += 1
                if think_s:
                    await asyncio.sleep(think_s)

        await asyncio.gather(*(talk(f"s{n}") for n in range(SESSIONS)))
        stats = (await client.get("/stats")).json()
    return {"latencies": latencies, "wrong": wrong, **stats}


def _added(lib: dict[str, float], hand: dict[str, float]) -> dict[str, float]:
    return {k: round(lib[k] - hand[k], 3) for k in ("p50_ms", "p99_ms", "max_ms")}


def run(quick: bool) -> list[dict[str, object]]:
    """Run the apps round-robin under each load; return a row per app, face and load."""
    rows: list[dict[str, object]] = []
    for load, think_s in LOADS:
        for row in _run_load(quick, think_s):
            if load != "saturated":
                row["app"] = f"{row['app']} {load}"
            rows.append({**row, "load": load})
    return rows


def _run_load(quick: bool, think_s: float) -> list[dict[str, object]]:
    """Run the apps round-robin at one load; return a row per app and per face."""
    rounds, turns = (1, 8) if quick else (3, 50)
    found: dict[str, dict[str, Any]] = {
        kind: {"latencies": [], "server": [], "stalls": [], "stall_p99": [], "cpu": [],
               "fold_cpu": [], "compressions": 0, "wrong": 0, "idle": True,
               "full_gc_max": [], "full_gcs": 0, "objects": []}
        for kind in APPS
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(rounds):
            for kind in APPS:
                (Path(tmp) / f"r{number}").mkdir(exist_ok=True)
                with _server(kind, Path(tmp) / f"r{number}") as base_url:
                    got = asyncio.run(_drive(base_url, turns, number * turns, think_s))
                into = found[kind]
                into["latencies"] += got["latencies"]
                into["server"].append(got["server_ms"])
                into["stalls"].append(got["stall_ms"]["max_ms"])
                into["stall_p99"].append(got["stall_ms"]["p99_ms"])
                into["cpu"].append(got["cpu_ms_per_turn"])
                into["fold_cpu"].append(got["fold_cpu_ms_per_turn"])
                into["compressions"] += got["compressions"]
                into["full_gc_max"].append(got["full_gc_ms"]["max_ms"])
                into["full_gcs"] += got["full_gc_ms"]["count"]
                into["objects"].append(got["tracked_objects"])
                into["wrong"] += got["wrong"]
                into["idle"] = into["idle"] and got["idle"]
    rows: list[dict[str, object]] = []
    for kind in APPS:
        into = found[kind]
        latency = _summary(into["latencies"])
        rows.append(
            {
                "app": kind,
                "turns": latency["count"],
                "latency_ms": latency,
                "server_p50_ms": round(
                    statistics.median(s["p50_ms"] for s in into["server"]), 3
                ),
                "server_p99_ms": max(s["p99_ms"] for s in into["server"]),
                "cpu_ms_per_turn": round(statistics.median(into["cpu"]), 3),
                "fold_cpu_ms_per_turn": round(statistics.median(into["fold_cpu"]), 3),
                "loop_longest_stall_ms": max(into["stalls"]),
                "loop_p99_lateness_ms": max(into["stall_p99"]),
                "full_gc_count": into["full_gcs"],
                "full_gc_max_ms": max(into["full_gc_max"]),
                "tracked_objects": max(into["objects"]),
                "compressions": into["compressions"],
                "wrong_replies": into["wrong"],
                "settled": into["idle"],
            }
        )
    by_app = {row["app"]: row for row in rows}
    for app in (kind for kind in APPS if kind.startswith("library")):
        lib, hand = by_app[app], by_app[f"by_hand_{app.split('_')[1]}"]
        rows.append(
            {
                "app": app.replace("library", "added"),
                "turns": lib["turns"],
                "latency_ms": _added(lib["latency_ms"], hand["latency_ms"]),  # type: ignore[arg-type]
                "server_p50_ms": round(lib["server_p50_ms"] - hand["server_p50_ms"], 3),  # type: ignore[operator]
                "server_p99_ms": round(lib["server_p99_ms"] - hand["server_p99_ms"], 3),  # type: ignore[operator]
                "cpu_ms_per_turn": round(
                    lib["cpu_ms_per_turn"] - hand["cpu_ms_per_turn"], 3
                ),  # type: ignore[operator]
                "fold_cpu_ms_per_turn": lib["fold_cpu_ms_per_turn"],
                "loop_longest_stall_ms": lib["loop_longest_stall_ms"],
                "loop_p99_lateness_ms": lib["loop_p99_lateness_ms"],
                "full_gc_count": lib["full_gc_count"],
                "full_gc_max_ms": lib["full_gc_max_ms"],
                "tracked_objects": lib["tracked_objects"] - hand["tracked_objects"],  # type: ignore[operator]
                "compressions": lib["compressions"],
                "wrong_replies": 0,
                "settled": True,
            }
        )
    return rows


def table(results: list[dict[str, Any]]) -> list[dict[str, object]]:
    """Flatten the rows for the printed table."""
    return [
        {
            "app": r["app"],
            "load": r["load"],
            "turns": r["turns"],
            "p50_ms": r["latency_ms"]["p50_ms"],
            "p99_ms": r["latency_ms"]["p99_ms"],
            "max_ms": r["latency_ms"]["max_ms"],
            "server_p50_ms": r["server_p50_ms"],
            "server_p99_ms": r["server_p99_ms"],
            "cpu_ms_per_turn": r["cpu_ms_per_turn"],
            "fold_cpu_ms_per_turn": r["fold_cpu_ms_per_turn"],
            "loop_stall_max_ms": r["loop_longest_stall_ms"],
            "loop_late_p99_ms": r["loop_p99_lateness_ms"],
            "full_gcs": r.get("full_gc_count", 0),
            "full_gc_max_ms": r.get("full_gc_max_ms", 0.0),
            "objects": r.get("tracked_objects", 0),
            "compressions": r["compressions"],
        }
        for r in results
    ]


BACKGROUND = (  # anywhere in a sample's stack
    ("startup", ("_find_and_load", "load_encoding", "Encoding.__init__", "lifespan")),
    ("indexing", ("sqlite_index.py", "sql_index.py", "recall/terms.py")),
    ("compressions", ("extractive.py", "fact_reading.py", "salience.py", "worker.py",
                      "folding.py", "compress")),
)  # fmt: skip
BUCKETS = (  # else the first of these that the frames, leaf to root, match
    ("store (SQL)", ("adapters/sql", "message_rows.py", "driver.py", "sqlite3")),
    ("conversion", ("to_openai", "from_openai", "openai_format.py", "replies.py",
                    "anthropic_format.py", "content.py")),
    ("tokens", ("tokens.py", "measure.py", "tiktoken")),
    ("handle and engine", ("conversation.py", "engine.py", "aio.py", "domain/",
                           "/actors/", "pykka")),
    ("fake model", ("chat_models.py",)),
    ("by-hand SQLite", ("save_and_read", "HandStore")),
    ("thread hops", ("concurrent/futures", "threading.py", "to_thread")),
    ("uvicorn, FastAPI, pydantic", ("uvicorn", "starlette", "fastapi", "pydantic",
                                     "h11", "httptools", "anyio")),
    ("event loop", ("asyncio",)),
)  # fmt: skip


def _bucket(frames: list[str]) -> str:
    for bucket, marks in BACKGROUND:
        if any(mark in frame for frame in frames for mark in marks):
            return bucket
    for frame in frames:
        for bucket, marks in BUCKETS:
            if any(mark in frame for mark in marks):
                return bucket
    return "other"


def buckets(path: Path, turns: int, rate_hz: int = SPY_HZ) -> dict[str, float]:
    """Return a py-spy raw profile's GIL-holding time per turn (ms), by bucket."""
    found: dict[str, float] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        stack, _, count = line.rpartition(" ")
        name = _bucket(stack.split(";")[::-1])  # leaf first
        found[name] = found.get(name, 0.0) + int(count) * 1e3 / rate_hz / turns
    return {k: round(v, 3) for k, v in sorted(found.items(), key=lambda kv: -kv[1])}


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["buckets"]:  # buckets DIR TURNS_PER_APP
        for kind in APPS:
            print(kind, buckets(Path(sys.argv[2]) / f"{kind}.txt", int(sys.argv[3])))
    else:
        for row in table(run("--quick" in sys.argv)):
            print(row)
