"""Recall: can the history search find what the summary folded away, and how fast?

Three parts:

- ``evidence``: LoCoMo conversations (``--data PATH``; by default
  ``../shared/datasets/locomo/locomo-dev.json`` when it exists, else skipped with a
  message) replayed through the engine (default configuration, the offline
  summarizer) on SQLite, one session per conversation. Per category (1 multi-hop,
  2 temporal, 4 single-hop): evidence recall@1/5/10 of ``search_history`` with the
  question as the query, and "reachable": the answer text is in the summary, the
  active messages or the top-10 hits (``summary_quality.matching``). Each figure
  is given for the conversations ranking was tuned on (``TUNING``), those it is
  only measured on (``MEASURING``), any other (``unseen``: say, LoCoMo's held-out
  half) and all of them: a fixed split by conversation, so that a rule that only
  fits the conversations it was tuned on shows. Quick mode replays a conversation
  generated here instead (CI has no dataset).
- ``latency``: per ``recall_index`` policy (``lazy``, ``eager``), the first
  ``search_history`` after a session was filled (under ``lazy`` it indexes what was
  saved since the last search) and the steady p50/p95 after it, on one session of
  10k and 100k messages (quick: 1k), SQLite and PostgreSQL (skipped when no server
  answers; its tables are vacuumed and analyzed once filled, as autovacuum would
  have done).
- ``save_cost``: per policy, ``save_message`` against the single autocommit
  ``INSERT`` it was before the index (the same store, interleaved rounds), and the
  process's CPU per message: saving alone, and saving plus indexing up to a search.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from report import percentile_us
from summary_quality.locomo import (
    LocomoConversation,
    default_locomo_path,
    load_locomo,
    parse_locomo,
)
from summary_quality.matching import contains_answer

from memory_summary import Message, StoreError, SummaryConfig, SummaryEngine
from memory_summary.adapters import SqliteStore
from memory_summary.adapters.stores.rows import message_values
from memory_summary.domain.recall import query_terms

CATEGORIES = (1, 2, 4)
TUNING = ("conv-26", "conv-41", "conv-43")
"""The shared LoCoMo conversations ranking rules and parameters are tuned on."""
MEASURING = ("conv-30", "conv-42")
"""The shared ones they are only measured on (the rest of the development half)."""
DSN = os.environ.get(
    "MEMORY_SUMMARY_PG_DSN", "host=127.0.0.1 port=5432 dbname=test user=postgres"
)


# -- the generated conversation (quick mode, CI) ------------------------------------

_PEOPLE = ("Ana", "Ben")
_FACTS = (
    ("adopted a turtle named {x}", "What is the name of {p}'s turtle?", "turtle"),
    ("moved to {x} last spring", "Where did {p} move?", "city"),
    ("started learning the {x}", "Which instrument is {p} learning?", "instrument"),
    ("ran a marathon in {x}", "Where did {p} run the marathon?", "city"),
    ("painted a portrait of {x}", "Who did {p} paint a portrait of?", "turtle"),
    ("baked a {x} cake for the party", "What cake did {p} bake?", "cake"),
)
_VALUES = {
    "turtle": ("Tilly", "Shelly", "Bolt", "Mochi"),
    "city": ("Porto", "Lyon", "Bergen", "Kyoto"),
    "instrument": ("cello", "banjo", "oboe", "harp"),
    "cake": ("lemon", "carrot", "walnut", "cherry"),
}
_CHATTER = (
    "How was your week? Anything new?",
    "Work has been busy but good, thanks for asking.",
    "I went for a long walk yesterday, the weather was lovely.",
    "That sounds great! I should get outside more often.",
    "We watched a movie last night, a funny one.",
    "I have been reading a lot lately, mostly novels.",
    "The kids kept me busy all weekend.",
    "Let's catch up again soon!",
)


def generated_conversations(count: int = 2, seed: int = 7) -> list[LocomoConversation]:
    """Return LoCoMo-shaped conversations with planted facts and their questions."""
    rng = random.Random(seed)
    data = []
    for index in range(count):
        body: dict[str, object] = {"speaker_a": _PEOPLE[0], "speaker_b": _PEOPLE[1]}
        questions = []
        for session in range(1, 7):
            body[f"session_{session}_date_time"] = f"10:00 am on {session} May, 2023"
            turns = []
            for turn in range(24):
                speaker = _PEOPLE[turn % 2]
                dia_id = f"D{session}:{turn + 1}"
                text = rng.choice(_CHATTER)
                if turn in (5, 14):
                    said, asked, kind = rng.choice(_FACTS)
                    value = rng.choice(_VALUES[kind])
                    text = f"Guess what, I {said.format(x=value)}!"
                    questions.append(
                        {
                            "question": asked.format(p=speaker),
                            "answer": value,
                            "evidence": [dia_id],
                            "category": 4 if turn == 5 else 1,
                        }
                    )
                turns.append({"speaker": speaker, "dia_id": dia_id, "text": text})
            body[f"session_{session}"] = turns
        data.append(
            {"sample_id": f"generated-{index}", "conversation": body, "qa": questions}
        )
    return parse_locomo(data, source="generated")


# -- evidence recall and reachability ------------------------------------------------


def _replay(
    engine: SummaryEngine, store: SqliteStore, conversation: LocomoConversation
) -> dict[int, str]:
    """Save the conversation turn by turn through the engine; return id -> dia_id."""
    sid = conversation.sample_id
    dia = {}
    for message in conversation.messages(dates="session"):
        saved = store.save_message(sid, message)
        dia[saved.id] = message.metadata["dia_id"]
        engine.turn_after(sid)
    engine.wait_idle(timeout=600)
    return dia  # type: ignore[return-value]


def evidence(conversations: list[LocomoConversation], dataset: str) -> list[dict]:
    """Return recall@1/5/10 and reachability per half and category, and overall."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    with tempfile.TemporaryDirectory() as workdir:
        store = SqliteStore(Path(workdir) / "recall.sqlite3")
        with SummaryEngine(store) as engine:
            for conversation in conversations:
                dia = _replay(engine, store, conversation)
                sid = conversation.sample_id
                part = half(sid)
                record = engine.summary(sid)
                summary = record.text if record else ""
                active = "\n".join(m.text for m in store.get_history(sid))
                for question in conversation.questions:
                    if question.category not in CATEGORIES or not question.evidence:
                        continue
                    hits = engine.search_history(sid, question.question, limit=10)
                    found = [dia.get(h.message.id) for h in hits]
                    wanted = set(question.evidence)
                    texts = [summary, active, *(h.message.text for h in hits)]
                    reachable = bool(question.answer) and any(
                        contains_answer(text, question.answer) for text in texts
                    )
                    category = str(question.category)
                    for key in (
                        (part, category),
                        (part, "all"),
                        ("all", category),
                        ("all", "all"),
                    ):
                        row = counts[key]
                        row[0] += 1
                        for slot, k in enumerate((1, 5, 10), start=1):
                            row[slot] += bool(wanted & set(found[:k]))
                        row[4] += reachable
        store.close()
    return [
        {
            "part": "evidence",
            "dataset": dataset,
            "half": key[0],
            "category": key[1],
            "questions": row[0],
            "recall_at_1": round(100 * row[1] / row[0], 1),
            "recall_at_5": round(100 * row[2] / row[0], 1),
            "recall_at_10": round(100 * row[3] / row[0], 1),
            "reachable": round(100 * row[4] / row[0], 1),
        }
        for key, row in sorted(counts.items(), key=lambda kv: _order(kv[0]))
        if row[0]
    ]


def half(sample_id: str) -> str:
    """Return the half a conversation belongs to: tuning, measuring or unseen."""
    if sample_id in TUNING:
        return "tuning"
    return "measuring" if sample_id in MEASURING else "unseen"


def _order(key: tuple[str, str]) -> tuple[int, str]:
    halves = ("tuning", "measuring", "unseen", "all")
    return halves.index(key[0]), key[1]


# -- latency and save cost -----------------------------------------------------------


def _texts(conversations: list[LocomoConversation]) -> tuple[list[str], list[str]]:
    turns = [t.said for c in conversations for t in c.turns if t.said]
    questions = [q.question for c in conversations for q in c.questions]
    return turns, questions


POLICIES = ("lazy", "eager")


def _stores(workdir: Path, policy: str) -> Iterator[tuple[str, object]]:
    sqlite = SqliteStore(
        workdir / f"latency-{uuid.uuid4().hex[:6]}.sqlite3",
        recall_index=policy,  # type: ignore[arg-type]
    )
    try:
        yield "sqlite", sqlite
    finally:
        sqlite.close()
    try:
        from memory_summary.adapters import PostgresStore

        store = PostgresStore(
            DSN,
            schema=f"bench_{uuid.uuid4().hex[:8]}",
            timeout_s=3,
            recall_index=policy,  # type: ignore[arg-type]
        )
    except (ImportError, StoreError) as exc:
        print(f"  recall: PostgreSQL skipped ({exc})")
        return
    try:
        yield "postgres", store
    finally:
        store.drop_schema()
        store.close()


def _analyze(store: object) -> None:
    """Vacuum and analyze PostgreSQL's tables once filled, as autovacuum would.

    Autovacuum may be off: without statistics and a visibility map a freshly filled
    table gets plans and heap reads that no server running for a while would.
    """
    schema = getattr(store, "schema", None)
    if schema is None:
        return
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as conn:
        for table in _TABLES:
            if conn.execute(
                "SELECT to_regclass(%s)", (f'"{schema}".{table}',)
            ).fetchone()[0]:
                conn.execute(f'VACUUM ANALYZE "{schema}".{table}')


_TABLES = (
    "messages",
    "message_terms",
    "session_totals",
    "session_terms",
    "term_postings",
)
"""The tables a search reads (``term_postings`` since schema 7)."""


def latency(
    conversations: list[LocomoConversation], sizes: tuple[int, ...], queries: int
) -> list[dict]:
    """Return the first search and p50/p95 (ms) on a session of each size, per store."""
    rows = []
    for policy in POLICIES:
        rows += _latency(conversations, sizes, queries, policy)
    return rows


def _latency(
    conversations: list[LocomoConversation],
    sizes: tuple[int, ...],
    queries: int,
    policy: str,
) -> list[dict]:
    turns, questions = _texts(conversations)
    rng = random.Random(11)
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for kind, store in _stores(Path(workdir), policy):
            config = SummaryConfig(recall_index=policy)  # type: ignore[arg-type]
            engine = SummaryEngine(store, config=config)  # type: ignore[arg-type]
            sid, stored = "latency", 0
            for size in sizes:
                started = time.perf_counter()
                while stored < size:
                    role = "user" if stored % 2 == 0 else "assistant"
                    text = f"{turns[stored % len(turns)]} (#{stored})"
                    store.save_message(sid, Message(role, text))  # type: ignore[attr-defined]
                    stored += 1
                indexing = getattr(store, "_index", None)
                if indexing is not None:
                    indexing.wait_idle(600)  # SQLite eager: its batches, off the clock
                filled = time.perf_counter() - started
                _analyze(store)
                begun = time.perf_counter_ns()
                engine.search_history(sid, questions[0])
                first = time.perf_counter_ns() - begun
                samples = []
                for query in rng.sample(questions, min(queries, len(questions))):
                    begun = time.perf_counter_ns()
                    engine.search_history(sid, query)
                    samples.append(time.perf_counter_ns() - begun)
                rows.append(
                    {
                        "part": "latency",
                        "store": kind,
                        "policy": policy,
                        "messages": size,
                        "queries": len(samples),
                        "first_ms": round(first / 1e6, 1),
                        "p50_ms": round(percentile_us(samples, 0.50) / 1000, 2),
                        "p95_ms": round(percentile_us(samples, 0.95) / 1000, 2),
                        "fill_s": round(filled, 1),
                    }
                )
            engine.stop()
    return rows


def save_cost(rounds: int) -> list[dict]:
    """Return save_message with the index against the bare INSERT it was before.

    ``with_index_p50_us`` is the caller's wait; ``cpu_with_indexing_us_per_message``
    all the CPU a message costs until a search finds it, wherever the index takes it
    in (SQLite: on its own thread, by the batch).
    """
    rows = []
    for policy in POLICIES:
        rows += _save_cost(rounds, policy)
    return rows


def _save_cost(rounds: int, policy: str) -> list[dict]:
    rows = []
    message = Message("user", "I went camping with the kids at the lake last weekend.")
    with tempfile.TemporaryDirectory() as workdir:
        for kind, store in _stores(Path(workdir), policy):
            insert = store._q["insert_message"]  # type: ignore[attr-defined]
            driver = store._driver  # type: ignore[attr-defined]
            values = message_values(message)
            indexed, bare = [], []
            for _ in range(10):  # warm up both paths
                store.save_message("warm", message)  # type: ignore[attr-defined]
                driver.write(insert, ("warm", *values), "bench")
            for _ in range(rounds):
                begun = time.perf_counter_ns()
                store.save_message("cost", message)  # type: ignore[attr-defined]
                indexed.append(time.perf_counter_ns() - begun)
                begun = time.perf_counter_ns()
                driver.write(insert, ("cost-bare", *message_values(message)), "bench")
                bare.append(time.perf_counter_ns() - begun)
            with_index = percentile_us(indexed, 0.5)
            without = percentile_us(bare, 0.5)
            indexing = getattr(store, "_index", None)
            if indexing is not None:
                indexing.wait_idle(60)  # SQLite: the batches on its indexing thread
            # All the process's CPU of saving and indexing, where the indexing runs:
            # the saves, SQLite's indexing thread, the take-in before a first search.
            cpu = time.process_time_ns()
            for _ in range(rounds):
                store.save_message("total", message)  # type: ignore[attr-defined]
            saving = (time.process_time_ns() - cpu) / rounds / 1_000
            if indexing is not None:
                indexing.wait_idle(60)
            store.search_messages("total", query_terms("camping"), limit=1)  # type: ignore[attr-defined]
            total = (time.process_time_ns() - cpu) / rounds / 1_000
            rows.append(
                {
                    "part": "save_cost",
                    "store": kind,
                    "policy": policy,
                    "rounds": rounds,
                    "with_index_p50_us": round(with_index, 1),
                    "without_index_p50_us": round(without, 1),
                    "ratio": round(with_index / without, 2),
                    "cpu_saving_us_per_message": round(saving, 1),
                    "cpu_with_indexing_us_per_message": round(total, 1),
                }
            )
    return rows


def run(quick: bool, data: Path | None = None) -> list[dict]:
    """Run the three parts; LoCoMo when found (never in quick mode)."""
    path = data or default_locomo_path()
    if quick:
        conversations, dataset = generated_conversations(), "generated"
    elif path is None or not Path(path).is_file():
        print(
            "  recall: no LoCoMo file (--data PATH, or ../shared/datasets/locomo/"
            "locomo-dev.json); evidence recall skipped, using a generated conversation"
        )
        conversations, dataset = generated_conversations(), "generated"
    else:
        conversations, dataset = load_locomo(path), Path(path).name
    rows = evidence(conversations, dataset)
    sizes = (1_000,) if quick else (10_000, 100_000)
    rows += latency(conversations, sizes, queries=50 if quick else 300)
    rows += save_cost(200 if quick else 2_000)
    return rows


def print_tables(rows: list[dict]) -> None:
    """Print one table per part."""
    from report import print_table

    for part in ("evidence", "latency", "save_cost"):
        print_table(f"recall: {part}", [r for r in rows if r["part"] == part])
