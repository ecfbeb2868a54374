"""Check that a benchmark run wrote well-formed results (CI runs this after --quick).

Usage: python benchmarks/check_results.py DIR. Checks shape and sanity, never timings.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

EXPECTED = ("hot_path", "throughput", "overhead", "scale", "cost", "growth", "stores")


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


def check(directory: Path) -> list[str]:
    """Return the problems found in ``directory``'s result files."""
    problems = []
    for name in EXPECTED:
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
        numbers = _numbers(results)
        if not numbers or any(math.isnan(n) or n < 0 for n in numbers):
            problems.append(f"{name}: missing, negative or NaN figures")
    return problems


if __name__ == "__main__":
    found = check(Path(sys.argv[1]))
    for problem in found:
        print(f"benchmark results: {problem}")
    print(
        "benchmark results: well-formed" if not found else "benchmark results: BROKEN"
    )
    sys.exit(1 if found else 0)
