"""The public names, pinned: adding or removing one is a decision, made here."""

from __future__ import annotations

import importlib

import memory_summary

# Exactly what `from memory_summary import *` offers; update with the CHANGELOG.
FACADE_API = [
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
ADAPTERS_API = [
    "AnthropicCompactingLLM",
    "AnthropicLLM",
    "AnthropicStream",
    "ExtractiveSummarizer",
    "InMemoryArchive",
    "InMemoryStore",
    "OpenAIChatLLM",
    "OpenAIChatStream",
    "OpenAICompactingLLM",
    "PostgresArchive",
    "PostgresStore",
    "RedisStore",
    "SqliteArchive",
    "SqliteStore",
    "TiktokenCounter",
    "counter_factory",
    "encoding_name_for",
]


def isort_key(name: str) -> tuple[int, str]:
    """Ruff's __all__ order (RUF022): CONSTANTS, then Classes, then functions."""
    if name.isupper() or (name.replace("_", "").isupper()):
        return (0, name)
    return (1, name) if name[:1].isupper() else (2, name)


def test_facade_exports_exactly_the_pinned_names():
    assert memory_summary.__all__ == FACADE_API


def test_adapters_export_exactly_the_pinned_names():
    adapters = importlib.import_module("memory_summary.adapters")

    assert adapters.__all__ == ADAPTERS_API


def test_every_pinned_name_resolves():
    adapters = importlib.import_module("memory_summary.adapters")

    missing = [n for n in FACADE_API if not hasattr(memory_summary, n)] + [
        f"adapters.{n}" for n in ADAPTERS_API if not hasattr(adapters, n)
    ]

    assert missing == []


def test_every_package_lists_a_sorted_all():
    for name in (
        "memory_summary",
        "memory_summary.domain",
        "memory_summary.actors",
        "memory_summary.adapters",
    ):
        module = importlib.import_module(name)
        assert module.__all__ == sorted(module.__all__, key=isort_key), name
        assert all(hasattr(module, n) for n in module.__all__), name
