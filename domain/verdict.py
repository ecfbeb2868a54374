"""The summarizer's reply, judged: a summary worth storing, or why it is not one.

``check_summary`` first cleans the reply:

1. ``normalize_text``: lone surrogates become U+FFFD, NUL bytes are removed;
2. reasoning is removed (tags case-insensitive): every closed ``<think>…</think>`` or
   ``<thinking>…</thinking>`` block; text before a closing tag that comes first (the
   opening tag sat in the chat template); and an unclosed block that opens the reply
   (a reply cut off mid-thought: all of it is reasoning). An unclosed tag after other
   text is kept: it is a mention, not a block;
3. echoed prompt tags (``<conversation>``, ``<previous_summary>``,
   ``<current_task_state>``, ``<host_instructions>`` and their closing tags) are
   removed, their content kept;
4. surrounding whitespace is stripped.

Then it rejects, checking in this order (every pattern in every locale: a ``zh``
session can get an English provider error):

- ``empty``: nothing is left, or not even the truncation suffix fits the budget;
- ``provider_error``: the reply is an error message the provider returned as text.
  Structural signs reject a reply of at most ``PROVIDER_ERROR_MAX_CHARS``: it starts
  ``Error:``/``Error code: 429``/``错误：``, with an HTTP status line (``502 Bad
  Gateway``), a JSON error body (``{"error": …``, ``{"detail": …``, ``"object":
  "error"``) or a Python traceback; an HTML page (``<!DOCTYPE html``/``<html``) is
  rejected at any length. Known phrases (``rate limit reached``, ``Internal Server
  Error``, ``upstream connect error``, ``no healthy upstream``, ``请求过于频繁`` …)
  reject a reply of at most ``PROVIDER_ERROR_MAX_CHARS`` that starts with one and
  never names the user or the assistant (an honest summary does);
- ``refusal``: a reply of at most ``REFUSAL_MAX_CHARS`` that starts as a refusal in
  the first person (``I can't``, ``I'm sorry``, ``Sorry, but I cannot``, ``As an AI
  language model``, ``抱歉``, ``我无法``, ``作为一个AI`` …). A refusal reported in the
  third person (``The assistant declined to …``) is a summary;
- ``too_short``: fewer than ``TOO_SHORT_MAX_WORDS`` words whose token count, times
  ``TOO_SHORT_RATIO``, is still below both the input's (transcript plus previous
  summary) and the budget: ``ok`` for hundreds of tokens is no summary; a short
  sentence over a few short messages, or a reply a tiny budget squeezed, is. Words
  are runs of letters or digits; a CJK character counts half a word;
- ``echo``: at least ``ECHO_SHARE`` of the text, without the lines it keeps from the
  previous summary, consists of whole transcript entries repeated verbatim on their
  own lines. Quoting a sentence, or a bullet (``- User:
  …``, as the extractive summarizer writes), is not an echo.

An accepted summary is cut to ``budget_tokens`` on a character boundary, with the
locale's truncation suffix; ``Accepted.cut`` tells whether it was. Details name
counts and sizes, never the reply's text (the shell logs them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Literal

import attrs

from .config import Locale
from .injection import TRUNCATION_SUFFIXES
from .prompt import FENCE_TAGS
from .text import normalize_text
from .truncate import truncate_to_tokens

RejectReason = Literal["empty", "provider_error", "refusal", "echo", "too_short"]

PROVIDER_ERROR_MAX_CHARS = 600
REFUSAL_MAX_CHARS = 400
ECHO_SHARE = 0.6
TOO_SHORT_MAX_WORDS = 5
TOO_SHORT_RATIO = 20


@attrs.frozen
class Accepted:
    """A summary to store: ``tokens`` counts ``text``, at most the budget."""

    text: str
    tokens: int
    cut: bool


@attrs.frozen
class Rejected:
    """A reply that is no summary; ``detail`` holds counts, never the reply's text."""

    reason: RejectReason
    detail: str


_REASONING_TAG = re.compile(r"<(/?)(?:think|thinking)(?:\s[^<>]{0,200})?>", re.I)
_PROMPT_TAG = re.compile(rf"</?\s*(?:{'|'.join(FENCE_TAGS)})\s*>", re.I)
_LEAD = " \t\r\n*_#>`\"'\u201c\u201d\u2018\u2019\u300c\u300d-"

_STATUS_TEXT = (
    r"bad\s+request|unauthori[sz]ed|forbidden|not\s+found|request\s+time-?out"
    r"|payload\s+too\s+large|too\s+many\s+requests|internal\s+server\s+error"
    r"|bad\s+gateway|service\s+unavailable|gateway\s+time-?out"
)
_ERROR_SHAPE = re.compile(
    r"(?:api\s*)?error(?:\s*code)?\s*[:=\-]?\s*[45]\d\d\b"
    r"|error\s*:"
    rf"|(?:http/[\d.]+\s+)?[45]\d\d\s+(?:{_STATUS_TEXT})\b"
    r"|\{\s*\"(?:error|detail)\"\s*:"
    r"|\{[^{}]{0,200}\"(?:object|type)\"\s*:\s*\"error\""
    r"|traceback\s+\(most\s+recent\s+call\s+last\)"
    r"|(?:错误|异常)\s*(?:码|代码)?\s*[:：]",
    re.I,
)
_HTML_PAGE = re.compile(r"<!doctype\s+html|<html\b", re.I)
_ERROR_PHRASE = re.compile(
    r"rate[\s_-]?limit(?:ed|\s+(?:reached|exceeded|error)|_exceeded|_error)?\b"
    r"|too\s+many\s+requests|internal\s+server\s+error\b"
    r"|service\s+(?:is\s+)?(?:temporarily\s+)?unavailable|bad\s+gateway"
    r"|gateway\s+time-?out|upstream\s+(?:connect\s+error|request\s+timeout)"
    r"|no\s+healthy\s+upstream|the\s+server\s+had\s+an\s+error"
    r"|(?:that\s+|the\s+)?model\s+is\s+(?:currently\s+)?overloaded|overloaded\b"
    r"|you\s+exceeded\s+your\s+current\s+quota|insufficient[\s_]quota"
    r"|quota\s+exceeded|(?:incorrect|invalid)\s+api\s+key"
    r"|connection\s+(?:error|refused|reset)\b|request\s+timed\s+out|timed\s+out\b"
    r"|network\s+error\b|unknown\s+error\b|server\s+(?:is\s+)?busy"
    r"|服务器内部错误|服务(?:器)?(?:繁忙|不可用|暂时不可用)|系统繁忙|请求(?:过于频繁|超时|失败)"
    r"|网络(?:错误|异常)|接口(?:调用)?(?:失败|异常|错误)|(?:触发)?限流|调用(?:失败|超时)"
    r"|出错了|余额不足|额度(?:不足|已用完)|账户欠费",
    re.I,
)
_NAMES_A_ROLE = re.compile(r"\b(?:user|assistant)s?\b|用户|助手", re.I)
_REFUSAL = re.compile(
    r"i'?m\s+(?:so\s+|very\s+|really\s+)?(?:sorry|afraid|unable|not\s+able)\b"
    r"|i\s+am\s+(?:so\s+|very\s+|really\s+)?(?:sorry|afraid|unable|not\s+able)\b"
    r"|i\s+(?:can(?:no|')?t|can\s+not|won't|will\s+not|must\s+decline"
    r"|(?:do\s+not|don't)\s+feel\s+comfortable|apologi[sz]e)\b"
    r"|(?:sorry|apologies|my\s+apologies|unfortunately)\b[^.!?\n]{0,80}?"
    r"\b(?:can(?:no|')?t|cannot|can\s+not|unable|not\s+able|won't|will\s+not)\b"
    r"|as\s+an?\s+(?:ai|artificial\s+intelligence|(?:large\s+)?language\s+model)\b"
    r"|(?:很|非常|十分)?(?:抱歉|对不起|不好意思)"
    r"|我(?:无法|不能|不可以|没法|没办法|不便|拒绝)"
    r"|作为(?:一个|一名)?\s*(?:ai|人工智能|语言模型|大语言模型)"
    r"|(?:很遗憾|遗憾的是)[^。！？\n]{0,30}?(?:无法|不能)",
    re.I,
)
_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
)
_WORD = re.compile(r"[^\W_]+")


def _strip_reasoning(text: str) -> str:
    """Return ``text`` without reasoning blocks (rule 2 of the module docstring)."""
    kept: list[str] = []
    depth, position, opened_at = 0, 0, 0
    for number, tag in enumerate(_REASONING_TAG.finditer(text)):
        if tag.group(1):  # a closing tag
            if depth:
                depth -= 1
                position = tag.end() if depth == 0 else position
            elif number == 0:  # its opening tag sat in the chat template
                position = tag.end()
            continue
        if depth == 0:
            kept.append(text[position : tag.start()])
            opened_at = tag.start()
        depth += 1
    if depth == 0:
        kept.append(text[position:])
    elif "".join(kept).strip():  # an unclosed tag after text: a mention, keep it
        kept.append(text[opened_at:])
    return "".join(kept)


def _clean(reply: str) -> str:
    return _PROMPT_TAG.sub("", _strip_reasoning(normalize_text(reply))).strip()


def _words(text: str, cap: int) -> float:
    """Return the number of words, a CJK character counting half; at most ``cap``.

    Counting stops at ``cap``: a long reply is never walked word by word.
    """
    cjk = sum(1 for _ in islice(_CJK.finditer(text), 2 * cap))
    if cjk >= 2 * cap:
        return cap
    words = sum(1 for _ in islice(_WORD.finditer(_CJK.sub(" ", text)), cap))
    return min(words + cjk / 2, cap)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _echo_share(text: str, transcript: Sequence[str], previous: str | None) -> float:
    """Return the share of ``text`` (minus previous-summary lines) echoing entries."""
    prior = set(_lines(previous or ""))
    own = [line for line in _lines(text) if line not in prior]
    total = sum(len(line) for line in own)
    if total == 0:
        return 0.0
    blocks: dict[str, list[list[str]]] = {}
    for entry in dict.fromkeys(transcript):
        block = _lines(entry)
        if block:
            blocks.setdefault(block[0], []).append(block)
    for candidates in blocks.values():
        candidates.sort(key=len, reverse=True)  # the longest entry that matches wins
    echoed, index = 0, 0
    while index < len(own):
        step = 1
        for block in blocks.get(own[index], ()):
            if own[index : index + len(block)] == block:
                echoed += sum(len(line) for line in block)
                step = len(block)
                break
        index += step
    return echoed / total


def _rejection(
    text: str,
    transcript: Sequence[str],
    previous: str | None,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
) -> Rejected | None:
    """Return why the cleaned ``text`` is no summary, before the echo check."""
    if not text:
        return Rejected("empty", "nothing is left after removing reasoning and tags")
    lead = text.lstrip(_LEAD).replace("\u2019", "'")
    size = f"{len(text)} chars"
    if _HTML_PAGE.match(lead):
        return Rejected("provider_error", f"{size} of an HTML page")
    if len(text) <= PROVIDER_ERROR_MAX_CHARS:
        if _ERROR_SHAPE.match(lead):
            return Rejected("provider_error", f"{size} shaped as an error message")
        if _ERROR_PHRASE.match(lead) and not _NAMES_A_ROLE.search(text):
            return Rejected("provider_error", f"{size} opening with an error phrase")
    if len(text) <= REFUSAL_MAX_CHARS and _REFUSAL.match(lead):
        return Rejected("refusal", f"{size} opening as a first-person refusal")
    words = _words(text, TOO_SHORT_MAX_WORDS)
    if words < TOO_SHORT_MAX_WORDS:  # only then count the input: it may be long
        tokens = count_tokens(text)
        given = count_tokens(normalize_text("\n".join([*transcript, previous or ""])))
        if tokens * TOO_SHORT_RATIO < min(given, budget_tokens):
            return Rejected("too_short", f"{tokens} tokens for {given} tokens of input")
    return None


def check_summary(
    reply: str,
    *,
    transcript: Sequence[str],
    previous: str | None,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    locale: Locale,
) -> Accepted | Rejected:
    """Return the reply as a summary to store, cut to its budget, or why it is none.

    Args:
        reply: the summarizer's raw text.
        transcript: the rendered entries it summarized (``render_transcript``).
        previous: the previous summary it was given, if any.
        budget_tokens: the most tokens an accepted summary may count.
        count_tokens: the summary model's token counter.
        locale: picks the truncation suffix.

    >>> check_summary("<think>hm</think>The user likes tea.", transcript=["User: tea"],
    ...     previous=None, budget_tokens=99, count_tokens=len, locale="en")
    Accepted(text='The user likes tea.', tokens=19, cut=False)
    >>> check_summary("I'm sorry, but I can't help with that.", transcript=[],
    ...     previous=None, budget_tokens=99, count_tokens=len, locale="en").reason
    'refusal'
    """
    text = _clean(reply)
    rejected = _rejection(text, transcript, previous, budget_tokens, count_tokens)
    if rejected is not None:
        return rejected
    share = _echo_share(text, transcript, previous)
    if share >= ECHO_SHARE:
        return Rejected("echo", f"{share:.0%} of the text repeats transcript entries")
    tokens = count_tokens(text)
    if tokens <= budget_tokens:
        return Accepted(text, tokens, cut=False)
    suffix = TRUNCATION_SUFFIXES[locale]
    kept = truncate_to_tokens(text, budget_tokens, count_tokens, suffix)
    if not kept[: len(kept) - len(suffix)].strip():  # "" or the suffix alone
        return Rejected("empty", f"nothing fits a budget of {budget_tokens} tokens")
    return Accepted(kept, count_tokens(kept), cut=True)
