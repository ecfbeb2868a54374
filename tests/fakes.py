"""The suite's test doubles, shipped in the kit: ``memory_summary.testing.fakes``."""

from __future__ import annotations

from memory_summary.testing.fakes import (
    FailingStore,
    InstrumentedSummarizer,
    OverlapRecorder,
    ScriptedSummarizer,
    StreamingScripted,
)

__all__ = [
    "FailingStore",
    "InstrumentedSummarizer",
    "OverlapRecorder",
    "ScriptedSummarizer",
    "StreamingScripted",
]
