"""The reference ranking of a history search: BM25 with the context of a conversation.

1. BM25 over the terms of ``domain.recall``, with SQLite FTS5's ``bm25()`` formula
   (k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)), floored at 1e-6), so
   every store ranks alike. A query's terms are OR'ed: a message matches when it
   holds any of them. Every store counts N, n and the average length in the session
   (its messages, active and archived), so what other sessions hold never changes
   how a session's messages rank, or whether they are found.
   A term found in half the messages or more is left out of the query (its weight
   is nil; ``informative``).
2. Context: the best ``CANDIDATES`` messages, and the neighbours of the best
   ``CONTEXT_SEEDS`` (up to ``CONTEXT_REACH`` messages before or after them in the
   session) even when they hold no query term, each add ``CONTEXT_WEIGHT`` times the
   best score among their own neighbours. In a conversation the words of a question
   are often spread over a question and its answer: on LoCoMo this lifts evidence
   recall@10 from 69% to 81% (``benchmarks/run.py --only recall``).
3. Bounded candidates: only the query's rarest ``SEED_TERMS`` terms bring candidates,
   each its newest ``PER_TERM`` messages (``seed_terms``, ``newest``); the candidates
   are then scored exactly, with every query term. A message that holds only terms
   found in many messages scores low, so the bound costs little recall (none on
   LoCoMo) and keeps a search on a session of 100k messages to a few thousand scores
   instead of one per match.
4. The speaker a query names (``by_named_speaker``, over what a store returned): a
   message whose ``name`` (its speaker) is a word of the query scores
   ``SPEAKER_BOOST`` more, among the best ``SPEAKER_DEPTH`` times the hits asked
   for. "What did Melanie paint?" asks what Melanie said: in LoCoMo 96% of the
   evidence of a question naming one speaker is that speaker's. The name is a term
   of every message of its speaker, and of those that mention it, so it is too
   common to weigh in BM25 (step 1 leaves it out); who said a message tells the two
   apart. On LoCoMo (categories 1, 2, 4) this lifts evidence recall@10 by 3 points
   on the conversations it was tuned on and 2 on the others. A query naming two
   speakers asks about the one it names first, its subject (``named_speakers``:
   "What did Melanie show to Caroline?"): only that one's messages score more
   (recall@10 87.0% -> 87.5% on the tuning half, 85.9% kept on the other, whose
   recall@5 rises from 74.7% to 77.3%).
5. The dates a query names (``by_named_period``, over what a store returned, before
   step 4): a message whose ``timestamp`` falls in a period the query names
   (``domain.periods``: "on October 13, 2023", "in May 2023") scores
   ``PERIOD_BOOST`` more, among the best ``PERIOD_DEPTH`` times the hits asked for.
   "What did Tim say about his injury on 16 November, 2023?" asks what was said
   that day, which the words of the question alone rarely tell: on LoCoMo
   (categories 1, 2, 4) this lifts evidence recall@10 by 0.7 points both on the
   conversations it was tuned on and on the others.
6. Coverage (``Coverage``, in step 2): a message's score, context included, is
   multiplied by the square root (``COVERAGE_POWER``) of the share of the query it
   and its neighbours cover: the idf-weighted share of the query's terms held by a
   match within ``CONTEXT_REACH`` messages of it (itself included). A passage that
   holds every word of the question beats one that holds one of its words many
   times ("What did Melanie and her family do while camping?": "camping" said three
   times outweighs "family" and "camping" together in BM25 alone). On LoCoMo
   (categories 1, 2, 4) this lifts evidence recall@10 from 85.7% to 86.4% on the
   conversations it was tuned on and from 82.5% to 85.1% on the others.
7. Irregular forms (``domain.forms``): the terms of one word's forms ("meet",
   "met") count as one term in steps 1 and 6: its frequency in a message is the
   sum of its forms', its document count the sum of theirs; in step 3 each form
   is as rare as its word (``seed_terms``). The engine adds
   the other forms to a query (``with_forms``), so "When did they meet?" finds "we
   met"; a store ranks whatever terms it is given this way. On LoCoMo (categories
   1, 2, 4) evidence recall@10 rises from 86.4% to 87.0% on the conversations it
   was tuned on and from 85.1% to 85.9% on the others.

Ties go to the newer message.

Why about 515 lines: one concept, the reference ranking every store implements; its
steps share the statistics and the candidates' term frequencies.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import attrs

from .errors import QueryError
from .forms import form_of
from .periods import Period
from .ports import StoredHit
from .recall import query_terms

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
CANDIDATES = 500
"""How many BM25 matches the context step considers (the best ones)."""
CONTEXT_REACH = 2
"""Neighbours count up to this many messages before or after, in the session."""
CONTEXT_WEIGHT = 0.6
"""The share of the best neighbour's score a match adds to its own."""
CONTEXT_SEEDS = 20
"""The best this many matches also lend to neighbours that matched no term."""
SEED_TERMS = 6
"""Candidates come from the query's rarest this many terms."""
PER_TERM = 100
"""Each of those terms brings at most this many candidates: the newest holding it."""
SPEAKER_BOOST = 0.5
"""A hit by a speaker the query names scores this share more (``by_named_speaker``)."""
SPEAKER_DEPTH = 2
"""The speaker rule reorders the best this many times the hits asked for."""
PERIOD_BOOST = 0.5
"""A hit said in a period the query names scores this share more."""
PERIOD_DEPTH = 5
"""A query naming a period reorders the best this many times the hits asked for."""
COVERAGE_POWER = 0.5
"""A score is multiplied by this power of the query share its passage covers."""


def idf(documents: int, matching: int) -> float:
    """Return FTS5's inverse document frequency of a term found in ``matching`` docs.

    ``matching`` is taken as at most ``documents`` (and ``documents`` as at least 0):
    statistics a store read while the session changed must not reach ``log`` with a
    negative ratio.
    """
    documents = max(documents, 0)
    matching = min(max(matching, 0), documents)
    value = math.log((documents - matching + 0.5) / (matching + 0.5))
    return value if value > 0 else MIN_IDF


def bm25(
    frequencies: Sequence[tuple[float, int]], length: int, average_length: float
) -> float:
    """Return a document's score from (idf, term frequency) pairs of the query terms."""
    norm = K1 * (1 - B + B * length / average_length) if average_length else K1
    return sum(w * tf * (K1 + 1) / (tf + norm) for w, tf in frequencies if tf)


def group_matching(terms: Iterable[str], matching: Mapping[str, int]) -> dict[str, int]:
    """Return how many documents hold each group of forms (``domain.forms``).

    The sum of its forms' counts: at least the documents holding any of them.
    """
    counts: dict[str, int] = {}
    for term in dict.fromkeys(terms):
        if matching.get(term):
            group = form_of(term)
            counts[group] = counts.get(group, 0) + matching[term]
    return counts


def informative(
    terms: Sequence[str], matching: Mapping[str, int], documents: int
) -> list[str]:
    """Return the query terms worth searching for: found, and in under half the docs.

    A term in half the documents or more has no BM25 weight (its idf is floored): it
    tells no message apart and only makes the search slower, so it is left out,
    unless no other term is left (then every term found is kept). The forms of one
    word (``domain.forms``) count as one term.
    """
    found = [t for t in dict.fromkeys(terms) if matching.get(t)]
    groups = group_matching(found, matching)
    useful = [t for t in found if 2 * groups[form_of(t)] < documents]
    return useful or found


def seed_terms(terms: Sequence[str], matching: Mapping[str, int]) -> list[str]:
    """Return the terms that bring candidates: the rarest ``SEED_TERMS``.

    A term is as rare as its word: the forms of one word (``domain.forms``) are
    ranked by their summed count, side by side, and each takes a place: a search
    still has at most ``SEED_TERMS`` seeds, and scores at most
    ``SEED_TERMS * PER_TERM`` candidates. Ties keep the query's order. ``terms``
    are the informative ones.
    """
    groups = group_matching(terms, matching)
    found = [t for t in terms if matching.get(t)]
    return sorted(found, key=lambda t: groups[form_of(t)])[:SEED_TERMS]


def newest(ids: Iterable[int]) -> list[int]:
    """Return the ``PER_TERM`` highest (newest) of ``ids``: a term's candidates."""
    return heapq.nlargest(PER_TERM, ids)


@attrs.define
class Coverage:
    """Which of a query's terms each BM25 match holds (ranking step 6).

    ``bm25_search`` fills it for the matches it returns, ``with_context`` reads it.

    Attributes:
        weights: each query term's weight (its idf); bit ``k`` of a mask stands for
            ``weights[k]``.
        held: each match's mask: the bits of the query terms it holds. A message
            absent from it (a neighbour that matched nothing) holds none.
    """

    weights: list[float] = attrs.Factory(list)
    held: dict[int, int] = attrs.Factory(dict)

    def factor(self, mask: int) -> float:
        """Return what a passage holding the terms of ``mask`` multiplies its score by.

        The ``COVERAGE_POWER`` power of their share of the query's weight; 1 when the
        query has no weight at all.

        >>> Coverage([1.0, 3.0]).factor(0b10)
        0.8660254037844386
        >>> Coverage([1.0, 3.0]).factor(0b11), Coverage([1.0]).factor(0)
        (1.0, 0.0)
        """
        total = sum(self.weights)
        if total <= 0:
            return 1.0
        held = sum(w for k, w in enumerate(self.weights) if mask >> k & 1)
        return float(min(held / total, 1.0) ** COVERAGE_POWER)


def with_context(
    scored: Sequence[tuple[int, float]],
    reach: Mapping[int, int | None],
    limit: int,
    coverage: Coverage | None = None,
) -> list[tuple[int, float]]:
    """Return the best ``limit`` (id, score) pairs once neighbours lent their scores.

    Args:
        scored: BM25 matches (message id, score), any order; ids order the session.
        reach: for each id in ``scored``, the id ``CONTEXT_REACH`` messages later in
            its session (None: the session ends sooner); ``b`` is ``a``'s neighbour
            when ``a < b <= reach[a]``.
        limit: how many to return.
        coverage: the query terms each match holds (``bm25_search`` fills it): a
            score is then multiplied by ``Coverage.factor`` of the terms the message
            and its neighbours hold (step 6). None: no such factor.
    """
    ids = sorted(id_ for id_, _ in scored)
    base = dict(scored)
    best = dict.fromkeys(ids, 0.0)
    held = coverage.held if coverage is not None else {}
    window = {id_: held.get(id_, 0) for id_ in ids}
    for at, a in enumerate(ids):
        last = reach.get(a)
        for b in ids[at + 1 :]:
            if last is not None and b > last:
                break
            best[a] = max(best[a], base[b])
            best[b] = max(best[b], base[a])
            window[a] |= held.get(b, 0)
            window[b] |= held.get(a, 0)
    final = [(id_, base[id_] + CONTEXT_WEIGHT * best[id_]) for id_ in ids]
    if coverage is not None:
        factors = {mask: coverage.factor(mask) for mask in set(window.values())}
        final = [(id_, score * factors[window[id_]]) for id_, score in final]
    final.sort(key=lambda pair: (-pair[1], -pair[0]))
    return final[:limit]


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
        self.add_counted(doc_id, Counter(terms))

    def add_counted(self, doc_id: int, counts: Mapping[str, int]) -> None:
        """Index the document ``doc_id`` under its terms' ``counts`` (term -> tf)."""
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
        self,
        terms: Sequence[str],
        limit: int,
        allowed: set[int] | None = None,
        coverage: Coverage | None = None,
    ) -> list[tuple[int, float]]:
        """Return up to ``limit`` (doc id, score) pairs, best first, ties newest first.

        ``allowed``: only these documents (say, the archived ones) may be returned;
        the statistics stay the whole session's. ``coverage``: filled as
        ``bm25_search`` fills it.
        """
        documents = len(self.lengths)
        matching = {t: len(self.postings[t]) for t in terms if t in self.postings}
        terms = informative(terms, matching, documents)
        candidates: dict[int, Mapping[str, int]] = {}
        for term in seed_terms(terms, matching):
            docs = self.postings.get(term, {})
            held = docs if allowed is None else (d for d in docs if d in allowed)
            for doc_id in newest(held):
                candidates[doc_id] = _Frequencies(self.postings, doc_id)
        return bm25_search(
            terms,
            candidates,
            matching,
            {doc_id: self.lengths[doc_id] for doc_id in candidates},
            documents=documents,
            total_length=self.total_length,
            limit=limit,
            coverage=coverage,
        )


class _Frequencies(Mapping[str, int]):
    """A document's term frequencies, read from an index's postings."""

    def __init__(self, postings: Mapping[str, Mapping[int, int]], doc_id: int):
        self._postings = postings
        self._doc_id = doc_id

    def __getitem__(self, term: str) -> int:
        return self._postings.get(term, {}).get(self._doc_id, 0)

    def __iter__(self) -> Iterator[str]:  # pragma: no cover - never iterated
        return iter(())

    def __len__(self) -> int:  # pragma: no cover - never measured
        return 0


def bm25_search(
    terms: Sequence[str],
    candidates: Mapping[int, Mapping[str, int]],
    matching: Mapping[str, int],
    lengths: Mapping[int, int],
    *,
    documents: int,
    total_length: int,
    limit: int = CANDIDATES,
    coverage: Coverage | None = None,
) -> list[tuple[int, float]]:
    """Return the best ``limit`` (id, score) of ``candidates``, ties newest first.

    Args:
        terms: the query's terms.
        candidates: each candidate's term frequencies (absent terms read as 0).
        matching: how many documents of the collection hold each term.
        lengths: each candidate's length in terms.
        documents: the collection's size (N).
        total_length: its documents' summed length.
        limit: how many to return.
        coverage: when given, filled with the query terms' weights and which of
            them each returned candidate holds (``with_context`` reads it).
    """
    average_length = total_length / documents if documents else 0.0
    groups = group_matching(terms, matching)
    members: dict[str, list[str]] = {}
    for term in dict.fromkeys(terms):
        if matching.get(term):
            members.setdefault(form_of(term), []).append(term)
    weights = {group: idf(documents, count) for group, count in groups.items()}
    forms = [(members[g], w) for g, w in weights.items()]
    if all(len(terms_) == 1 for terms_, _ in forms):
        pairs = {  # each candidate's (weight, tf) per query term, read once
            doc_id: [(w, frequencies[t]) for (t,), w in forms]
            for doc_id, frequencies in candidates.items()
        }
    else:  # a word with several forms: their frequencies summed
        pairs = {
            doc_id: [(w, sum(map(frequencies.__getitem__, ts))) for ts, w in forms]
            for doc_id, frequencies in candidates.items()
        }
    scored = [
        (doc_id, bm25(held, lengths[doc_id], average_length))
        for doc_id, held in pairs.items()
    ]
    scored.sort(key=lambda pair: (-pair[1], -pair[0]))
    best = scored[:limit]
    if coverage is not None:
        coverage.weights = list(weights.values())
        coverage.held = {
            doc_id: sum(1 << k for k, (_, tf) in enumerate(pairs[doc_id]) if tf)
            for doc_id, _ in best
        }
    return best


def reference_search(
    documents: Sequence[tuple[int, Sequence[str]]], terms: Sequence[str], limit: int
) -> list[tuple[int, float]]:
    """Return the reference ranking of one session's ``documents`` (id, terms).

    ``documents`` are in session order; stores must rank as this does.
    """
    index = TermIndex()
    for doc_id, doc_terms in documents:
        index.add(doc_id, doc_terms)
    order = [doc_id for doc_id, _ in documents]
    later = {
        doc_id: order[at + CONTEXT_REACH] if at + CONTEXT_REACH < len(order) else None
        for at, doc_id in enumerate(order)
    }
    coverage = Coverage()
    matches = index.search(terms, CANDIDATES, coverage=coverage)
    scored = dict(matches)
    at = {doc_id: i for i, doc_id in enumerate(order)}
    for doc_id, _ in matches[:CONTEXT_SEEDS]:
        i = at[doc_id]
        for near in order[max(i - CONTEXT_REACH, 0) : i + CONTEXT_REACH + 1]:
            scored.setdefault(near, 0.0)
    reach = {i: later[i] for i in scored}
    return with_context(list(scored.items()), reach, limit, coverage)


def by_named_speaker(
    hits: Sequence[StoredHit], terms: Sequence[str], limit: int
) -> list[StoredHit]:
    """Return the best ``limit`` of ``hits`` once the speakers the query names count.

    A hit whose message's ``name`` has a term among the query's ``terms`` (its
    speaker is named: "What did Melanie paint?"), the first named of those the hits
    hold when there are several (``named_speakers``), scores ``1 + SPEAKER_BOOST``
    times its score; the others keep theirs. Best first, ties newest first. ``hits`` are
    a store's best ``limit * SPEAKER_DEPTH``, best first.
    """
    named = named_speakers({hit.message.name for hit in hits}, terms)

    def said_by_named(hit: StoredHit) -> bool:
        return hit.message.name in named

    return _boosted(hits, SPEAKER_BOOST, said_by_named, limit)


def named_speakers(names: Iterable[str | None], terms: Sequence[str]) -> set[str]:
    """Return the speakers of ``names`` a query is about: the one it names first.

    A name is named when one of its terms (``speaker_terms``) is among the query's
    ``terms``; of several named, the one whose term comes first in the query (the
    question's subject: "What did Melanie show to Caroline?" asks what Melanie
    showed), and all of those that share that first term.

    >>> sorted(named_speakers(["Caroline", "Melanie"], ("melani", "show", "carolin")))
    ['Melanie']
    >>> named_speakers(["Caroline", None], ("paint",))
    set()
    """
    position: dict[str, int] = {}
    for at, term in enumerate(terms):
        position.setdefault(term, at)
    first: dict[str, int] = {}
    for name in names:
        if name:
            held = [position[t] for t in speaker_terms(name) if t in position]
            if held:
                first[name] = min(held)
    if not first:
        return set()
    earliest = min(first.values())
    return {name for name, at in first.items() if at == earliest}


def by_named_period(
    hits: Sequence[StoredHit], periods: Sequence[Period]
) -> list[StoredHit]:
    """Return ``hits`` once the periods the query names count, best first.

    A hit whose message's ``timestamp`` falls in one of ``periods`` (it was said on
    the day the query names: "on October 13, 2023") scores ``1 + PERIOD_BOOST``
    times its score; the others keep theirs. Ties go to the newer message. ``hits``
    are a store's best ``limit * PERIOD_DEPTH`` when ``periods`` is not empty (else
    they come back as they are).
    """
    if not periods:
        return list(hits)

    def dated(hit: StoredHit) -> bool:
        return any(period.holds(hit.message.timestamp) for period in periods)

    return _boosted(hits, PERIOD_BOOST, dated)


def _boosted(
    hits: Sequence[StoredHit],
    boost: float,
    applies: Callable[[StoredHit], bool],
    limit: int | None = None,
) -> list[StoredHit]:
    """Return the best ``limit`` of ``hits`` (None: all), ties newest first.

    A hit ``applies`` holds for scores ``1 + boost`` times its score.
    """
    scored = [
        (hit.score * (1 + boost) if applies(hit) else hit.score, hit) for hit in hits
    ]
    scored.sort(key=lambda pair: (-pair[0], -(pair[1].message.id or 0)))
    return [
        hit if score == hit.score else attrs.evolve(hit, score=score)
        for score, hit in scored[:limit]
    ]


@functools.lru_cache(maxsize=1024)
def speaker_terms(name: str) -> frozenset[str]:
    """Return the terms a query names a speaker by: its name's, as a query's.

    >>> sorted(speaker_terms("Caroline"))
    ['carolin']
    >>> speaker_terms("--")
    frozenset()
    """
    try:
        return frozenset(query_terms(name))
    except QueryError:
        return frozenset()
