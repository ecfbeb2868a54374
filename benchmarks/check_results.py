"""Check that a benchmark run wrote well-formed results (CI runs this after --quick).

Usage: python benchmarks/check_results.py DIR. Checks shape and sanity, never timings:
every benchmark the run selected (``DIR/run.json``, written by run.py; all of them
when it is absent) must have written its file.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

EXPECTED = (
    "hot_path",
    "throughput",
    "overhead",
    "scale",
    "cost",
    "growth",
    "stores",
    "engine_cpu",
    "contention",
    "facts",
    "aio_stall",
    "masking",
    "recall",
    "hostile_text",
    "quality",
    "chat_server",
    "native",
)
RECALL_KEYS = {
    "evidence": ("half", "category", "questions", "recall_at_1", "recall_at_5",
                 "recall_at_10", "reachable"),
    "latency": ("store", "messages", "queries", "p50_ms", "p95_ms"),
    "save_cost": ("store", "rounds", "with_index_p50_us", "without_index_p50_us",
                  "ratio", "cpu_with_indexing_us_per_message"),
}  # fmt: skip
HOSTILE_STEPS = {"extract_pins", "count_tokens", "compression"}
HOSTILE_KEYS = ("family", "step", "chars", "ms_at_n", "ms_at_8n", "growth")
QUALITY_TEXTS = ("summary", "summary+active", "lead", "tail", "keep_last", "chance")
QUALITY_CHECKPOINTS = ("25%", "50%", "75%", "100%")
_PARTS = (
    "counting",
    "pins",
    "validation",
    "summarizer",
    "store",
    "indexing",
    "engine_and_handoffs",
)
ENGINE_CPU_KEYS = {
    "hot_path_cpu": (
        "saving_us_per_turn",
        "engine_us_per_turn",
        "build_prompt_us_per_turn",
        "token_usage_us_per_turn",
        "turn_after_us_per_turn",
        "total_us_per_turn",
        "saving_s_per_1k_turns",
        "engine_s_per_1k_turns",
        "total_s_per_1k_turns",
    ),
    "background_cpu": ("us_per_turn", "ms_per_compression", "s_total"),
    "host_engine_us_per_turn_by_component": _PARTS,
    "background_ms_per_compression_by_component": _PARTS,
    "sql_per_compression": ("statements", "transactions"),
    "sql_indexing_per_message": ("statements", "transactions"),
    "sql_per_turn_on_host": ("statements", "transactions"),
    "turn_after": ("count", "p50_us", "p99_us"),
    "build_prompt": ("count", "p50_us", "p99_us"),
}
ENGINE_CPU_COUNTS = ("turns", "messages", "compressions", "summarizer_calls")


def _numbers(value: object) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return []


def _engine_cpu(results: list[object], quick: bool) -> list[str]:
    """Return the problems of engine_cpu's rows: keys, and compressions when full."""
    problems = []
    for row in results:
        if not isinstance(row, dict):
            return ["engine_cpu: a row is not an object"]
        label = f"engine_cpu {row.get('store', '?')}"
        missing = [k for k in ("store", "settled", *ENGINE_CPU_COUNTS) if k not in row]
        for group, keys in ENGINE_CPU_KEYS.items():
            values = row.get(group)
            if not isinstance(values, dict):
                missing.append(group)
                continue
            missing += [f"{group}.{k}" for k in keys if k not in values]
        if missing:
            problems.append(f"{label}: missing {', '.join(missing)}")
            continue
        if row["settled"] is not True:
            problems.append(f"{label}: the engine never went idle")
        if row["turns"] <= 0 or row["turn_after"]["count"] != row["turns"]:
            problems.append(f"{label}: no turns, or not one timing per turn")
        if not quick and row["compressions"] <= 0:
            problems.append(f"{label}: no compressions on the full run")
        if row["compressions"] and row["background_cpu"]["ms_per_compression"] is None:
            problems.append(f"{label}: no CPU per compression")
        if (
            str(row["store"]).startswith("Sqlite")
            and row["compressions"]
            and not (row["sql_per_compression"]["statements"] > 0)
        ):
            problems.append(f"{label}: no SQL statements traced per compression")
    return problems


FACT_KINDS = (
    "person",
    "place",
    "quantity",
    "date",
    "id",
    "path",
    "decision",
    "constraint",
    "tool_outcome",
)
AIO_STALL_CASES = (
    "idle",
    "start",
    "start_preloaded",
    "store_async",
    "store_blocking",
)
HARD_FACT_KINDS = ("assistant_fact", "corrected", "long_message", "tool_detail")
HARD_EARLY_MESSAGES = 80  # the harder generator's facts and corrections come later
FACTS_MIN_COMPRESSIONS = 5  # per conversation: what the benchmark is built to reach
FACTS_EARLY_MESSAGES = 35
FACTS_CONVERSATIONS = {True: 2, False: 4}  # per locale, quick and full


def _facts_retention(
    name: str, shares: object, planted_total: int, kinds: tuple[str, ...] = FACT_KINDS
) -> list[str]:
    """Return the problems of one locale's (or the overall) retention table."""
    if not isinstance(shares, dict):
        return [f"facts {name}: no retention table"]
    problems = []
    for kind in (*kinds, "all"):
        share = shares.get(kind)
        if not isinstance(share, dict) or not {"retained", "planted"} <= share.keys():
            problems.append(f"facts {name}: no {kind} figures")
        elif share["planted"] <= 0 or not 0 <= share["retained"] <= share["planted"]:
            problems.append(f"facts {name}: {kind} planted none, or kept more")
    if not problems and shares["all"]["planted"] != planted_total:
        problems.append(f"facts {name}: the kinds do not add up to the facts planted")
    return problems


def _facts_conversation(row: object, hard: bool = False) -> list[str]:
    """Return the problems of one conversation: size, compressions, early facts."""
    if not isinstance(row, dict) or not isinstance(row.get("facts"), list):
        return ["facts: a conversation is not an object with facts"]
    label = f"facts {row.get('locale', '?')} #{row.get('index', '?')}"
    problems = []
    if row.get("messages", 0) < 100:
        problems.append(f"{label}: fewer than 100 messages")
    if row.get("compressions", 0) + row.get("degraded", 0) < FACTS_MIN_COMPRESSIONS:
        problems.append(f"{label}: fewer than {FACTS_MIN_COMPRESSIONS} compressions")
    early = HARD_EARLY_MESSAGES if hard else FACTS_EARLY_MESSAGES
    if any(f.get("message_index", -1) >= early for f in row["facts"]):
        problems.append(f"{label}: a fact planted late")
    kinds = set(FACT_KINDS) | (set(HARD_FACT_KINDS) if hard else set())
    if {f.get("kind") for f in row["facts"]} != kinds:
        problems.append(f"{label}: not every kind of fact planted")
    return problems


def _facts(results: list[object], quick: bool) -> list[str]:
    """Return the problems of the facts reports (offline, then forgetful + pins)."""
    if len(results) != 3:
        return ["facts: expected three reports (offline, forgetful + pins, hard)"]
    return [problem for report in results for problem in _facts_report(report, quick)]


def _facts_report(report: object, quick: bool) -> list[str]:
    """Return the problems of one facts report: tables, conversations, counts."""
    if not isinstance(report, dict):
        return ["facts: a report is not an object"]
    missing = [
        k
        for k in ("summarizer", "locales", "retention", "runs", "conversations")
        if k not in report
    ]
    if missing:
        return [f"facts: missing {', '.join(missing)}"]
    conversations = report["conversations"]
    hard = report.get("generator") == "hard"
    kinds = (*FACT_KINDS, *HARD_FACT_KINDS) if hard else FACT_KINDS
    problems = []
    for row in conversations:
        problems += _facts_conversation(row, hard)
    if problems:
        return problems
    per_locale = FACTS_CONVERSATIONS[quick]
    for locale in report["locales"]:
        mine = [r for r in conversations if r["locale"] == locale]
        if len(mine) != per_locale:
            problems.append(f"facts {locale}: {len(mine)} conversations")
        planted = sum(len(r["facts"]) for r in mine)
        problems += _facts_retention(
            locale, report["retention"].get(locale), planted, kinds
        )
    total = sum(len(r["facts"]) for r in conversations)
    problems += _facts_retention("all", report["retention"].get("all"), total, kinds)
    return problems


def _quality_shares(where: str, shares: object) -> list[str]:
    """Return the problems of one view: every text's kept/of share."""
    if not isinstance(shares, dict):
        return [f"{where}: not a table"]
    problems = []
    totals = set()
    for text in QUALITY_TEXTS:
        share = shares.get(text)
        if not isinstance(share, dict) or not {"kept", "of", "share"} <= share.keys():
            problems.append(f"{where}: no {text} figures")
        elif not 0 <= share["kept"] <= share["of"]:
            problems.append(f"{where}: {text} kept more than it had")
        else:
            totals.add(share["of"])
    if len(totals) > 1:
        problems.append(f"{where}: the texts were scored on different questions")
    return problems


def _quality(results: list[object]) -> list[str]:
    """Return the problems of the quality report: runs, views, counts."""
    report = results[0]
    if not isinstance(report, dict) or not isinstance(report.get("runs"), list):
        return ["quality: no runs"]
    problems = []
    if [run.get("budget_factor") for run in report["runs"]] != [1, 4]:
        problems.append("quality: expected runs at 1x and 4x the budget")
    for run in report["runs"]:
        where = f"quality x{run.get('budget_factor')}"
        if run.get("summarizer_calls", 0) < 1:
            problems.append(f"{where}: no summarizer call")
        problems += _quality_shares(f"{where} end", run.get("headline"))
        if not 0 <= run.get("redundancy", -1) <= 1:
            problems.append(f"{where}: no redundancy share")
        for name, shares in run.get("halves", {}).items():
            problems += _quality_shares(f"{where} {name} half", shares)
        if run.get("headline", {}).get("summary", {}).get("of", 0) < 1:
            problems.append(f"{where}: no question scored")
        points = run.get("checkpoints", {})
        if list(points) != list(QUALITY_CHECKPOINTS):
            problems.append(f"{where}: checkpoints {list(points)}")
        for name, shares in points.items():
            problems += _quality_shares(f"{where} at {name}", shares)
        for view in ("categories", "speakers"):
            for name, shares in run.get(view, {}).items():
                problems += _quality_shares(f"{where} {name}", shares)
    if not 0 <= report.get("demo", {}).get("redundancy", -1) <= 1:
        problems.append("quality: no redundancy of the demo's summaries")
    return problems


def _aio_stall(results: list[object]) -> list[str]:
    """Return the problems of the loop-stall rows: every case, ticks and gaps."""
    cases = {row.get("case"): row for row in results if isinstance(row, dict)}
    missing = [c for c in AIO_STALL_CASES if c not in cases]
    if missing:
        return [f"aio_stall: no {', '.join(missing)} case"]
    return [
        f"aio_stall {case}: no ticks or no gap"
        for case, row in cases.items()
        if not row.get("ticks") or "longest_gap_ms" not in row
    ]


MASKING_KEYS = (
    "mask_after",
    "turns",
    "request_tokens_total",
    "summarizer_calls",
    "tokens_saved_share",
    "summarizer_calls_avoided",
)


NATIVE_KEYS = (
    "backend",
    "compactions",
    "calls_per_compaction",
    "request_bytes_per_compaction",
    "tokens_sent_per_compaction",
    "tokens_received_per_compaction",
    "engine_cpu_ms_per_compaction",
)
NATIVE_BACKENDS = 5


def _native(results: list[object]) -> list[str]:
    """Return the problems of the native rows: every backend, folds, sends."""
    rows = [row for row in results if isinstance(row, dict)]
    problems = [
        f"native {row.get('backend', '?')}: missing {key}"
        for row in rows
        for key in NATIVE_KEYS
        if key not in row
    ]
    if problems:
        return problems
    if len(rows) != NATIVE_BACKENDS:
        problems.append(f"native: {len(rows)} backends, expected {NATIVE_BACKENDS}")
    for row in rows:
        if row["compactions"] < 1:
            problems.append(f"native {row['backend']}: no compaction happened")
        remote = not str(row["backend"]).endswith("(offline)")
        if remote and row["calls_per_compaction"] <= 0:
            problems.append(f"native {row['backend']}: sent nothing")
        if str(row["backend"]).startswith("native") and not row.get("native_kept"):
            problems.append(f"native {row['backend']}: no native artifact kept")
    return problems


def _masking(results: list[object]) -> list[str]:
    """Return the problems of the masking rows: off first, then each setting."""
    if not all(isinstance(row, dict) for row in results):
        return ["masking: a row is not an object"]
    rows = [row for row in results if isinstance(row, dict)]
    problems = [
        f"masking {row.get('mask_after', '?')}: missing {key}"
        for row in rows
        for key in MASKING_KEYS
        if key not in row
    ]
    if problems:
        return problems
    if rows[0]["mask_after"] != "off" or len(rows) < 2:
        problems.append("masking: no baseline row (masking off) or no masked row")
    if any(row["turns"] != rows[0]["turns"] for row in rows):
        problems.append("masking: the settings replayed different conversations")
    return problems


def _recall(results: list[object]) -> list[str]:
    """Return the problems of the recall rows: each part present, keys, ranges."""
    problems = []
    parts = {row.get("part") for row in results if isinstance(row, dict)}
    problems += [f"recall: no {part} rows" for part in RECALL_KEYS if part not in parts]
    for row in results:
        if not isinstance(row, dict) or row.get("part") not in RECALL_KEYS:
            problems.append("recall: a row of no known part")
            continue
        missing = [k for k in RECALL_KEYS[row["part"]] if k not in row]
        if missing:
            problems.append(f"recall {row['part']}: missing {', '.join(missing)}")
        elif row["part"] == "evidence" and not (
            0 <= row["recall_at_1"] <= row["recall_at_5"] <= row["recall_at_10"] <= 100
            and 0 <= row["reachable"] <= 100
            and row["questions"] > 0
        ):
            problems.append(
                f"recall evidence {row['half']} {row['category']}: shares out of order"
            )
    if "evidence" in parts and not any(
        isinstance(r, dict) and r.get("category") == "all" for r in results
    ):
        problems.append("recall evidence: no row over all categories")
    return problems


def _hostile_text(results: list[object]) -> list[str]:
    """Return the problems of hostile_text's rows: keys, and every step measured."""
    problems = []
    for row in results:
        if not isinstance(row, dict) or any(k not in row for k in HOSTILE_KEYS):
            return ["hostile_text: a row lacks " + ", ".join(HOSTILE_KEYS)]
        if row["chars"] <= 0:
            problems.append(f"hostile_text {row['family']}: no characters")
    for family in {row["family"] for row in results if isinstance(row, dict)}:
        steps = {r["step"] for r in results if r["family"] == family}
        if steps != HOSTILE_STEPS:
            problems.append(f"hostile_text {family}: steps {sorted(steps)}")
    return problems


CONTENTION_CALLS = ("turn_after", "build_prompt", "save_message")


def _contention(results: list[object]) -> list[str]:
    """Return the problems of contention's rows: each store's calls, all measured."""
    problems = []
    for row in results:
        if not isinstance(row, dict) or "store" not in row:
            return ["contention: a row is not a store's"]
        label = f"contention {row['store']}"
        for call in CONTENTION_CALLS:
            stats = row.get(call)
            if not isinstance(stats, dict) or any(
                k not in stats for k in ("count", "p50_us", "p99_us", "max_us")
            ):
                problems.append(f"{label}: no {call} percentiles")
            elif call == "turn_after" and stats["count"] != row.get("turns"):
                problems.append(f"{label}: {stats['count']} turn_after of a chat")
    stores = [r.get("store") for r in results if isinstance(r, dict)]
    if not {"InMemoryStore", "SqliteStore"} <= set(stores):
        problems.append(f"contention: stores {stores} lack the embedded ones")
    return problems


CHAT_SERVER_APPS = (
    "by_hand_sync",
    "library_sync",
    "library_sync_proc",
    "library_sync_llm",
    "by_hand_async",
    "library_async",
    "library_async_proc",
    "library_async_llm",
    "added_sync",
    "added_sync_proc",
    "added_sync_llm",
    "added_async",
    "added_async_proc",
    "added_async_llm",
)
CHAT_SERVER_APPS += tuple(f"{app} paced" for app in CHAT_SERVER_APPS)
"""Each app under both loads: saturated (as named) and paced."""
CHAT_SERVER_KEYS = (
    "turns",
    "latency_ms",
    "server_p50_ms",
    "server_p99_ms",
    "cpu_ms_per_turn",
    "fold_cpu_ms_per_turn",
    "loop_longest_stall_ms",
    "loop_p99_lateness_ms",
    "compressions",
    "wrong_replies",
    "settled",
)


def _chat_server(results: list[object], quick: bool) -> list[str]:
    """Return the problems of chat_server's rows: every app, answered, compressed."""
    rows = {r.get("app"): r for r in results if isinstance(r, dict)}
    if tuple(rows) != CHAT_SERVER_APPS:
        return [f"chat_server: apps {list(rows)}, expected {list(CHAT_SERVER_APPS)}"]
    problems = []
    for app, row in rows.items():
        missing = [k for k in CHAT_SERVER_KEYS if k not in row]
        latency = row.get("latency_ms")
        if not isinstance(latency, dict) or any(
            k not in latency for k in ("p50_ms", "p99_ms", "max_ms")
        ):
            missing.append("latency_ms percentiles")
        if missing:
            problems.append(f"chat_server {app}: missing {', '.join(missing)}")
            continue
        if row.get("load") not in ("saturated", "paced"):
            problems.append(f"chat_server {app}: load {row.get('load')!r}")
        if not row["turns"] or row["wrong_replies"] or row["settled"] is not True:
            problems.append(f"chat_server {app}: no turns, wrong replies or unsettled")
    if not quick:
        problems += [
            f"chat_server {app}: no compressions on the full run"
            for app in CHAT_SERVER_APPS
            if app.startswith("library")
            if not rows[app]["compressions"]
        ]
        problems += [
            f"chat_server {app}: its folds ran in no worker process"
            for app in CHAT_SERVER_APPS
            if app.startswith("library") and "_proc" in app
            if not rows[app]["fold_cpu_ms_per_turn"]
        ]
    return problems


def _is_difference(name: str, row: object) -> bool:
    """Tell a row of differences, whose figures may be negative (chat_server's)."""
    return (
        name == "chat_server"
        and isinstance(row, dict)
        and str(row.get("app")).startswith("added_")
    )


def _selected(directory: Path) -> tuple[str, ...]:
    manifest = directory / "run.json"
    if not manifest.exists():
        return EXPECTED
    names = json.loads(manifest.read_text(encoding="utf-8")).get("benchmarks")
    return tuple(names) if isinstance(names, list) and names else EXPECTED


def check(directory: Path) -> list[str]:
    """Return the problems found in ``directory``'s result files."""
    problems = []
    for name in _selected(directory):
        path = directory / f"{name}.json"
        if not path.exists():
            problems.append(f"{name}: no {path}")
            continue
        payload = json.loads(path.read_text(encoding="utf-8"))
        results = payload.get("results")
        if (
            payload.get("benchmark") != name
            or not isinstance(results, list)
            or not results
        ):
            problems.append(f"{name}: malformed payload")
            continue
        numbers = _numbers([r for r in results if not _is_difference(name, r)])
        if not numbers or any(math.isnan(n) or n < 0 for n in numbers):
            problems.append(f"{name}: missing, negative or NaN figures")
        if name == "engine_cpu":
            problems += _engine_cpu(results, payload.get("quick") is True)
        if name == "contention":
            problems += _contention(results)
        if name == "facts":
            problems += _facts(results, payload.get("quick") is True)
        if name == "aio_stall":
            problems += _aio_stall(results)
        if name == "chat_server":
            problems += _chat_server(results, payload.get("quick") is True)
        if name == "masking":
            problems += _masking(results)
        if name == "native":
            problems += _native(results)
        if name == "recall":
            problems += _recall(results)
        if name == "hostile_text":
            problems += _hostile_text(results)
        if name == "quality":
            problems += _quality(results)
    return problems


if __name__ == "__main__":
    found = check(Path(sys.argv[1]))
    for problem in found:
        print(f"benchmark results: {problem}")
    print(
        "benchmark results: well-formed" if not found else "benchmark results: BROKEN"
    )
    sys.exit(1 if found else 0)
