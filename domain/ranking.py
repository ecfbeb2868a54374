"""The reference ranking of a history search: BM25 over the terms of ``domain.recall``.

The formula is SQLite FTS5's ``bm25()`` (k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) /
(n + 0.5)), floored at 1e-6), so the in-memory store and SQLite rank alike; a query's
terms are OR'ed: a message matches when it holds any of them. Ties go to the newer
message. Here the statistics (N, n, the average length) are the session's own.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

import attrs

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6


def idf(documents: int, matching: int) -> float:
    """Return FTS5's inverse document frequency of a term found in ``matching`` docs."""
    value = math.log((documents - matching + 0.5) / (matching + 0.5))
    return value if value > 0 else MIN_IDF


def bm25(
    frequencies: Sequence[tuple[float, int]], length: int, average_length: float
) -> float:
    """Return a document's score from (idf, term frequency) pairs of the query terms."""
    norm = K1 * (1 - B + B * length / average_length) if average_length else K1
    return sum(w * tf * (K1 + 1) / (tf + norm) for w, tf in frequencies if tf)


@attrs.define
class TermIndex:
    """One session's inverted index: terms to message ids, with term frequencies.

    Not thread-safe: its owner (``InMemoryStore``) guards it with its lock.
    """

    postings: dict[str, dict[int, int]] = attrs.Factory(dict)
    lengths: dict[int, int] = attrs.Factory(dict)
    total_length: int = 0

    def add(self, doc_id: int, terms: Iterable[str]) -> None:
        """Index the document ``doc_id`` under ``terms`` (repeats count)."""
        counts = Counter(terms)
        for term, tf in counts.items():
            self.postings.setdefault(term, {})[doc_id] = tf
        length = sum(counts.values())
        self.lengths[doc_id] = length
        self.total_length += length

    def remove(self, doc_id: int, terms: Iterable[str]) -> None:
        """Drop the document ``doc_id`` indexed under ``terms``."""
        for term in set(terms):
            docs = self.postings.get(term)
            if docs is not None:
                docs.pop(doc_id, None)
                if not docs:
                    del self.postings[term]
        self.total_length -= self.lengths.pop(doc_id, 0)

    def search(
        self, terms: Sequence[str], limit: int, allowed: set[int] | None = None
    ) -> list[tuple[int, float]]:
        """Return up to ``limit`` (doc id, score) pairs, best first, ties newest first.

        ``allowed``: only these documents (say, the archived ones) may be returned;
        the statistics stay the whole session's.
        """
        documents = len(self.lengths)
        if not documents:
            return []
        average = self.total_length / documents
        weights = {
            term: idf(documents, len(self.postings[term]))
            for term in dict.fromkeys(terms)
            if term in self.postings
        }
        candidates: set[int] = set()
        for term in weights:
            candidates.update(self.postings[term])
        if allowed is not None:
            candidates &= allowed
        scored = [
            (
                doc_id,
                bm25(
                    [(w, self.postings[t].get(doc_id, 0)) for t, w in weights.items()],
                    self.lengths[doc_id],
                    average,
                ),
            )
            for doc_id in candidates
        ]
        scored.sort(key=lambda pair: (-pair[1], -pair[0]))
        return scored[:limit]
