"""Hypothesis's strategies, or an ImportError that says how to install the extra."""

from __future__ import annotations

try:
    from hypothesis import strategies as st
except ImportError as exc:  # the extra is missing
    raise ImportError(
        "memory_summary.testing needs pytest and hypothesis; install them with: "
        "pip install 'memory-summary[testing]'"
    ) from exc

__all__ = ["st"]
