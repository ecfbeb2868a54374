from __future__ import annotations

import math
import unicodedata
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import ranking
from memory_summary.domain.ranking import TermIndex

WORDS = [f"w{i}" for i in range(12)]
documents = st.lists(st.lists(st.sampled_from(WORDS), max_size=8), max_size=40)
queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=10)


def _expected(
    docs: list[list[str]], query: list[str], per_term: int, seeds: int, limit: int
) -> list[tuple[int, float]]:
    """The rule spelled out: the rarest seeds' newest matches, scored exactly."""
    n = len(docs)
    df = {t: sum(1 for d in docs if t in d) for t in dict.fromkeys(query)}
    found = [t for t in df if df[t]]
    terms = [t for t in found if 2 * df[t] < n] or found
    rarest = sorted(terms, key=lambda t: df[t])[:seeds]
    candidates = set()
    for term in rarest:
        holding = [i for i, d in enumerate(docs) if term in d]
        candidates.update(sorted(holding, reverse=True)[:per_term])
    average = sum(len(d) for d in docs) / n if n else 0.0
    scored = []
    for i in candidates:
        norm = ranking.K1 * (1 - ranking.B + ranking.B * len(docs[i]) / average)
        score = 0.0
        for t in terms:
            idf = math.log((n - df[t] + 0.5) / (df[t] + 0.5))
            tf = docs[i].count(t)
            if tf:
                score += max(idf, ranking.MIN_IDF) * tf * (ranking.K1 + 1) / (tf + norm)
        scored.append((i, score))
    scored.sort(key=lambda pair: (-pair[1], -pair[0]))
    return scored[:limit]


@given(
    docs=documents,
    query=queries,
    per_term=st.integers(1, 6),
    seeds=st.integers(1, 4),
    limit=st.integers(1, 20),
)
def test_search_scores_the_rarest_terms_newest_matches_exactly(
    docs, query, per_term, seeds, limit
):
    index = TermIndex()
    for i, words in enumerate(docs):
        index.add(i, words)

    with (
        mock.patch.object(ranking, "PER_TERM", per_term),
        mock.patch.object(ranking, "SEED_TERMS", seeds),
    ):
        found = index.search(query, limit)

    expected = _expected(docs, query, per_term, seeds, limit)
    assert [i for i, _ in found] == [i for i, _ in expected]
    for (_, got), (_, want) in zip(found, expected, strict=True):
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)


@given(docs=documents, query=queries, limit=st.integers(1, 20))
def test_the_bound_changes_nothing_while_every_term_is_under_it(docs, query, limit):
    index = TermIndex()
    for i, words in enumerate(docs):
        index.add(i, words)
    unbounded = _expected(
        docs, query, per_term=len(docs), seeds=len(WORDS), limit=limit
    )

    # 40 documents at most and 12 words: no term is over PER_TERM; SEED_TERMS may bind.
    if len(set(query)) <= ranking.SEED_TERMS:
        assert [i for i, _ in index.search(query, limit)] == [i for i, _ in unbounded]


@given(st.text(st.characters(categories=["Nd"]), min_size=1, max_size=20))
def test_numbers_skip_the_stemmer_which_would_leave_them_as_they_are(number):
    import snowballstemmer

    from memory_summary.domain.recall import text_terms

    stemmer = snowballstemmer.stemmer("english")
    assert stemmer.stemWord(number.casefold()) == number.casefold()
    assert text_terms(f"order {number}")[-1] == stemmer.stemWord(
        unicodedata.normalize("NFKC", number).casefold()
    )


@given(st.integers(-5, 50), st.integers(-5, 80))
def test_idf_is_finite_whatever_statistics_a_racing_store_read(
    documents: int, matching: int
) -> None:
    # A session popped or forgotten between two statistics reads gives n > N.
    value = ranking.idf(documents, matching)

    assert math.isfinite(value)
    assert value >= ranking.MIN_IDF


SPEAKERS = ["Ana", "Ben", None]
hit_lists = st.lists(
    st.tuples(st.sampled_from(SPEAKERS), st.floats(0, 50, allow_nan=False)),
    max_size=30,
)


def _hits(drawn: list[tuple[str | None, float]]) -> list:
    from memory_summary.domain import Message, StoredHit

    hits = [
        StoredHit(Message("user", "x", name=name, id=i + 1), False, score)
        for i, (name, score) in enumerate(drawn)
    ]
    return sorted(hits, key=lambda h: (-h.score, -h.message.id))


@given(
    drawn=hit_lists,
    named=st.lists(st.sampled_from(["ana", "ben", "cat"]), unique=True),
)
def test_the_first_named_speaker_scores_its_boost_more_and_the_rest_keep_their_order(
    drawn, named
) -> None:
    hits = _hits(drawn)
    terms = ["paint", *named]
    limit = max(len(hits) // ranking.SPEAKER_DEPTH, 1)
    speakers = {hit.message.name.lower() for hit in hits if hit.message.name}
    first = next((name for name in named if name in speakers), None)

    found = ranking.by_named_speaker(hits, terms, limit)

    want = []
    for hit in hits:
        boosted = hit.message.name is not None and hit.message.name.lower() == first
        want.append(
            (hit.score * (1 + ranking.SPEAKER_BOOST) if boosted else hit.score, hit)
        )
    want.sort(key=lambda pair: (-pair[0], -pair[1].message.id))
    assert [h.message.id for h in found] == [h.message.id for _, h in want[:limit]]
    assert [h.score for h in found] == [score for score, _ in want[:limit]]
    if first is None:  # no speaker of these hits named: the store's order, cut
        assert found == hits[:limit]


DAYS = [0.0, 86_400.0 * 3, None]  # 1970-01-01, 1970-01-04, no timestamp
dated_hits = st.lists(
    st.tuples(st.sampled_from(DAYS), st.floats(0, 50, allow_nan=False)), max_size=30
)


@given(drawn=dated_hits, named=st.booleans())
def test_a_named_day_scores_its_boost_more_and_the_rest_keep_their_order(
    drawn, named
) -> None:
    from memory_summary.domain import Message, StoredHit
    from memory_summary.domain.periods import Period

    hits = sorted(
        (
            StoredHit(Message("user", "x", timestamp=ts, id=i + 1), False, score)
            for i, (ts, score) in enumerate(drawn)
        ),
        key=lambda h: (-h.score, -h.message.id),
    )
    periods = [Period(1970, 1, 1)] if named else []

    found = ranking.by_named_period(hits, periods)

    want = sorted(
        (
            (
                hit.score * (1 + ranking.PERIOD_BOOST)
                if named and hit.message.timestamp == 0.0
                else hit.score,
                hit,
            )
            for hit in hits
        ),
        key=lambda pair: (-pair[0], -pair[1].message.id),
    )
    assert [h.message.id for h in found] == [h.message.id for _, h in want]
    assert [h.score for h in found] == [score for score, _ in want]
    if not named:
        assert found == hits


def _spelled_out(docs: list[list[str]], query: list[str], limit: int) -> dict:
    """Ranking steps 1, 2 and 6 spelled out: every scored id and its final score."""
    n = len(docs)
    matches = _expected(docs, query, ranking.PER_TERM, ranking.SEED_TERMS, 10**6)
    df = {t: sum(1 for d in docs if t in d) for t in dict.fromkeys(query)}
    found = [t for t in df if df[t]]
    terms = [t for t in found if 2 * df[t] < n] or found
    weight = {t: ranking.idf(n, df[t]) for t in terms}
    scored = dict(matches)
    for i, _ in matches[: ranking.CONTEXT_SEEDS]:
        for j in range(i - ranking.CONTEXT_REACH, i + ranking.CONTEXT_REACH + 1):
            if 0 <= j < n:
                scored.setdefault(j, 0.0)
    final = {}
    for i, score in scored.items():
        window = [
            j for j in scored if abs(j - i) <= ranking.CONTEXT_REACH
        ]  # itself included
        best = max((scored[j] for j in window if j != i), default=0.0)
        held = {t for j in window if scored[j] > 0 for t in terms if t in docs[j]}
        share = sum(weight[t] for t in held) / sum(weight.values())
        final[i] = (score + ranking.CONTEXT_WEIGHT * best) * share**0.5
    return final


@given(docs=documents, query=queries, limit=st.integers(1, 20))
def test_a_passage_scores_the_share_of_the_query_it_covers(docs, query, limit):
    # Step 6: a message's score, its neighbours' share included, is multiplied by
    # the square root of the idf share of the query's terms held by the matches
    # within CONTEXT_REACH of it (itself included).
    found = ranking.reference_search(list(enumerate(docs)), query, limit)

    want = _spelled_out(docs, query, limit)
    assert len(found) == min(limit, len(want))
    for id_, score in found:
        assert math.isclose(score, want[id_], rel_tol=1e-9, abs_tol=1e-12)
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True)
    if found:  # nothing left out scores more than the last one returned
        assert all(
            s <= scores[-1] * (1 + 1e-9) + 1e-12
            for i, s in want.items()
            if i not in dict(found)
        )


masks = st.integers(0, 2**4 - 1)
weights = st.lists(st.floats(1e-6, 10, allow_nan=False), min_size=4, max_size=4)
passages = st.lists(
    st.tuples(st.floats(0, 50, allow_nan=False), masks), min_size=1, max_size=30
)


@given(drawn=passages, weights=weights, limit=st.integers(1, 40))
def test_coverage_never_raises_a_score_and_a_whole_query_changes_nothing(
    drawn, weights, limit
):
    scored = [(i + 1, score) for i, (score, _) in enumerate(drawn)]
    reach = {i: i + ranking.CONTEXT_REACH for i, _ in scored}
    coverage = ranking.Coverage(weights, {i + 1: m for i, (_, m) in enumerate(drawn)})
    whole = ranking.Coverage(weights, dict.fromkeys(coverage.held, 2**4 - 1))

    plain = dict(ranking.with_context(scored, reach, len(scored)))
    covered = ranking.with_context(scored, reach, limit, coverage)

    for id_, score in covered:
        assert score <= plain[id_] * (1 + 1e-12)
    assert ranking.with_context(scored, reach, limit, whole) == ranking.with_context(
        scored, reach, limit
    )


@given(weights=weights, small=masks, extra=masks)
def test_covering_more_of_the_query_never_lowers_the_factor(weights, small, extra):
    coverage = ranking.Coverage(weights)

    assert 0.0 <= coverage.factor(small) <= coverage.factor(small | extra) <= 1.0
    assert coverage.factor(2**4 - 1) == 1.0
