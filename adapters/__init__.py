"""Adapters: the stores, archives, summarizers and token counters behind the ports.

The OpenAI, Anthropic, PostgreSQL and Redis adapters load on first use (module
``__getattr__``): their drivers are optional extras, and importing them costs a few
hundred milliseconds that an offline host never needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .archive import InMemoryArchive
from .extractive import ExtractiveSummarizer
from .memory import InMemoryStore
from .sqlite import SqliteArchive, SqliteStore
from .tokens import TiktokenCounter, counter_factory, encoding_name_for

if TYPE_CHECKING:
    from .anthropic_llm import AnthropicLLM, AnthropicStream
    from .openai_llm import OpenAIChatLLM
    from .openai_stream import OpenAIChatStream
    from .postgres import PostgresArchive, PostgresStore
    from .redis_store import RedisStore

# name -> (module, the driver it needs, the extra that installs it)
_LAZY: dict[str, tuple[str, str, str]] = {
    "AnthropicLLM": ("anthropic_llm", "anthropic", "anthropic"),
    "AnthropicStream": ("anthropic_llm", "anthropic", "anthropic"),
    "OpenAIChatLLM": ("openai_llm", "openai", "openai"),
    "OpenAIChatStream": ("openai_stream", "openai", "openai"),
    "PostgresArchive": ("postgres", "psycopg", "postgres"),
    "PostgresStore": ("postgres", "psycopg", "postgres"),
    "RedisStore": ("redis_store", "redis", "redis"),
}


def __getattr__(name: str) -> object:
    """Import the LLM, PostgreSQL and Redis adapters on first use (optional extras)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, driver, extra = _LAZY[name]
    import importlib

    try:
        module = importlib.import_module(f".{module_name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] not in (
            driver,
            "psycopg_pool",
        ):
            raise
        raise ImportError(
            f"{name} needs {exc.name}: pip install 'memory-summary[{extra}]'",
            name=exc.name,
        ) from exc
    value: object = getattr(module, name)
    return value


__all__ = [
    "AnthropicLLM",
    "AnthropicStream",
    "ExtractiveSummarizer",
    "InMemoryArchive",
    "InMemoryStore",
    "OpenAIChatLLM",
    "OpenAIChatStream",
    "PostgresArchive",
    "PostgresStore",
    "RedisStore",
    "SqliteArchive",
    "SqliteStore",
    "TiktokenCounter",
    "counter_factory",
    "encoding_name_for",
]
