"""The recall index policy as every store applies it (``IndexPolicyStore``).

``lazy`` (the default): a save does no index work, and a search first indexes the
session's stored messages not indexed yet. ``eager``: every message is indexed as it
is stored. ``off``: nothing is indexed and ``search_messages`` is refused. The policy
is ``SummaryConfig.recall_index``, which the engine gives the store when it is wired;
a store made without an engine takes it as its ``recall_index=`` argument.
"""

from __future__ import annotations

from memory_summary.domain import RecallUnsupported
from memory_summary.domain.config import RecallIndex


def refuse_search(store: object, policy: RecallIndex) -> None:
    """Raise ``RecallUnsupported`` when ``policy`` is ``off`` (no index is kept)."""
    if policy == "off":
        raise RecallUnsupported(
            f"{type(store).__name__} keeps no history index (recall_index='off'): "
            "search_messages is refused; 'lazy' or 'eager' can search"
        )
