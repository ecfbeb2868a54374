"""Percentiles, tables and JSON output shared by the benchmarks."""

from __future__ import annotations

import json
import platform
import statistics
from collections.abc import Sequence
from pathlib import Path

from summary_quality.text_table import render_table


def percentile_us(samples_ns: Sequence[int], fraction: float) -> float:
    """Return the ``fraction`` percentile of nanosecond samples, in microseconds."""
    ordered = sorted(samples_ns)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index] / 1000


def latency_summary(samples_ns: Sequence[int]) -> dict[str, float]:
    """Return count, p50, p99 and max of nanosecond samples (microseconds)."""
    return {
        "count": len(samples_ns),
        "p50_us": round(percentile_us(samples_ns, 0.50), 2),
        "p99_us": round(percentile_us(samples_ns, 0.99), 2),
        "max_us": round(max(samples_ns) / 1000, 2),
        "mean_us": round(statistics.fmean(samples_ns) / 1000, 2),
    }


def print_table(title: str, rows: Sequence[dict[str, object]]) -> None:
    """Print ``rows`` (dicts with the same keys) as an aligned table."""
    print(f"\n{title}")
    if not rows:
        print("  (no rows)")
        return
    print(render_table([{k: str(v) for k, v in row.items()} for row in rows]))


def write_json(path: Path, name: str, results: object, quick: bool) -> Path:
    """Write one benchmark's results with the machine it ran on."""
    path.mkdir(parents=True, exist_ok=True)
    target = path / f"{name}.json"
    payload = {
        "benchmark": name,
        "quick": quick,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "results": results,
    }
    target.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    return target
