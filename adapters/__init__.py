"""Adapters: the stores, archives, summarizers and token counters behind the ports.

The OpenAI, Anthropic, PostgreSQL and Redis adapters load on first use (module
``__getattr__``): their drivers are optional extras, and importing them costs a few
hundred milliseconds that an offline host never needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .stores.memory.archive import InMemoryArchive
from .stores.memory.store import InMemoryStore
from .stores.sql.sqlite import SqliteArchive, SqliteStore
from .summarizers.offline.extractive import ExtractiveSummarizer
from .tokens import TiktokenCounter, counter_factory, encoding_name_for

if TYPE_CHECKING:
    from .stores.redis.store import RedisStore
    from .stores.sql.postgres import PostgresArchive, PostgresStore
    from .summarizers.anthropic.llm import AnthropicLLM, AnthropicStream
    from .summarizers.anthropic.native import AnthropicCompactingLLM
    from .summarizers.openai.llm import OpenAIChatLLM
    from .summarizers.openai.native import OpenAICompactingLLM
    from .summarizers.openai.stream import OpenAIChatStream

# name -> (module, the driver it needs, the extra that installs it)
_LAZY: dict[str, tuple[str, str, str]] = {
    "AnthropicCompactingLLM": (
        "summarizers.anthropic.native",
        "anthropic",
        "anthropic",
    ),
    "AnthropicLLM": ("summarizers.anthropic.llm", "anthropic", "anthropic"),
    "AnthropicStream": ("summarizers.anthropic.llm", "anthropic", "anthropic"),
    "OpenAIChatLLM": ("summarizers.openai.llm", "openai", "openai"),
    "OpenAIChatStream": ("summarizers.openai.stream", "openai", "openai"),
    "OpenAICompactingLLM": ("summarizers.openai.native", "openai", "openai"),
    "PostgresArchive": ("stores.sql.postgres", "psycopg", "postgres"),
    "PostgresStore": ("stores.sql.postgres", "psycopg", "postgres"),
    "RedisStore": ("stores.redis.store", "redis", "redis"),
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
