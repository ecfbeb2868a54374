"""What the fact-retention benchmark plants.

The kinds of fact, a planted fact, and a generated conversation.
"""

from __future__ import annotations

from typing import Literal, get_args

import attrs

from memory_summary.domain import Message

from .matching import count_key, normalize_for_match

Locale = Literal["en", "zh"]
StandardKind = Literal[
    "person",
    "place",
    "quantity",
    "date",
    "id",
    "path",
    "decision",
    "constraint",
    "tool_outcome",
]
"""The kinds the standard generator plants."""
HardKind = Literal["assistant_fact", "corrected", "long_message", "tool_detail"]
"""The kinds only the harder generator (``summary_quality.hard_facts``) plants."""
FactKind = StandardKind | HardKind
KINDS: tuple[StandardKind, ...] = get_args(StandardKind)
HARD_KINDS: tuple[HardKind, ...] = get_args(HardKind)
LOCALES: tuple[Locale, ...] = ("en", "zh")
EARLY_MESSAGES = 35  # every fact is planted among the first this many messages
TARGET_MESSAGES = 120  # a conversation ends with the turn that reaches this many
THRESHOLD, KEEP_RECENT = 30, 10
CUT_CHARS = 200  # the transcript's cut of a tool result: facts sit before it


@attrs.frozen
class PlantedFact:
    """A fact planted in a conversation.

    Attributes:
        kind: what sort of fact it is (``KINDS``).
        keys: what must be found for it to count: every key, each in one of its forms
            (the first form is the canonical one).
        message_index: the position of the one message that states it.
    """

    kind: FactKind
    keys: tuple[tuple[str, ...], ...]
    message_index: int = -1

    @property
    def label(self) -> str:
        """Return the canonical key(s), for reports."""
        return " + ".join(forms[0] for forms in self.keys)

    def is_found_in(self, text: str) -> bool:
        """Tell whether ``text`` holds every key of the fact."""
        text = normalize_for_match(text)
        return all(count_key(text, forms, normalized=True) for forms in self.keys)


def message_text(message: Message) -> str:
    """Return what a message says: its content and its tool calls' arguments."""
    return "\n".join([message.text, *(c.arguments for c in message.tool_calls)])


@attrs.frozen
class FactConversation:
    """A generated conversation: its turns (message tuples) and the facts it plants."""

    locale: Locale
    index: int
    turns: tuple[tuple[Message, ...], ...]
    facts: tuple[PlantedFact, ...]

    @property
    def messages(self) -> list[Message]:
        """Return every message in order."""
        return [message for turn in self.turns for message in turn]


@attrs.frozen
class Planting:
    """A planted fact, the turn that states it and which message of the turn."""

    fact: PlantedFact
    turn: tuple[Message, ...]
    carrier: int  # which message of the turn states it
