"""``shown``, ``json_shown``: nothing a terminal acts on survives, the rest is kept."""

from __future__ import annotations

import json
import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.terminal_text import json_shown, shown

_ESCAPE = re.compile(r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}|\\U[0-9a-f]{8}")


def acts_on_terminal(char: str) -> bool:
    """Tell whether a terminal acts on ``char`` or shows the text around it changed.

    Controls (C0, DEL, C1), format characters (bidi, zero-width, tags) but ZWNJ and
    ZWJ, line and paragraph separators, lone surrogates.
    """
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs") and (
        char not in "\u200c\u200d"
    )


@given(st.text())
def test_shown_leaves_nothing_a_terminal_acts_on_and_keeps_the_rest(text):
    out = shown(text)

    assert not any(acts_on_terminal(c) for c in out)
    kept = "".join(c for c in text if not acts_on_terminal(c))
    assert _ESCAPE.sub("", out) == _ESCAPE.sub("", kept)  # only escapes were added


@given(st.text(alphabet=st.characters(codec="utf-8")))
def test_text_with_nothing_acting_is_shown_as_it_is(text):
    clean = "".join(c for c in text if not acts_on_terminal(c))

    assert shown(clean) == clean


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3)
        ),
        max_leaves=8,
    ),
    st.sampled_from([None, 2]),
)
def test_json_shown_parses_to_the_same_values_with_nothing_acting(data, indent):
    out = json_shown(data, indent=indent)

    assert json.loads(out) == data
    assert not any(acts_on_terminal(c) for c in out if c != "\n")
