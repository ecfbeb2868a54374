r"""Redundancy: the share of a summary spent saying again what it already said.

A summary's *clauses* are its lines, each cut at ``; `` (``；`` in Chinese). A bullet's
marker (``- ``) and its speaker's label (``user: ``, ``call web_search: ``,
``用户：``) are no part of a clause, and neither are a section's header
(``Facts:``), a line of one date (``[8 May 2023]``), the date opening a day's line
(``[8 May 2023] user: a; b | assistant: c``, its speakers parted by `` | ``) nor the
label of the pinned section: they are structure. A clause *repeats* when, once
case-folded, its spaces collapsed and each run of digits replaced by ``0``, it
equals an earlier clause of the same summary, and it holds a word besides its digits
(``#109`` after ``#298`` is another id, not a repeat); a pin is a value the engine
re-attached, never a repeat (``12 kg`` after ``15 kg`` in ``Pinned facts:``).

``redundancy`` is the share of the clauses' characters that are in repeating
clauses: 0 for a summary that says each thing once. It needs nothing but the summary's
text, so it judges any summarizer's output: the demo and both benchmarks
(``benchmarks/quality.py``, ``benchmarks/facts.py``) report it.

>>> redundancy("Goals:\n- user: Step 1, keep in budget; Step 2, keep in budget")
0.5
>>> redundancy("Facts:\n- user: Step 1-2, keep within budget; flights, hotel")
0.0
>>> redundancy("事实：\n- 用户：第1步要快；第2步要快")
0.5
>>> redundancy("Facts:\n- user: flew home\nPinned facts: 12 kg; 15 kg")
0.0
>>> redundancy("Facts:\n[8 May 2023] user: went camping | assistant: went camping")
0.5
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["clauses_of", "redundancy", "redundancy_of"]

_SEPARATOR = re.compile(r"; |；")
_BULLET = re.compile(r"^(?:[-*\u2022]\s+)")
_LABEL = re.compile(
    r"^(?:(?:user|assistant|system|用户|助手|系统)"
    r"|(?:call|tool|调用|工具) [\w.?-]{1,40}|Pinned facts|固定事实)(?:: |：)",
    re.IGNORECASE,
)
_HEADER = re.compile(r"^[^\s:：]{1,24}(?: [^\s:：]{1,24}){0,2}[:：]$")
_PINNED = re.compile(r"^(?:Pinned facts|固定事实)(?:: |：)")
_DATE_LINE = re.compile(r"^\[[^\[\]]{1,40}\]$")
_DAY_OPENING = re.compile(r"^\[[^\[\]]{1,40}\] ")
_DAY_PARTS = " | "
_DIGITS = re.compile(r"\d+")
_WORD = re.compile(r"[^\W\d_]")


def _clauses(summary: str) -> list[tuple[str, bool]]:
    """Return each clause of ``summary`` and whether it is a pin."""
    found: list[tuple[str, bool]] = []
    for raw in summary.splitlines():
        line = raw.strip()
        if not line or _HEADER.match(line) or _DATE_LINE.match(line):
            continue
        pinned = _PINNED.match(line) is not None
        day = _DAY_OPENING.match(line)
        for part in line[day.end() :].split(_DAY_PARTS) if day else [line]:
            said = _LABEL.sub("", _BULLET.sub("", part.strip()))
            found.extend(
                (c.strip(), pinned) for c in _SEPARATOR.split(said) if c.strip()
            )
    return found


def clauses_of(summary: str) -> list[str]:
    r"""Return the clauses of ``summary`` (module docstring), in order.

    >>> clauses_of("Facts:\n[8 May 2023]\n- user: a; b\nPinned facts: #1; #2")
    ['a', 'b', '#1', '#2']
    >>> clauses_of("Facts:\n[8 May 2023] user: a; b | assistant: c\n[9 May] user: d")
    ['a', 'b', 'c', 'd']
    """
    return [clause for clause, _ in _clauses(summary)]


def _masked(clause: str) -> str:
    return _DIGITS.sub("0", " ".join(clause.casefold().split()))


def redundancy_of(summaries: Iterable[str]) -> tuple[int, int]:
    """Return the characters in repeating clauses and in all clauses of ``summaries``.

    Each summary is measured on its own: a clause repeats an earlier clause of the
    same summary only.
    """
    repeated = total = 0
    for summary in summaries:
        seen: set[str] = set()
        for clause, pinned in _clauses(summary):
            total += len(clause)
            key = _masked(clause)
            if key in seen and _WORD.search(key) and not pinned:
                repeated += len(clause)
            seen.add(key)
    return repeated, total


def redundancy(summary: str | Sequence[str]) -> float:
    """Return the share of characters in repeating clauses (0.0 when there are none).

    ``summary``: one summary, or several, each measured on its own and their
    characters added up.
    """
    texts = [summary] if isinstance(summary, str) else summary
    repeated, total = redundancy_of(texts)
    return round(repeated / total, 4) if total else 0.0
