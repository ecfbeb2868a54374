"""The fenced python blocks of the README and of every page under docs/.

A block runs as written in a fresh interpreter (``tests/e2e/test_docs_examples.py``)
unless an HTML comment on the line before it says otherwise:

- ``<!-- run-by: test_name -->``: the named test of ``tests/e2e/`` runs it, with the
  server, key or checks it needs (the block is also compiled here);
- ``<!-- not-run: reason -->``: a fragment or a file of the reader's own project; it
  is compiled, and its imports of ``memory_summary`` must resolve.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(
    r"(?:<!--\s*(?P<marker>run-by|not-run):\s*(?P<note>.*?)\s*-->\n)?"
    r"^```python\n(?P<code>.*?)^```",
    re.DOTALL | re.MULTILINE,
)


@dataclass(frozen=True)
class Block:
    """One fenced python block and where it is."""

    page: Path
    line: int
    code: str
    marker: str | None  # "run-by", "not-run" or None (run here)
    note: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks() -> list[Block]:
    """Return every python block, the README's first, then the docs pages in order."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        found.extend(
            Block(
                page,
                text.count("\n", 0, match.start("code")),
                match["code"],
                match["marker"],
                match["note"] or "",
            )
            for match in BLOCK.finditer(text)
        )
    return found
