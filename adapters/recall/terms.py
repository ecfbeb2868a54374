"""What the SQL stores' history indexes share: their terms and pages."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

BACKFILL_PAGE = 2_000
CATCH_UP_EVERY = 256
"""SQLite takes new messages into FTS5, on the index's own thread, each time this many
more were stored (and before every search)."""
PROGRESS_EVERY = 50_000
"""A migration that indexes a big database logs its progress every so many rows."""

Matches = list[tuple[int, float]]


def logs_progress(done: int, page: int) -> bool:
    """Tell whether indexing logs its progress after a page of ``page`` rows."""
    if not done or not page:
        return False
    return done % PROGRESS_EVERY < page or page < BACKFILL_PAGE


def session_term(session_id: str) -> str:
    """Return the index term that stands for a session (letters and digits)."""
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=10).hexdigest()
    return f"s{digest}"


def fts5_term(term: str) -> str:
    """Return the FTS5 MATCH expression of one term in the ``terms`` column.

    Terms hold letters and digits only, so quoting is safe.
    """
    check_terms([term])
    return f'terms : "{term}"'


def check_terms(terms: Sequence[str]) -> None:
    """Raise ValueError unless every term is non-empty letters and digits."""
    if not terms or not all(term and term.isalnum() for term in terms):
        raise ValueError(
            "terms must be non-empty letters and digits (domain.recall.query_terms)"
        )
