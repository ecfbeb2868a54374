"""Hyponym expansion at a reduced weight, measured on LoCoMo: a ranking experiment.

``python benchmarks/recall_expansion.py [--data PATH] [--alpha A] [--nouns plural|all]
[--senses N] [--depth D] [--against FILE]`` runs ``recall_questions.py``'s questions
with each query expanded by the hyponyms of its nouns in WordNet 3.0 ("European
countries" -> "Spain", "France", ...), and prints recall@10 per half and category
(docs/recall.md, Benchmark, gives the figures and why the rule is not shipped).

An expansion term weighs ``alpha`` times its idf in BM25 (ranking step 1); in the
coverage step (6) a passage holding one covers ``alpha`` times the weight of the
word it expands; at most ``--seeds`` expansion terms bring candidates besides the
query's own seed terms. The rule lives here only: it replaces ``domain.ranking``'s
``bm25_search``, ``informative``, ``seed_terms`` and ``Coverage.factor`` for this
process, and runs on ``InMemoryStore`` alone.

Needs NLTK (``pip install nltk``, not a dependency of the project) and WordNet 3.0's
database files in ``--wordnet`` (default ``~/nltk_data/corpora/wordnet``; Debian's
``wordnet-base`` installs them in ``/usr/share/wordnet``: copy them there). A
``lexnames`` file missing from them (Debian ships none) is written.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import recall_questions
from summary_quality.locomo import default_locomo_path, load_locomo

import memory_summary.history as history
from memory_summary.domain import ranking
from memory_summary.domain.errors import QueryError
from memory_summary.domain.recall import STOP_WORDS, query_terms

LEXNAMES = [
    *("adj.all", "adj.pert", "adv.all"),
    *(
        f"noun.{n}"
        for n in [
            "Tops",
            "act",
            "animal",
            "artifact",
            "attribute",
            "body",
            "cognition",
            "communication",
            "event",
            "feeling",
            "food",
            "group",
            "location",
            "motive",
            "object",
            "person",
            "phenomenon",
            "plant",
            "possession",
            "process",
            "quantity",
            "relation",
            "shape",
            "state",
            "substance",
            "time",
        ]
    ),
    *(
        f"verb.{n}"
        for n in [
            "body",
            "change",
            "cognition",
            "communication",
            "competition",
            "consumption",
            "contact",
            "creation",
            "emotion",
            "motion",
            "perception",
            "possession",
            "social",
            "stative",
            "weather",
        ]
    ),
    "adj.ppl",
]
POS_NUMBER = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}


def wordnet(folder: Path) -> Any:
    """Return NLTK's reader of the WordNet files in ``folder``."""
    lexnames = folder / "lexnames"
    if not lexnames.exists():
        lexnames.write_text(
            "".join(
                f"{i:02d}\t{name}\t{POS_NUMBER[name.split('.')[0]]}\n"
                for i, name in enumerate(LEXNAMES)
            )
        )
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    WordNetCorpusReader.map_wn = lambda self, version="wordnet": None  # no OMW map
    import nltk

    nltk.data.path.insert(0, str(folder.parent.parent))
    from nltk.corpus import wordnet as wn

    return wn


class Expansion:
    """The expansion rule and the ranking functions it replaces."""

    def __init__(self, wn: Any, args: argparse.Namespace) -> None:
        self.wn = wn
        self.args = args
        self.current: dict[str, tuple[str, ...]] = {}  # expansion -> words expanded
        self.last: dict[str, dict[int, float]] = {}
        self.expanded = 0

    def nouns(self, question: str) -> list[str]:
        """Return the question's nouns to expand: two-word ones first, singular."""
        words = re.findall(r"[A-Za-z]+", question)
        lowered = [w.lower() for w in words]
        found = [
            f"{a}_{b}"
            for a, b in itertools.pairwise(lowered)
            if self.wn.synsets(f"{a}_{b}", "n")
        ]
        for word in words:
            lower = word.lower()
            if lower in STOP_WORDS or word[0].isupper():
                continue
            bases = sorted(self.wn._morphy(lower, "n"), key=lambda b: (b != lower, b))
            if not bases:
                continue
            if self.args.nouns == "plural" and bases[0] == lower:
                continue
            found.append(bases[0])
        return found

    def expansions(self, question: str) -> dict[str, tuple[str, ...]]:
        """Return each expansion term of ``question`` and the terms it expands."""
        found: dict[str, tuple[str, ...]] = {}
        for noun in self.nouns(question):
            head = query_terms(noun.replace("_", " "))
            if "_" in noun:
                bases = sorted(self.wn._morphy(noun, "n"), key=lambda b: (b != noun, b))
                noun = bases[0]
            frontier = self.wn.synsets(noun, "n")[: self.args.senses]
            for _ in range(self.args.depth):
                frontier = [
                    h for s in frontier for h in s.hyponyms() + s.instance_hyponyms()
                ]
                for synset in frontier:
                    for lemma in synset.lemma_names():
                        if "_" in lemma or "-" in lemma:
                            continue
                        try:
                            terms = query_terms(lemma)
                        except QueryError:
                            continue
                        if len(terms) == 1 and terms[0] not in head:
                            found.setdefault(terms[0], head)
        return dict(list(found.items())[: self.args.limit])

    def install(self) -> None:
        """Replace the ranking's functions with the expanding ones, in this process."""
        parse, forms = history.query_terms, history.with_forms
        seeds, informative = ranking.seed_terms, ranking.informative

        def query(text: object) -> tuple[str, ...]:
            terms = parse(text)
            self.current = {
                t: head
                for t, head in self.expansions(str(text)).items()
                if t not in terms
            }
            self.expanded += bool(self.current)
            return terms

        def with_forms(terms: Sequence[str]) -> tuple[str, ...]:
            return tuple(forms(terms)) + tuple(self.current)

        def seed_terms(terms: Sequence[str], matching: Mapping[str, int]) -> list[str]:
            own = seeds([t for t in terms if t not in self.current], matching)
            more = [t for t in terms if t in self.current and matching.get(t)]
            more.sort(key=lambda t: matching[t])
            return own + more[: self.args.seeds]

        def useful(
            terms: Sequence[str], matching: Mapping[str, int], documents: int
        ) -> list[str]:
            own = informative(
                [t for t in terms if t not in self.current], matching, documents
            )
            return own + [
                t
                for t in terms
                if t in self.current and matching.get(t) and 2 * matching[t] < documents
            ]

        history.query_terms = query
        history.with_forms = with_forms
        ranking.seed_terms = seed_terms
        ranking.informative = useful
        ranking.bm25_search = self.bm25_search
        rule = self

        def factor(self: ranking.Coverage, mask: int) -> float:
            total = sum(self.weights)
            if total <= 0:
                return 1.0
            held = sum(w for k, w in enumerate(self.weights) if mask >> k & 1)
            lent = rule.last.get("lent", {})
            held += max((w for k, w in lent.items() if mask >> k & 1), default=0.0)
            return float(min(held / total, 1.0) ** ranking.COVERAGE_POWER)

        ranking.Coverage.factor = factor  # type: ignore[method-assign]

    def bm25_search(
        self,
        terms: Sequence[str],
        candidates: Mapping[int, Mapping[str, int]],
        matching: Mapping[str, int],
        lengths: Mapping[int, int],
        *,
        documents: int,
        total_length: int,
        limit: int = ranking.CANDIDATES,
        coverage: ranking.Coverage | None = None,
    ) -> list[tuple[int, float]]:
        """``ranking.bm25_search`` with expansion terms weighed ``alpha`` times."""
        alpha = self.args.alpha
        average = total_length / documents if documents else 0.0
        groups = ranking.group_matching(terms, matching)
        members: dict[str, list[str]] = {}
        for term in dict.fromkeys(terms):
            if matching.get(term):
                members.setdefault(ranking.form_of(term), []).append(term)
        weights = {
            g: ranking.idf(documents, n) * (alpha if g in self.current else 1.0)
            for g, n in groups.items()
        }
        pairs = {
            doc: [(w, sum(tf[t] for t in members[g])) for g, w in weights.items()]
            for doc, tf in candidates.items()
        }
        scored = [(d, ranking.bm25(p, lengths[d], average)) for d, p in pairs.items()]
        scored.sort(key=lambda pair: (-pair[1], -pair[0]))
        best = scored[:limit]
        if coverage is not None:
            keys = list(weights)
            coverage.weights = [0.0 if g in self.current else weights[g] for g in keys]
            self.last["lent"] = {
                k: alpha
                * sum(weights.get(ranking.form_of(h), 0.0) for h in self.current[g])
                for k, g in enumerate(keys)
                if g in self.current
            }
            coverage.held = {
                d: sum(1 << k for k, (_, tf) in enumerate(pairs[d]) if tf)
                for d, _ in best
            }
        return best


def main(argv: list[str] | None = None) -> int:
    """Run the questions with the expansion; print the table (and the changes)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a LoCoMo JSON file")
    parser.add_argument(
        "--wordnet",
        type=Path,
        default=Path.home() / "nltk_data" / "corpora" / "wordnet",
    )
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--nouns", choices=("plural", "all"), default="plural")
    parser.add_argument("--senses", type=int, default=2)
    parser.add_argument("--depth", type=int, default=1)
    parser.add_argument("--limit", type=int, default=30, help="expansions a query")
    parser.add_argument("--seeds", type=int, default=3, help="seed expansions")
    parser.add_argument("--against", type=Path, help="recall_questions.py --out FILE")
    args = parser.parse_args(argv)
    path = args.data or default_locomo_path()
    if path is None or not Path(path).is_file():
        print("no LoCoMo file: give --data PATH", file=sys.stderr)
        return 2
    if not (args.wordnet / "data.noun").is_file():
        print(
            f"no WordNet 3.0 files in {args.wordnet}: give --wordnet DIR",
            file=sys.stderr,
        )
        return 2
    try:
        import nltk  # noqa: F401
    except ImportError:
        print("this experiment needs NLTK: pip install nltk", file=sys.stderr)
        return 2
    rule = Expansion(wordnet(args.wordnet), args)
    rule.install()
    found = recall_questions.questions(load_locomo(path))
    print("\n".join(recall_questions.table(found)))
    print(f"expanded {rule.expanded} of {len(found)} questions")
    if args.against:
        before = json.loads(args.against.read_text(encoding="utf-8"))
        print("\n".join(recall_questions.changes(found, before)) or "no change")
    return 0


if __name__ == "__main__":
    sys.exit(main())
