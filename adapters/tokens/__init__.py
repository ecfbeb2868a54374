"""Token counts: exact with tiktoken (working offline), estimated, remembered.

``TiktokenCounter`` counts in an encoding that ``tiktoken_encodings`` loads offline
from verified bundled vocabularies; ``estimate_tokens`` is a cheap bound without a
tokenizer; ``CountMemo`` and ``counter_factory`` give the engine one remembering
counter per encoding; ``ModelCounter`` is one model's counter as a value that
pickles, for a fold in a child process.

Why about 455 lines: one concept, counting tokens the way the engine needs: exactly,
cheaply estimated, remembered, and safe for models tiktoken does not know.
"""

from __future__ import annotations

import collections
import logging
import math
import operator
import re
import threading
from collections.abc import Callable
from functools import cache, lru_cache

from memory_summary.domain import Message, TokenizerError, message_tokens

# The loading names stay importable from here, as they were before they moved.
from .encodings import DEFAULT_FALLBACK, ENCODINGS, load_encoding
from .encodings import bundled_vocabulary as bundled_vocabulary
from .encodings import published_sources as published_sources

log = logging.getLogger(__name__)

LONG_RUN_CHARS = 2048
"""A run of non-space (or of space) characters at least this long is counted in slices
of this many characters (``TiktokenCounter.count``)."""
_LONG_RUN = re.compile(
    rf"(?<!\S)\S{{{LONG_RUN_CHARS},}}|(?<!\s)\s{{{LONG_RUN_CHARS},}}"
)


def encoding_name_for(model: str | None, fallback: str = DEFAULT_FALLBACK) -> str:
    """Return the encoding of ``model``: tiktoken's own model table, else ``fallback``.

    gpt-4o, gpt-4.1, gpt-5 and the o-series map to o200k_base; gpt-4 and gpt-3.5 to
    cl100k_base. Models tiktoken does not know (Llama, Qwen, ...) use ``fallback``.

    Args:
        model: the chat model's name; None gives ``fallback``.
        fallback: the encoding of every model tiktoken does not know.

    >>> encoding_name_for("gpt-4o-mini")
    'o200k_base'
    >>> encoding_name_for("gpt-3.5-turbo")
    'cl100k_base'
    """
    if model:
        import tiktoken.model

        try:
            name = tiktoken.model.encoding_name_for_model(model)
        except KeyError:
            name = fallback
        if name in ENCODINGS:
            return name
    return fallback


class TiktokenCounter:
    """Counts tokens exactly in one model's encoding.

    Special-token text such as ``<|endoftext|>`` in user input counts as plain text.

    Args:
        encoding: the tiktoken encoding, ``"o200k_base"`` (the default) or
            ``"cl100k_base"``; its vocabulary ships with the library (offline).
            ``for_model`` picks the one of a model.

    Raises:
        TokenizerError: an encoding other than those two.

    >>> TiktokenCounter.for_model("gpt-4o").count("hello world")
    2
    """

    def __init__(self, encoding: str = DEFAULT_FALLBACK) -> None:
        self.encoding_name = encoding
        self._encoding = load_encoding(encoding)

    @classmethod
    def for_model(
        cls, model: str | None, fallback: str = DEFAULT_FALLBACK
    ) -> TiktokenCounter:
        """Return a counter for ``model``'s encoding."""
        return cls(encoding_name_for(model, fallback))

    def count(self, text: str) -> int:
        """Return the number of tokens ``text`` encodes to.

        Exact, except inside a run of ``LONG_RUN_CHARS`` or more characters without a
        break (a pasted blob, a minified line, a letter-only message): BPE's work on one
        pre-token grows faster than its length, so such a run is counted in slices of
        ``LONG_RUN_CHARS``, plus one token a slice for the pre-token a cut may split
        (so the count errs high, by about a token a slice, never low). Counting is
        linear in the text on any input.
        """
        encode = self._encoding.encode_ordinary
        if len(text) < LONG_RUN_CHARS:
            return len(encode(text))
        total = 0
        start = 0
        for run in _LONG_RUN.finditer(text):
            for cut in range(run.start() + LONG_RUN_CHARS, run.end(), LONG_RUN_CHARS):
                total += len(encode(text[start:cut])) + 1
                start = cut
        return total + len(encode(text[start:]))

    def count_message(self, message: Message) -> int:
        """Return what ``message`` costs a chat model (``domain.message_tokens``).

        Text is counted exactly; image, audio and file parts add their documented
        estimates (an image 765 tokens, 85 at low detail; audio 600; a file 1,000).

        >>> TiktokenCounter().count_message(Message("user", "hello world"))
        6
        """
        return message_tokens(message, self.count)


# estimate_tokens: each UTF-8 byte is mapped to its class, the classes are counted.
_LETTER, _UPPER, _DIGIT, _SPACE, _BREAK, _MARK = b"a", b"A", b"d", b"s", b"n", b"p"
_LEAD2, _LEAD3, _LEAD4 = b"2", b"3", b"4"
_BYTE_CLASSES = bytes(
    (
        _LETTER
        if 97 <= b <= 122
        else _UPPER
        if 65 <= b <= 90
        else _DIGIT
        if 48 <= b <= 57
        else _SPACE
        if b == 32
        else _BREAK
        if b in (9, 10, 11, 12, 13)
        else _MARK
        if b < 0x80
        else _LEAD2
        if 0xC0 <= b < 0xE0
        else _LEAD3
        if 0xE0 <= b < 0xF0
        else _LEAD4
        if b >= 0xF0
        else b"c"  # a continuation byte: deleted, its character counts once
    )[0]
    for b in range(256)
)
_CONTINUATION = bytes(range(0x80, 0xC0))
ESTIMATE_WEIGHTS: dict[bytes, float] = {
    _LETTER: 0.3,
    _UPPER: 0.5,
    _DIGIT: 0.75,
    _SPACE: 0.25,
    _BREAK: 1.0,
    _MARK: 1.0,
    _LEAD2: 1.0,
    _LEAD3: 1.6,
    _LEAD4: 2.5,
}
"""Tokens per character of each class (see ``estimate_tokens``)."""
_CLASS_ORDER = (_LETTER, _UPPER, _DIGIT, _SPACE, _BREAK, _MARK, _LEAD2, _LEAD3, _LEAD4)
_ORDERED_WEIGHTS = tuple(ESTIMATE_WEIGHTS[code] for code in _CLASS_ORDER)
_COMMON = _LETTER + _SPACE
"""The classes ``estimate_tokens`` counts without scanning for them."""
ESCAPE_TOKENS = 2.5
"""Tokens a ``\\u`` escape adds to what its characters weigh."""


def estimate_tokens(text: str) -> int:
    """Return a cheap estimate of ``text``'s tokens that does not undercount.

    Each character is weighted by its class (ASCII lower- and upper-case letter,
    digit, space, line break, punctuation, 2-, 3- and 4-byte UTF-8 character;
    ``ESTIMATE_WEIGHTS``), a JSON escape of a character adds ``ESCAPE_TOKENS``, plus
    two tokens.
    The work is a few passes of C over the UTF-8 bytes and no tokenizer: 6-20x
    faster than tiktoken (more on long texts, where tiktoken's cost per character
    grows).

    The bound, measured (``benchmarks/token_estimate.py``) on LoCoMo's conversation
    turns and its records as JSON, the demo's English and Chinese chats and tool
    arguments, Chinese as JSON (escaped and not), this library's Python code and the
    engine_cpu chat: never below the exact o200k_base or cl100k_base count of any
    text (1.00x at the least, one English chat message in cl100k); in sum
    1.26-1.89x (English 1.26-1.55x, code 1.41x, Chinese 1.32-1.34x in cl100k and
    1.75-1.89x in o200k, which packs Chinese tighter). A CJK character weighs 1.6:
    some take two cl100k tokens (搬, 宽), and the demo's Chinese chats need it. A
    property test checks "never below" on chat text cut at spaces and joined. Those
    ratios were measured before spaces, digits, punctuation and line breaks weighed
    more (0.25, 0.75, 1.0, 1.0): the property found fragments of tool arguments and
    numbered lines (``'  "day": 1} '``, two lines of ``costs 95``) undercounted, so
    the estimate now overshoots somewhat more than they say.
    Text that is no language (random letters, base64, hashes) can need more tokens
    than this: use it only for figures that decide nothing.

    >>> estimate_tokens("")
    0
    >>> estimate_tokens("hello world") >= TiktokenCounter().count("hello world")
    True
    """
    if not text:
        return 0
    classes = text.encode("utf-8", "surrogatepass").translate(
        _BYTE_CLASSES, _CONTINUATION
    )
    # Letters and spaces are most of any text: they are counted by what is left
    # without them, and only that remainder is scanned for each other class.
    spaces = classes.count(_SPACE)
    rest = classes.translate(None, _COMMON)
    letters = len(classes) - spaces - len(rest)
    count = rest.count
    if text.isascii():  # (a flag of the string): no multi-byte classes to count
        lead2 = lead3 = lead4 = 0
    else:
        lead2, lead3, lead4 = count(_LEAD2), count(_LEAD3), count(_LEAD4)
    counts = (
        letters,
        count(_UPPER),
        count(_DIGIT),
        spaces,
        count(_BREAK),
        count(_MARK),
        lead2,
        lead3,
        lead4,
    )  # in ``_CLASS_ORDER``
    total = sum(map(operator.mul, _ORDERED_WEIGHTS, counts))
    # a JSON escape (\\u4f60) costs about four tokens, its six characters less
    total += ESCAPE_TOKENS * text.count("\\u")
    return math.ceil(total) + 2


def is_exact_for(model: str | None) -> bool:
    """Tell whether ``model``'s tokens count exactly here (tiktoken knows the model).

    No model named counts exactly in the fallback encoding (there is nothing else to
    match). A model tiktoken does not know (Llama, Qwen, Mistral, Gemma, Claude,
    Gemini...) is counted in the fallback encoding, which undercounts most of them.

    >>> is_exact_for("gpt-4o"), is_exact_for(None), is_exact_for("llama-3.1-8b")
    (True, True, False)
    """
    if not model:
        return True
    import tiktoken.model

    try:
        return tiktoken.model.encoding_name_for_model(model) in ENCODINGS
    except KeyError:
        return False


MEMO_MIN_CHARS = 256
"""Texts at least this long are remembered with their count (``CountMemo``)."""
MEMO_CHARS = 4_000_000
"""The characters a ``CountMemo`` keeps at most (about 4-16 MB)."""


def token_ceiling(text: str) -> int:
    """Return a count ``TiktokenCounter.count`` never exceeds, without a tokenizer.

    Every token of a byte-level BPE covers at least one UTF-8 byte, and a long run
    counted in slices adds one token a slice. A text whose ceiling fits a budget
    fits it exactly: the tokenizer need not run (``injection_text``).

    >>> token_ceiling("hello world") >= TiktokenCounter().count("hello world")
    True
    """
    return len(text.encode("utf-8", "surrogatepass")) + len(text) // LONG_RUN_CHARS


class CountMemo:
    """Remembers the counts of long texts: identical text is tokenized once.

    A compression meets the same text several times (the reply: usage, the output
    check, pins, the pinned result; a transcript line: the chunk split, the halving,
    the usage of the request). Texts shorter than ``MEMO_MIN_CHARS`` are counted
    again (hashing them costs about what counting does); the longest-unused texts
    are forgotten once ``MEMO_CHARS`` characters are kept. Thread-safe.

    ``ceiling``: a cheap count ``count`` never exceeds (``token_ceiling`` for
    tiktoken), for callers that only need to know whether a text fits.

    >>> memo = CountMemo(len, min_chars=2)
    >>> memo("abc"), memo("abc"), memo.hits
    (3, 3, 1)
    """

    def __init__(
        self,
        count: Callable[[str], int],
        *,
        min_chars: int = MEMO_MIN_CHARS,
        max_chars: int = MEMO_CHARS,
        ceiling: Callable[[str], int] | None = None,
    ) -> None:
        self._count = count
        self.ceiling = ceiling
        self._min_chars = min_chars
        self._max_chars = max_chars
        self._kept: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = 0

    def __call__(self, text: str) -> int:
        if len(text) < self._min_chars:
            return self._count(text)
        with self._lock:
            known = self._kept.get(text)
            if known is not None:
                self._kept.move_to_end(text)
                self.hits += 1
                return known
        tokens = self._count(text)  # outside the lock: counting may take a while
        with self._lock:
            if text not in self._kept and len(text) <= self._max_chars:
                self._kept[text] = tokens
                self._chars += len(text)
                while self._chars > self._max_chars:
                    old, _ = self._kept.popitem(last=False)
                    self._chars -= len(old)
        return tokens


def with_margin(count: Callable[[str], int], margin: float) -> Callable[[str], int]:
    """Return ``count`` scaled up by ``margin`` (0.15: 15 % more), rounded up.

    A ``ceiling`` of ``count`` is scaled the same way.

    >>> with_margin(len, 0.15)("x" * 100)
    115
    """
    if margin <= 0:
        return count
    return _WithMargin(count, 1.0 + margin)


class _WithMargin:
    """``count`` scaled up by ``scale``, rounded up (see ``with_margin``)."""

    def __init__(self, count: Callable[[str], int], scale: float) -> None:
        self._count = count
        self._scale = scale
        inner = getattr(count, "ceiling", None)
        self.ceiling: Callable[[str], int] | None = (
            None if inner is None else lambda text: math.ceil(inner(text) * scale)
        )

    def __call__(self, text: str) -> int:
        return math.ceil(self._count(text) * self._scale)


def counter_factory(
    fallback: str = DEFAULT_FALLBACK, *, margin: float = 0.0
) -> Callable[[str | None], Callable[[str], int]]:
    """Return ``model -> count_tokens`` for the engine, one counter per encoding.

    Each encoding's counter remembers the counts of long texts (``CountMemo``).
    Models whose tokenizer is not known exactly (``is_exact_for``) count in
    ``fallback`` scaled up by ``margin``, so budgets and limits stay safe for a
    tokenizer that needs more tokens than tiktoken's; each such model is logged once.

    Args:
        fallback: the encoding of the models tiktoken does not know, ``"o200k_base"``
            (the default) or ``"cl100k_base"``.
        margin: the share those models' counts are scaled up by (0.15: 15 % more;
            the engine passes its config's ``token_safety_margin``).

    Raises:
        TokenizerError: ``fallback`` is not one of the two encodings.
    """
    if fallback not in ENCODINGS:
        raise TokenizerError(
            f"fallback encoding {fallback!r} is not one of {ENCODINGS}"
        )

    @cache
    def for_encoding(name: str) -> Callable[[str], int]:
        return CountMemo(TiktokenCounter(name).count, ceiling=token_ceiling)

    @cache
    def inexact(name: str) -> Callable[[str], int]:
        return with_margin(for_encoding(name), margin)

    @lru_cache(maxsize=1024)  # model names come from hosts: bounded
    def for_model(model: str | None) -> Callable[[str], int]:
        name = encoding_name_for(model, fallback)
        if is_exact_for(model):
            return for_encoding(name)
        log.info(
            "model %r is not known to tiktoken: counting in %s with a %.0f%% safety "
            "margin (token_safety_margin)",
            model,
            name,
            margin * 100,
        )
        return inexact(name)

    return for_model


class ModelCounter:
    """``counter_factory(fallback, margin=margin)(model)`` as a value that pickles.

    The engine counts a summary for its default summarizer with this when the fold
    runs in a child process (``offline_fold="process"``): the child builds the same
    counter from the three settings, on its first count.

    >>> import pickle
    >>> count = pickle.loads(pickle.dumps(ModelCounter(None, margin=0.0)))
    >>> count("hello world")
    2
    """

    def __init__(
        self,
        model: str | None = None,
        fallback: str = DEFAULT_FALLBACK,
        *,
        margin: float = 0.0,
    ) -> None:
        self.model = model
        self.fallback = fallback
        self.margin = margin
        self._count: Callable[[str], int] | None = None

    def __call__(self, text: str) -> int:
        count = self._count
        if count is None:
            count = counter_factory(self.fallback, margin=self.margin)(self.model)
            self._count = count
        return count(text)

    def __reduce__(
        self,
    ) -> tuple[type[ModelCounter], tuple[str | None, str], dict[str, float]]:
        return (ModelCounter, (self.model, self.fallback), {"margin": self.margin})

    def __setstate__(self, state: dict[str, float]) -> None:
        self.margin = state["margin"]
        self._count = None

    def __repr__(self) -> str:
        return (
            f"ModelCounter({self.model!r}, {self.fallback!r}, margin={self.margin!r})"
        )
