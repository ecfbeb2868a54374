"""Adapters: the stores, archives, summarizers and token counters behind the ports."""

from __future__ import annotations

from .archive import InMemoryArchive
from .extractive import ExtractiveSummarizer
from .memory import InMemoryStore
from .sqlite import SqliteArchive, SqliteStore
from .tokens import TiktokenCounter, counter_factory, encoding_name_for

__all__ = [
    "ExtractiveSummarizer",
    "InMemoryArchive",
    "InMemoryStore",
    "SqliteArchive",
    "SqliteStore",
    "TiktokenCounter",
    "counter_factory",
    "encoding_name_for",
]
