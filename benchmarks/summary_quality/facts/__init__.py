"""Fact retention: how many facts stated early in a conversation survive summarizing.

``generate_conversation`` builds a deterministic English or Chinese conversation of
about 120 messages (chatter, tool calls with long results) whose first 35 messages plant
facts of nine kinds (``KINDS``), each stated exactly once and never again.
``run_facts`` drives conversations through the real engine (``SummaryEngine`` on an
``InMemoryStore``, threshold 30 and keep_recent 10: at least five compressions each)
and scores the final injected summary (``build_prompt``): a fact is retained when every
one of its keys is found there. By then the facts' messages are all archived.

Matching rules (``normalize_for_match``, ``count_key``): lenient about spelling, never
about the value.

- Both texts are NFKC-normalized and case-folded (full-width letters read as ASCII);
  hyphens and dashes read as spaces; runs of white space as one space; white space next
  to a CJK character is dropped (``3 月`` = ``3月``), and so is a comma between digit
  groups (``4,870`` = ``4870``). Where a key's digits meet a Latin letter, a currency
  sign or ``%``, a space is optional (``4870 kg`` = ``4870kg``, ``€ 90`` = ``€90``).
- A key has a few accepted forms: a date in ISO, English or Chinese notation, a unit
  spelled out or abbreviated, a URL with or without its scheme. Nothing else counts: a
  paraphrase, a rounded number, a first name alone, a partial id.
- A key edged by a Latin letter or a digit matches only at a boundary: ``ORD-4821`` is
  not found in ``ORD-48213``, nor ``1.08`` in ``21.08`` or ``1.083``. A CJK edge matches
  anywhere (Chinese has no word boundaries).
- A fact with several keys (a decision and its reason) needs all of them.

Modules: ``planted`` (the kinds, ``PlantedFact``, ``FactConversation``), ``phrases``
(what the conversations are written from), ``planting`` and ``generator`` (the
conversations), ``matching`` (the rules above), ``run`` (through the engine) and
``report``.
"""

from __future__ import annotations

from summary_quality.text_table import render_table

from .generator import generate_conversation, misplaced_facts
from .matching import count_key, normalize_for_match
from .phrases import MONTHS, PLACES
from .planted import (
    CUT_CHARS,
    EARLY_MESSAGES,
    HARD_KINDS,
    KEEP_RECENT,
    KINDS,
    LOCALES,
    TARGET_MESSAGES,
    THRESHOLD,
    FactConversation,
    FactKind,
    Locale,
    PlantedFact,
    message_text,
)
from .report import ConversationResult, FactsReport, table_rows
from .run import WAIT_IDLE_S, run_facts

__all__ = [
    "CUT_CHARS",
    "EARLY_MESSAGES",
    "HARD_KINDS",
    "KEEP_RECENT",
    "KINDS",
    "LOCALES",
    "MONTHS",
    "PLACES",
    "TARGET_MESSAGES",
    "THRESHOLD",
    "WAIT_IDLE_S",
    "ConversationResult",
    "FactConversation",
    "FactKind",
    "FactsReport",
    "Locale",
    "PlantedFact",
    "count_key",
    "generate_conversation",
    "message_text",
    "misplaced_facts",
    "normalize_for_match",
    "render_table",
    "run_facts",
    "table_rows",
]
