"""A griffe extension for the API pages: doctest runs in docstrings render as code.

The docstrings carry ``>>>`` examples in their text (``python -m doctest`` style). Left
as they are, Markdown reads them as prose: ``x["name"]`` becomes a link reference and
``>>>`` a quote. This wraps each run of ``>>>``/``...`` lines and their output in a
``pycon`` fence, leaving the docstrings themselves as they are.
"""

from __future__ import annotations

from typing import Any

import griffe

PROMPTS = (">>> ", "... ")


def fence_doctests(text: str) -> str:
    """Return ``text`` with every doctest run wrapped in a fenced ``pycon`` block."""
    out: list[str] = []
    lines = text.split("\n")
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        if in_fence or not (stripped.startswith(PROMPTS) or stripped == ">>>"):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(stripped)]
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip():
            out.append(lines[i])
            i += 1
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fences the doctest runs of every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
