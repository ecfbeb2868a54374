"""Recall: what a search of the history returns and how its text becomes terms.

Every store indexes the same *terms*, made here, so that they all find the same
messages and rank them alike (``domain.ranking`` is the reference ranking):

- text is NFKC-normalized and case-folded; a lone surrogate or a NUL is no character;
- a word (a run of letters and digits) of a script written with spaces is stemmed
  (Snowball's English stemmer: "dancing", "dances" and "danced" are one term), and
  words that carry no meaning ("the", "what", "did"...) are dropped from queries;
- Chinese, Japanese and Korean, written without spaces, become overlapping character
  bigrams ("北京大学" -> "北京", "京大", "大学"); a document also indexes each such
  character alone, so a one-character query finds it;
- a term is at most ``MAX_TERM_CHARS`` characters (longer words are cut), holds only
  letters and digits (no quote, operator or SQL metacharacter survives), and a query
  keeps its first ``MAX_QUERY_TERMS`` distinct terms;
- a message is indexed under its terms up to its first ``MAX_INDEXED_TERMS``
  distinct ones, or fewer if their UTF-8 text passes ``MAX_INDEXED_BYTES``
  (``indexed_terms``): a tool result listing 400,000 hashes is stored whole, and
  found by the words of its first few hundred kilobytes. Every store indexes the same
  prefix, so the bound keeps each message's index work (a PostgreSQL ``tsvector``
  is capped at 1 MB; a Redis script blocks its server while it runs) small, and
  never refuses a message.

A message's searchable text is its text content (text and refusal parts, file names),
its refusal, its tool calls' names and arguments, and its ``name`` (say, the speaker);
media bytes never are. ``domain.errors.QueryError`` says why a query cannot be
searched: it is not text, or it holds no letter or digit.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs
from snowballstemmer.english_stemmer import EnglishStemmer

from .errors import QueryError
from .model import Message

MAX_TERM_CHARS = 40
MAX_QUERY_TERMS = 32
MAX_QUERY_CHARS = 100_000
"""A longer query is refused: nobody types it, and reading it costs time."""
MAX_INDEXED_TERMS = 10_000
"""A message is indexed under its terms up to its first this many distinct ones."""
MAX_INDEXED_BYTES = 512 * 1024
"""... and up to where its distinct terms' UTF-8 text would pass this many bytes."""

_STOP_WORDS = """
    a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during
    each few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just me more most my myself no nor
    not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves s t
    d ll m o re ve y don doesn didn isn wasn weren won wouldn couldn shouldn hasn
    haven hadn aren also ever many much may might must shall yet get got let us
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())
"""English words a query drops (a query of nothing else keeps them)."""

_WORD = re.compile(r"[^\W_]+")
# Scripts written without spaces between words: Han, Hiragana, Katakana, Hangul,
# Bopomofo and the CJK symbols and compatibility blocks.
_CJK = re.compile(
    "[\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c"
    "\u3040-\u30ff\u3100-\u312f\u3131-\u318e\u31a0-\u31bf\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
    "\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]+"
)
_NOT_TEXT = re.compile("[\ud800-\udfff\x00]")
_EAGER_CHARS = 65_536  # a text at most this long is read whole (text_terms)
try:  # PyStemmer: the same Snowball algorithms in C, about 20x faster a word
    from Stemmer import Stemmer as _CStemmer

    def _new_stemmer() -> Any:
        return _CStemmer("english", 0)  # no cache of its own: ``_stemmed`` caches
except ImportError:  # a Python without its wheels (PyPy)
    _new_stemmer = EnglishStemmer


@attrs.frozen
class SearchHit:
    """One message a history search found, best first.

    Attributes:
        message: the stored message, with its ``id``.
        score: how well it matches (BM25: higher is better; comparable only within
            one search).
        archived: whether a compression archived it (it is out of the active history).
        summary_version: the summary version that folded it (``summary_history``),
            or None: still active, archived without a summary, or older than the
            versions the store keeps.
    """

    message: Message
    score: float
    archived: bool
    summary_version: int | None


@attrs.frozen
class HistoryEntry:
    """One stored message as ``read_history`` returns it, in id order.

    Attributes:
        message: the stored message, with its ``id``.
        archived: whether a compression archived it.
        summary_version: the summary version that folded it, or None.
    """

    message: Message
    archived: bool
    summary_version: int | None


@attrs.frozen
class SummaryVersion:
    """One summary the session had, and the message ids its compression folded.

    Attributes:
        version: the version number (``SummaryRecord.compressions`` when written).
        first_id: the first message id the compression that wrote it folded.
        last_id: the last one (inclusive); both None when unknown (a summary written
            by an earlier version of the library).
        created_at: when it was written, seconds since the epoch.
        summary: its text; "" when only its range is still kept.
        current: whether it is the summary the session injects now.
    """

    version: int
    first_id: int | None
    last_id: int | None
    created_at: float
    summary: str
    current: bool = False

    def folded(self, message_id: int) -> bool:
        """Tell whether this version's compression folded ``message_id``."""
        return (
            self.first_id is not None
            and self.last_id is not None
            and self.first_id <= message_id <= self.last_id
        )


def _stem(word: str) -> str:
    # A number has no suffix to strip (the stemmer returns it as it is). Numbers are
    # most of a chat's distinct words: they skip the stemmer and its cache.
    return word if word.isdigit() else _stemmed(word)


@functools.lru_cache(maxsize=65_536)
def _stemmed(word: str) -> str:
    if not word.isascii() and not word.isalpha():
        return word
    # A stemmer keeps the word it works on in itself: one shared by two threads
    # stems a mix of both words, or fails. A new one costs about 1 us in C (about
    # as much as its stem), well under 1% of a stem in Python.
    return str(_new_stemmer().stemWord(word))


def _words(text: str) -> Iterator[tuple[str, bool]]:
    """Yield (word, is_cjk) runs of letters and digits, normalized and case-folded."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", _NOT_TEXT.sub(" ", text))
    for match in _WORD.finditer(text.casefold()):
        run = match.group()
        if run.isascii():
            yield run, False
            continue
        end = 0
        for cjk in _CJK.finditer(run):
            if cjk.start() > end:
                yield run[end : cjk.start()], False
            yield cjk.group(), True
            end = cjk.end()
        if end < len(run):
            yield run[end:], False


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def text_terms(text: str) -> list[str]:
    """Return the terms a document of ``text`` is indexed under, in order, repeated.

    >>> text_terms("She was dancing in 北京大学")
    ['she', 'was', 'danc', 'in', '北京', '京大', '大学', '北', '京', '大', '学']
    """
    if not text.isascii():
        text = unicodedata.normalize("NFKC", _NOT_TEXT.sub(" ", text))
    runs = _WORD.findall(text.casefold())
    if not runs:
        return []
    if "".join(runs).isascii():  # the common case (curly quotes and emoji are no runs)
        if max(map(len, runs)) > MAX_TERM_CHARS:
            runs = [run[:MAX_TERM_CHARS] for run in runs]
        return list(map(_stem, runs))
    terms: list[str] = []
    for run in runs:
        terms.extend(_run_terms(run))
    return terms


def _run_terms(run: str) -> Iterator[str]:
    """Yield the terms of one run of letters and digits (normalized, case-folded)."""
    if run.isascii():
        yield _stem(run[:MAX_TERM_CHARS])
        return
    end = 0
    for cjk in _CJK.finditer(run):
        if cjk.start() > end:
            yield _stem(run[end : cjk.start()][:MAX_TERM_CHARS])
        yield from _bigrams(cjk.group())
        yield from cjk.group()
        end = cjk.end()
    if end < len(run):
        yield _stem(run[end:][:MAX_TERM_CHARS])


def _lazy_terms(text: str) -> Iterator[str]:
    """Yield ``text_terms(text)`` one by one: a bounded reader stems no more."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", _NOT_TEXT.sub(" ", text))
    for match in _WORD.finditer(text.casefold()):
        yield from _run_terms(match.group())


def message_text(message: Message) -> str:
    """Return the searchable text of a message (never media bytes)."""
    pieces: list[str] = []
    if message.name:
        pieces.append(message.name)
    content = message.content
    if isinstance(content, str):
        pieces.append(content)
    elif content is not None:
        pieces.extend(_part_text(part) for part in content)
    if message.refusal:
        pieces.append(message.refusal)
    for call in message.tool_calls:
        pieces.append(call.name)
        pieces.append(call.arguments)
    return "\n".join(piece for piece in pieces if piece)


def _part_text(part: Mapping[str, object]) -> str:
    kind = part.get("type")
    if kind in ("text", "refusal"):
        text = part.get(str(kind))
        return text if isinstance(text, str) else ""
    if kind == "file":
        file = part.get("file")
        name = file.get("filename") if isinstance(file, Mapping) else None
        return name if isinstance(name, str) else ""
    return ""


def indexed_terms(terms: Iterable[str]) -> list[str]:
    """Return the terms a document of ``terms`` is indexed under: a bounded prefix.

    The prefix ends before the first term that would make the distinct terms more
    than ``MAX_INDEXED_TERMS`` or their UTF-8 text more than ``MAX_INDEXED_BYTES``;
    repeats of a term inside it count (BM25's term frequencies and length).

    >>> indexed_terms(["a", "b", "a"])
    ['a', 'b', 'a']
    >>> len(indexed_terms([f"w{i}" for i in range(20_000)])) == MAX_INDEXED_TERMS
    True
    """
    # A term is at most MAX_TERM_CHARS characters of at most 4 bytes each.
    if (
        isinstance(terms, list)
        and len(terms) <= MAX_INDEXED_TERMS
        and (
            len(terms) * MAX_TERM_CHARS * 4 <= MAX_INDEXED_BYTES
            or sum(map(len, terms)) * 4 <= MAX_INDEXED_BYTES
        )
    ):
        return terms
    kept: list[str] = []
    seen: set[str] = set()
    size = 0
    for term in terms:
        if term not in seen:
            size += len(term) if term.isascii() else len(term.encode("utf-8"))
            if len(seen) == MAX_INDEXED_TERMS or size > MAX_INDEXED_BYTES:
                break
            seen.add(term)
        kept.append(term)
    return kept


def message_terms(message: Message) -> list[str]:
    """Return the terms a stored message is indexed under (``indexed_terms``).

    A long text is read lazily: the words past the bound are never stemmed.
    """
    text = message_text(message)
    if len(text) <= _EAGER_CHARS:
        return indexed_terms(text_terms(text))
    return indexed_terms(_lazy_terms(text))


def query_terms(query: object) -> tuple[str, ...]:
    """Return the distinct terms of an untrusted query, in order; at least one.

    Words that carry no meaning are dropped unless nothing else is left; CJK runs
    become bigrams (a lone character stays one term).

    >>> query_terms("When did Caroline go to the LGBTQ support group?")
    ('carolin', 'go', 'lgbtq', 'support', 'group')
    >>> query_terms('"; DROP TABLE messages; -- 北京')
    ('drop', 'tabl', 'messag', '北京')

    Raises:
        QueryError: ``query`` is not a str, is longer than ``MAX_QUERY_CHARS``, or
            holds no letter or digit.
    """
    if not isinstance(query, str):
        raise QueryError(f"query must be text, not {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(
            f"query is {len(query)} characters long; allowed: at most {MAX_QUERY_CHARS}"
        )
    kept: list[str] = []
    dropped: list[str] = []
    for run, cjk in _words(query):
        if cjk:
            kept.extend(_bigrams(run) if len(run) > 1 else [run])
        elif run in STOP_WORDS:
            dropped.append(_stem(run))
        else:
            kept.append(_stem(run[:MAX_TERM_CHARS]))
    terms = kept or dropped
    if not terms:
        raise QueryError(
            "query holds no word to search for (letters or digits); "
            f"got {_preview(query)}"
        )
    return tuple(dict.fromkeys(terms))[:MAX_QUERY_TERMS]


def _preview(query: str) -> str:
    shown = query[:40].encode("utf-8", "backslashreplace").decode("utf-8")
    return repr(shown) + ("..." if len(query) > 40 else "")


def check_around(before: object, after: object) -> tuple[int, int]:
    """Return ``before`` and ``after`` of ``read_history``, checked (0..1000 each)."""
    for name, value in (("before", before), ("after", after)):
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 0 <= value <= 1000
        ):
            raise ValueError(f"{name}={value!r} is invalid; allowed: int in 0..1000")
    return before, after  # type: ignore[return-value]


def check_search_limit(limit: object) -> int:
    """Return a search's ``limit``, checked (1..1000)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise ValueError(f"limit={limit!r} is invalid; allowed: int in 1..1000")
    return limit


def check_message_id(name: str, value: object) -> int:
    """Return a message id argument, checked (an int >= 1)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"{name}={value!r} is invalid; allowed: a message id (int >= 1)"
        )
    return value
