"""A testing kit for hosts and for authors of stores: strategies, fakes, a contract.

Needs ``pip install 'memory-summary[testing]'`` (pytest and hypothesis); importing
``memory_summary`` alone never imports them.

- ``memory_summary.testing.strategies``: the hypothesis strategies the project's own
  suite uses (histories with parallel tool-call groups and orphans, hostile text,
  OpenAI-format messages with content parts).
- ``memory_summary.testing.fakes``: ``ScriptedSummarizer`` (replies or raises, in
  order, recording the calls) and ``FailingStore`` (an ``InMemoryStore`` whose
  commits fail while ``failing`` is set).
- ``memory_summary.testing.contract``: ``StoreContract``, the store contract suite as
  a pytest class. Subclass it in a test module and give it ``make_store``::

      from memory_summary.testing.contract import StoreContract

      class TestRedisStore(StoreContract):
          def make_store(self, tmp_path):
              return RedisStore(url="redis://localhost:6379/15", prefix=tmp_path.name)

  Every test of the class then runs on your store; the project's own stores (memory,
  SQLite, PostgreSQL) run through the same class.
- ``memory_summary.testing.search_contract``: ``SearchContract``, the opt-in suite of a
  store that indexes its history (``SearchableStore``), subclassed the same way.
- ``memory_summary.testing.summarizer_contract``: ``SummarizerContract``, the
  summarizer contract suite, the same way: subclass it with ``make_summarizer(self,
  request)`` (and ``make_failing_summarizer`` for the error checks). The offline,
  OpenAI and Anthropic summarizers run through it; ``docs/writing-a-summarizer.md``
  is the guide.
- ``memory_summary.testing.anthropic_strategies``: Anthropic Messages-API requests.
- ``memory_summary.testing.chat_models`` (exported here; needs neither pytest nor
  hypothesis): ``ScriptedChatModel``, a chat model with scripted replies (texts,
  tool calls, failures) or an echo, answering OpenAI chat completion and Anthropic
  Messages requests in process, and ``ChatModelServer``, the same on a loopback port
  for the real SDKs (``base_url``), so a host's tests and the guides run offline.
"""

from __future__ import annotations

from .chat_models import (
    ChatModelError,
    ChatModelServer,
    Failure,
    Reply,
    ScriptedChatModel,
    count_tokens,
)

__all__ = [
    "ChatModelError",
    "ChatModelServer",
    "Failure",
    "Reply",
    "ScriptedChatModel",
    "count_tokens",
]
