"""Adapters: the stores, archives, summarizers and token counters behind the ports."""

from __future__ import annotations

from .archive import InMemoryArchive
from .extractive import ExtractiveSummarizer
from .memory import InMemoryStore
from .openai_llm import OpenAIChatLLM, OpenAIChatStream
from .sqlite import SqliteArchive, SqliteStore
from .tokens import TiktokenCounter, counter_factory, encoding_name_for

_POSTGRES = ("PostgresArchive", "PostgresStore")


def __getattr__(name: str) -> object:
    """Import the PostgreSQL adapters on first use: psycopg is an optional extra."""
    if name in _POSTGRES:
        try:
            from . import postgres
        except ImportError as exc:
            raise ImportError(
                f"{name} needs psycopg: pip install 'memory-summary[postgres]'"
            ) from exc
        return getattr(postgres, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ExtractiveSummarizer",
    "InMemoryArchive",
    "InMemoryStore",
    "OpenAIChatLLM",
    "OpenAIChatStream",
    "PostgresArchive",
    "PostgresStore",
    "SqliteArchive",
    "SqliteStore",
    "TiktokenCounter",
    "counter_factory",
    "encoding_name_for",
]
