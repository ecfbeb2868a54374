"""The testing extra (pytest and hypothesis), or an ImportError saying how to add it.

Every module of the kit imports its test tools from here, so a missing extra reads
the same everywhere.
"""

from __future__ import annotations

try:
    import hypothesis
    import pytest
    from hypothesis import strategies as st
except ImportError as exc:  # the extra is missing
    raise ImportError(
        "memory_summary.testing needs pytest and hypothesis; install them with: "
        "pip install 'memory-summary[testing]'"
    ) from exc

__all__ = ["hypothesis", "pytest", "st"]
