"""Run the benchmarks: ``python benchmarks/run.py [--quick] [--only NAME ...]``.

Run as a script (not ``-m``) so the installed package is imported, never the
repository's ``memory_summary/`` folder, which lacks the mapped subpackages.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import aio_stall
import chat_server
import contention
import cost
import engine_cpu
import engine_load
import facts
import hostile_text
import hot_path
import masking
import native
import quality
import recall
import stores
from report import print_table, write_json

BENCHMARKS = {
    "hot_path": hot_path.run,
    "throughput": engine_load.throughput,
    "overhead": lambda quick: [engine_load.overhead(quick)],
    "scale": engine_load.scale,
    "cost": cost.run,
    "growth": engine_load.growth,
    "stores": stores.run,
    "engine_cpu": engine_cpu.run,
    "contention": contention.run,
    "facts": facts.run,
    "aio_stall": aio_stall.run,
    "masking": masking.run,
    "recall": recall.run,
    "hostile_text": hostile_text.run,
    "quality": quality.run,
    "chat_server": chat_server.run,
    "native": native.run,
}


MANIFEST = "run.json"
"""Lists the benchmarks a run selected: the files check_results.py expects."""


def _write_manifest(out: Path, selected: list[str], quick: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).write_text(
        json.dumps({"benchmarks": selected, "quick": quick}), encoding="utf-8"
    )


def _rows(name: str, results: list[dict]) -> list[dict]:
    if name == "engine_cpu":
        return engine_cpu.rows(results)
    if name == "contention":
        return contention.rows(results)
    if name == "chat_server":
        return chat_server.table(results)
    if name == "facts":
        return facts.rows(results)
    if name == "quality":
        return quality.rows(results)
    if name == "native":
        return native.rows(results)
    if name == "stores":
        return [
            {
                "store": r["store"],
                "stored": r["stored"],
                "get_history_p50_us": r["get_history_200"]["p50_us"],
                "get_history_p99_us": r["get_history_200"]["p99_us"],
                "commit_p50_us": r["commit"]["p50_us"],
                "commit_p99_us": r["commit"]["p99_us"],
                "read_ratio": r["get_history_p50_ratio"],
                "commit_ratio": r["commit_p50_ratio"],
            }
            for r in results
        ]
    if name != "hot_path":
        return results
    rows = []
    for result in results:
        for call in ("turn_after", "token_usage", "build_prompt"):
            stats = result[call]
            rows.append(
                {
                    "sessions": result["sessions"],
                    "call": call,
                    "p50_us": stats["p50_us"],
                    "p99_us": stats["p99_us"],
                    "max_us": stats["max_us"],
                    "compressions_started": result["compressions_started_during_run"],
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks, print their tables and write JSON results."""
    parser = argparse.ArgumentParser(
        prog="python benchmarks/run.py", description=__doc__
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes (what CI runs)"
    )
    parser.add_argument(
        "--only", nargs="+", choices=sorted(BENCHMARKS), help="run only these"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("benchmarks/results"),
        help="where the JSON results go (default: benchmarks/results)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="LoCoMo JSON for the recall benchmark (default: "
        "../shared/datasets/locomo/locomo-dev.json when it exists)",
    )
    args = parser.parse_args(argv)
    selected = args.only or list(BENCHMARKS)
    _write_manifest(args.out, selected, args.quick)
    for name in selected:
        started = time.perf_counter()
        print(f"running {name}{' (quick)' if args.quick else ''} ...", flush=True)
        if name == "recall":
            results = recall.run(args.quick, args.data)
            print(f"\n{name} ({time.perf_counter() - started:.1f} s)")
            recall.print_tables(results)
        else:
            results = BENCHMARKS[name](args.quick)
            print_table(
                f"{name} ({time.perf_counter() - started:.1f} s)", _rows(name, results)
            )
        print(f"  -> {write_json(args.out, name, results, args.quick)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
