"""CPU-heavy domain steps do linear work on any text, measured without a clock.

Pin extraction runs regular expressions over what users and tools wrote. A regex
over a long unbroken word can retry a quadratic number of positions, so the work is
bounded by construction instead: the identifier pattern only ever scans pieces of at
most ``MAX_SCAN_CHARS`` characters (constant work each, whatever they hold), and the
characters handed to every pattern together grow linearly with the text. Both are
counted here by recording each scan, over adversarial texts of size n and 8n.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import extract_pins
from memory_summary.domain import pins as pins_module

SCAN_LIMIT = getattr(pins_module, "MAX_SCAN_CHARS", 1024)
PREFIXES = ("User: ", "Assistant: ", "Tool result(lookup): ", "")
# Characters the identifier kinds are made of: runs of them are the hard cases.
HOSTILE = "aA1_-/.@#$€:\\, kgMarch年月日~\t"


class RecordingPattern:
    """A compiled pattern that records how many characters each scan was given."""

    def __init__(self, pattern: re.Pattern[str], scans: list[int]) -> None:
        self._pattern = pattern
        self._scans = scans

    def _record(self, string: str, pos: int = 0, endpos: int | None = None) -> None:
        end = len(string) if endpos is None else min(endpos, len(string))
        self._scans.append(max(end - pos, 0))

    def finditer(self, string: str, *args: int) -> Iterator[re.Match[str]]:
        self._record(string, *args)
        return self._pattern.finditer(string, *args)

    def search(self, string: str, *args: int) -> re.Match[str] | None:
        self._record(string, *args)
        return self._pattern.search(string, *args)

    def match(self, string: str, *args: int) -> re.Match[str] | None:
        self._record(string, *args)
        return self._pattern.match(string, *args)


@contextlib.contextmanager
def recorded() -> Iterator[tuple[list[int], list[int]]]:
    """Yield (identifier scans, every other pattern's scans) while pins are found."""
    identifier: list[int] = []
    others: list[int] = []
    saved = {
        name: getattr(pins_module, name)
        for name in ("_IDENTIFIER", "_TRIGGER", "_USER_LINE", "_TOOL_RESULT_LINE")
    }
    names = pins_module._INTRODUCED_NAMES
    try:
        pins_module._IDENTIFIER = RecordingPattern(saved["_IDENTIFIER"], identifier)
        for name in ("_TRIGGER", "_USER_LINE", "_TOOL_RESULT_LINE"):
            setattr(pins_module, name, RecordingPattern(saved[name], others))
        pins_module._INTRODUCED_NAMES = tuple(
            (words, RecordingPattern(pattern, others)) for words, pattern in names
        )
        yield identifier, others
    finally:
        for name, pattern in saved.items():
            setattr(pins_module, name, pattern)
        pins_module._INTRODUCED_NAMES = names


@st.composite
def adversarial_lines(draw: st.DrawFn) -> tuple[str, str]:
    """Return (prefix, unit): a line is the prefix then the unit repeated."""
    prefix = draw(st.sampled_from(PREFIXES))
    unit = draw(st.text(alphabet=HOSTILE, min_size=1, max_size=6))
    if draw(st.booleans()):
        unit = unit.replace(" ", "").replace("\t", "") or "a"  # one unbroken word
    return prefix, unit


def line_of(prefix: str, unit: str, size: int) -> str:
    return prefix + unit * (size // len(unit) + 1)


@given(line=adversarial_lines(), size=st.integers(2_000, 6_000))
def test_pin_extraction_scans_bounded_pieces_with_linear_total_work(line, size):
    prefix, unit = line
    small, large = line_of(prefix, unit, size), line_of(prefix, unit, 8 * size)

    with recorded() as (identifier, others):
        extract_pins([small])
        work_small = sum(identifier) + sum(others)
        identifier.clear()
        others.clear()
        extract_pins([large])
        work_large = sum(identifier) + sum(others)

    assert all(scan <= SCAN_LIMIT for scan in identifier), max(identifier)
    assert sum(identifier) <= len(large)
    assert work_large <= 8 * len(large)  # a few linear passes at most
    assert work_large <= 8 * (work_small + 1) + 8 * SCAN_LIMIT  # grows like n


def test_a_pasted_megabyte_blob_still_gives_the_identifiers_around_it():
    blob = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0MTIzNDU2Nzg5Ky8=" * 20_000
    line = f"User: order ORD-2041 weighs 12 kg, attached {blob} then ticket TCK-77."

    assert extract_pins([line]) == ["ORD-2041", "12 kg", "TCK-77"]
