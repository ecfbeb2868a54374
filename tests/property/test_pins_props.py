"""Properties of pinned facts: within budget, stable, safe on hostile text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import extract_pins, pinned_section, with_pins
from memory_summary.testing.strategies import texts

IDS = st.from_regex(r"\A(?:ORD|TKT|INC)-[0-9]{2,6}\Z")


@given(
    ids=st.lists(IDS, min_size=1, max_size=30),
    noise=texts(60),
    budget=st.integers(1, 400),
)
def test_pins_never_exceed_the_budget_and_ids_are_found_in_hostile_text(
    ids, noise, budget
):
    transcript = [f"User: {noise} {identifier} {noise}" for identifier in ids]

    found = extract_pins(transcript)
    text = with_pins(
        "Summary.",
        transcript=transcript,
        previous=None,
        budget_tokens=budget,
        count_tokens=len,
        locale="en",
    )

    assert all(identifier in found for identifier in ids)
    assert len(text) <= max(budget, len("Summary."))


@given(ids=st.lists(IDS, min_size=1, max_size=10, unique=True))
def test_repeated_compressions_keep_every_pin_and_converge(ids):
    transcript = [f"User: order {identifier}" for identifier in ids]
    summary = "Generic summary."
    texts = []
    for _ in range(4):
        summary = with_pins(
            "Generic summary.",
            transcript=transcript if not texts else [],
            previous=summary,
            budget_tokens=10_000,
            count_tokens=len,
            locale="en",
        )
        texts.append(summary)

    assert pinned_section(texts[-1], "en")[1] == ids
    assert texts[1] == texts[2] == texts[3]


_PIECES = st.text(
    alphabet=st.sampled_from(list("abfXKZ0129-_.~/@\\:# ,$€kgMarch年月日T\n")),
    max_size=60,
) | st.text(max_size=60)


@given(_PIECES)
def test_the_pattern_narrowed_to_a_piece_finds_what_the_full_one_finds(piece):
    from memory_summary.domain.pins import _IDENTIFIER, _pattern_for

    def found(pattern):
        return [(m.start(), m.group()) for m in pattern.finditer(piece)]

    assert found(_pattern_for(piece)) == found(_IDENTIFIER)


def _pieces_by_flags(line: str) -> list[str]:
    """``scan_pieces`` as first written: a flag per word, every word visited."""
    from memory_summary.domain.pins import _TRIGGER, MAX_SCAN_CHARS, MAX_WORD_CHARS

    if _TRIGGER.search(line) is None:
        return []
    words = line.split()
    keep = [False] * (len(words) + 1)
    for index, word in enumerate(words):
        if _TRIGGER.search(word, 0, MAX_WORD_CHARS) is not None:
            keep[max(index - 1, 0)] = keep[index] = keep[index + 1] = True
    pieces: list[str] = []
    run: list[str] = []
    size = 0
    for index, word in enumerate(words):
        head = word[:MAX_WORD_CHARS]
        if run and (not keep[index] or size + len(head) > MAX_SCAN_CHARS):
            pieces.append(" ".join(run))
            run, size = [], 0
        if keep[index]:
            run.append(head)
            size += len(head) + 1
    if run:
        pieces.append(" ".join(run))
    return pieces


_WORDS = st.sampled_from(
    [
        "a",
        "bc",
        "7",
        "x/y",
        "#12",
        "q" * 300,
        "q" * 300 + "1",
        "订单",
        "订单٣",
        "a,",
        "¥",
    ]
)


@given(
    st.lists(_WORDS | st.text(max_size=4), max_size=40),
    st.sampled_from([" ", "  ", "\n", "\u3000"]),
)
def test_pieces_visit_only_kept_words_and_equal_the_flag_walk(words, space):
    from memory_summary.domain.pins import scan_pieces

    line = space.join(words)
    assert scan_pieces(line) == _pieces_by_flags(line)


_ENTRY_WORDS = st.sampled_from(
    ["a", "7", "12 kg", "ORD-2041", "x/y.py", "#4711", "Ada", "my name is", "q" * 300]
)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["User: ", "Assistant: ", "Tool result(search): "]),
            st.lists(_ENTRY_WORDS, max_size=30),
        ),
        max_size=6,
    )
)
def test_pins_read_from_pieces_as_they_come_are_those_of_every_piece(entries):
    """A reader that stops early (a tool result's one pin) finds the same pins."""
    from unittest import mock

    from memory_summary.domain import pins

    lines = [head + " ".join(words) for head, words in entries]
    eager = mock.patch.object(
        pins, "iter_pieces", lambda line: iter(_pieces_by_flags(line))
    )

    with eager:
        expected = extract_pins(lines)
    assert extract_pins(lines) == expected


def _pins_as_first_written(lines: list[str]) -> list[str]:
    """``extract_pins`` with every line's checks run in full, one after the other."""
    from memory_summary.domain import pins

    found: dict[str, str] = {}
    for line in lines:
        user = pins._USER_LINE.match(line) is not None
        if pins._TRIGGER.search(line) is None and not (
            user and pins._NAME_WORDS.search(line) is not None
        ):
            continue
        line = pins._DATED_ENTRY.sub(r"\1", line, count=1)
        most = (
            pins.MAX_PER_TOOL_RESULT
            if pins._TOOL_RESULT_LINE.match(line)
            else pins.MAX_PER_LINE
        )
        taken = 0
        for piece in _pieces_by_flags(line):
            for match in pins._IDENTIFIER.finditer(piece):
                pins._add(found, pins._clean(match.group()))
                taken += 1
                if taken >= most:
                    break
            if taken >= most:
                break
        if user and pins._NAME_WORDS.search(line) is not None:
            folded = line.casefold()
            for words, pattern in pins._INTRODUCED_NAMES:
                if any(word in folded for word in words):
                    for match in pattern.finditer(line):
                        name = pins._clean(match.group(1))
                        if name.split(" ")[0] not in pins._NOT_NAMES:
                            pins._add(found, name)
    return list(found.values())[: pins.MAX_PINS]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["User: ", "Assistant: ", "Tool result(search): ", ""]),
            st.sampled_from(["", "[8 May 2023] ", "[called 3 March] ", "[ORD-1 x] "]),
            st.lists(
                _ENTRY_WORDS | st.sampled_from(["call me Ada", "叫"]), max_size=12
            ),
        ),
        max_size=6,
    )
)
def test_pins_equal_those_of_every_check_run_in_full(entries):
    """The scan skips checks whose answer it knows; it finds the same pins."""
    lines = [head + dated + " ".join(words) for head, dated, words in entries]

    assert extract_pins(lines) == _pins_as_first_written(lines)


_NAME_TEXT = st.text(
    alphabet=st.sampled_from(
        list("nameNAMEcallCALL\u02bc\u0149\u212a\u017f叫名字我是 x")
    ),
    max_size=30,
) | st.text(max_size=30)


@given(_NAME_TEXT)
def test_the_name_filter_says_yes_wherever_the_name_words_occur(line):
    """``_may_name`` stands in for ``_NAME_WORDS``: it never misses a line it finds."""
    from memory_summary.domain import pins

    if pins._NAME_WORDS.search(line) is not None:
        assert pins._may_name(line)
    if not pins._may_name(line) and pins._TRIGGER.search(line) is None:
        assert extract_pins(["User: " + line]) == []


_SAMPLES = ("#4711", "ORD-12", "X7K9P2", "4XK9Q", "2026-03-03", "12 kg", "$5", "a@b.co")
_SAMPLES += ("C:\\x\\y", "3 March", "March 3", "2026年3月", "a/b.py", "~/x", "http://a")
_SAMPLES += ("12345678-1234-1234-1234-123456789abc", "-x/y.md", "../a", "x/y.md")
_SAMPLES += ("abcdef12-1234-1234-1234-123456789abc", "c:\\x\\y", "x.y+z@a.io")


_OPENERS = st.lists(
    st.sampled_from(
        [*"hxé٣+.~/\\:-_@#$€abf0129ACMZ年月日 ,\t", "Mar", "March ", *_SAMPLES]
    ),
    max_size=20,
).map("".join)


@given(_OPENERS)
def test_the_narrowed_pattern_opens_where_the_full_one_does(piece):
    """The lookahead of what the kinds open with passes no position a kind opens at."""
    from memory_summary.domain.pins import _IDENTIFIER, _pattern_for

    def found(pattern):
        return [(m.start(), m.group()) for m in pattern.finditer(piece)]

    assert found(_pattern_for(piece)) == found(_IDENTIFIER)


def test_the_narrowed_pattern_finds_each_kind_after_any_neighbour():
    """Each kind's sample, after and before a few neighbours, found as the full one."""
    from memory_summary.domain.pins import _IDENTIFIER, _pattern_for

    for sample in _SAMPLES:
        for before in ("", "x", "é", " ", "٣", "-", ".", "Z", "#", "/"):
            piece = f"{before}{sample}{before}"
            found = [
                (m.start(), m.group()) for m in _pattern_for(piece).finditer(piece)
            ]
            assert found == [
                (m.start(), m.group()) for m in _IDENTIFIER.finditer(piece)
            ]


_ASCII_WORDS = st.sampled_from(
    ["a", "7", "x/y", "#1", "$", "\x00", "a\x00b", "q" * 255 + "1", "q" * 256 + "1"]
)


@given(
    st.lists(_ASCII_WORDS | st.text(alphabet="ab1/ \x1c\x1f\t\x00", max_size=6)),
    st.sampled_from([" ", "\x1c", "\t\n", "\x0b"]),
)
def test_ascii_lines_give_the_pieces_of_the_flag_walk(words, space):
    """ASCII lines are marked as bytes: the same pieces, NUL and ASCII spaces too."""
    from memory_summary.domain.pins import scan_pieces

    line = space.join(words)
    assert scan_pieces(line) == _pieces_by_flags(line)
