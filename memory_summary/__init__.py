"""memory-summary: keeps long chat conversations inside their model's context window.

The public API::

    from memory_summary import (SummaryEngine, SummaryConfig, LLMRef, Message,
        ToolCall, Compressing, CompressRequested, ClearResult, ConfigError,
        messages_from_openai, messages_to_openai, messages_from_anthropic,
        messages_to_anthropic)
    from memory_summary.adapters import InMemoryStore, SqliteStore, InMemoryArchive
"""

from __future__ import annotations

import logging

from memory_summary import _checkout  # noqa: F401  (a source checkout's folders)
from memory_summary.domain import (
    ClearResult,
    Compressing,
    CompressRequested,
    ConfigError,
    ConfigErrors,
    EngineClosed,
    HistoryEntry,
    HistoryNotFound,
    LLMRef,
    MalformedRecord,
    MemorySummaryError,
    Message,
    MessageError,
    Outcome,
    PartiallySaved,
    QueryError,
    RecallUnsupported,
    SearchableStore,
    SearchHit,
    Skipped,
    StoreError,
    StoreUnavailable,
    SummarizerContextError,
    SummarizerError,
    SummarizerTimeout,
    SummarizerUsage,
    SummaryConfig,
    SummaryRecord,
    SummaryVersion,
    TokenizerError,
    ToolCall,
    messages_from_anthropic,
    messages_from_openai,
    messages_to_anthropic,
    messages_to_openai,
)

from .engine import SummaryEngine

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.2.0"

__all__ = [
    "ClearResult",
    "CompressRequested",
    "Compressing",
    "ConfigError",
    "ConfigErrors",
    "EngineClosed",
    "HistoryEntry",
    "HistoryNotFound",
    "LLMRef",
    "MalformedRecord",
    "MemorySummaryError",
    "Message",
    "MessageError",
    "Outcome",
    "PartiallySaved",
    "QueryError",
    "RecallUnsupported",
    "SearchHit",
    "SearchableStore",
    "Skipped",
    "StoreError",
    "StoreUnavailable",
    "SummarizerContextError",
    "SummarizerError",
    "SummarizerTimeout",
    "SummarizerUsage",
    "SummaryConfig",
    "SummaryEngine",
    "SummaryRecord",
    "SummaryVersion",
    "TokenizerError",
    "ToolCall",
    "__version__",
    "messages_from_anthropic",
    "messages_from_openai",
    "messages_to_anthropic",
    "messages_to_openai",
]
