"""The host's instructions in a summary request, and the facts that name their terms.

``summary_request`` appends the host's instructions as the request's last section; a
fact naming one of their terms scores ``INSTRUCTED_BONUS`` more.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from memory_summary.domain.prompt import INSTRUCTIONS_TAG

from .fitting import HIGH_SCORE, Fact

INSTRUCTED_BONUS = HIGH_SCORE
"""What naming a term of the host's instructions adds to a fact's score."""
CJK = re.compile(r"[\u4e00-\u9fff]")
_INSTRUCTIONS_OPEN = f"\n\n<{INSTRUCTIONS_TAG}>\n"
_INSTRUCTIONS_CLOSE = f"\n</{INSTRUCTIONS_TAG}>"
_TERM = re.compile(r"[^\W\d_]{3,}|\d[\w.-]*|[\u4e00-\u9fff]{2,}")
_NOT_TERMS = frozenset(
    """keep keeps every all any each focus focused focusing include mention mentions
    summary summaries summarize make sure please always never the and for with about
    only retain preserve remember note track list everything important details detail
    information info especially anything things stuff what that this those these
    from into when where which who how not don't should must also more most""".split()  # noqa: SIM905
)
_ZH_NOT_TERMS = re.compile(
    r"保留|所有|全部|每个|重点|关注|记住|摘要|总结|请|务必|一定|的|和|与"
)


def instructions_of(request: str) -> tuple[str, str]:
    """Return the request without its host instructions section, and the instructions.

    ``summary_request`` puts the section last; a section quoted anywhere else is
    text (its tags were disarmed).
    """
    if not request.endswith(_INSTRUCTIONS_CLOSE) or _INSTRUCTIONS_OPEN not in request:
        return request, ""
    at = request.rfind(_INSTRUCTIONS_OPEN)
    body = request[at + len(_INSTRUCTIONS_OPEN) : -len(_INSTRUCTIONS_CLOSE)]
    return request[:at], body


def instruction_terms(instructions: str) -> frozenset[str]:
    """Return the terms of the host's instructions a fact can name (case-folded).

    >>> sorted(instruction_terms("Keep every order number and the Berlin office."))
    ['berlin', 'number', 'office', 'order']
    """
    text = _ZH_NOT_TERMS.sub(" ", instructions.casefold())
    return frozenset(t for t in _TERM.findall(text) if t not in _NOT_TERMS)


def instructed(facts: Sequence[Fact], instructions: str) -> list[Fact]:
    """Return ``facts``, those naming a term of the instructions ranked higher.

    A fact names a Latin term when one of its words starts with it ("order" in
    "orders"); a Chinese term anywhere in it.
    """
    terms = instruction_terms(instructions)
    if not terms:
        return list(facts)
    latin = [t for t in terms if not CJK.match(t)]
    cjk = [t for t in terms if CJK.match(t)]
    pattern = re.compile(
        "|".join([*(rf"(?<!\w){re.escape(t)}" for t in latin), *map(re.escape, cjk)])
    )
    return [
        attrs.evolve(
            fact,
            salience=attrs.evolve(
                fact.salience, score=fact.salience.score + INSTRUCTED_BONUS
            ),
        )
        if pattern.search(fact.text.casefold())
        else fact
        for fact in facts
    ]
