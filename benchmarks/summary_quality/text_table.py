"""The aligned text tables the benchmarks print."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def render_table(rows: Sequence[Mapping[str, str]], *, indent: str = "  ") -> str:
    """Return ``rows`` (dicts with the same keys) as aligned text, each line indented.

    >>> print(render_table([{"kind": "date", "all": "1/2"}], indent=""))
    kind  all
    ----  ---
    date  1/2
    """
    keys = list(rows[0])
    widths = {k: max(len(k), *(len(row[k]) for row in rows)) for k in keys}
    lines = ["  ".join(k.ljust(widths[k]) for k in keys)]
    lines.append("  ".join("-" * widths[k] for k in keys))
    lines += ["  ".join(row[k].ljust(widths[k]) for k in keys) for row in rows]
    return "\n".join(indent + line.rstrip() for line in lines)
