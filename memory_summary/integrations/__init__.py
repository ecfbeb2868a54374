"""Drop-in integrations with agent frameworks, each behind its own extra.

- ``memory_summary.integrations.openai_agents.SummarySession``: the OpenAI Agents SDK's
  ``Session`` (``pip install 'memory-summary[openai-agents]'``).
- ``memory_summary.integrations.langchain.SummaryMiddleware``: a LangChain v1 agent
  middleware (``pip install 'memory-summary[langchain]'``).

Importing this package imports neither framework; importing a submodule without its
framework installed raises an ``ImportError`` that names the extra.
"""

from __future__ import annotations

__all__: list[str] = []
