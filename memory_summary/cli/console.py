"""Where tables print, and the table of a session's history."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from memory_summary.domain import Message

_PIPED_WIDTH = 4096  # columns of a table printed to a pipe or a file


def table_console() -> Console:
    """Return the console tables print to: a pipe or file gets every column.

    On a terminal a table fits its width; elsewhere (``stats > usage.txt``) no
    terminal bounds the line, so columns are never cut to a guessed 80.
    """
    console = Console(soft_wrap=False, highlight=False, emoji=False, markup=False)
    if not console.is_terminal:
        console.width = _PIPED_WIDTH
    return console


def history_table(messages: Sequence[Message], width: int) -> Table:
    """Return one row per message, the content cut to fit ``width`` columns."""
    table = Table(
        title="active history", title_justify="left", box=None, padding=(0, 1)
    )
    id_width = max((len(str(m.id)) for m in messages), default=2)
    content_width = max(20, width - id_width - 9 - 6)
    table.add_column("id", justify="right", no_wrap=True, width=id_width)
    table.add_column("role", no_wrap=True, width=9)
    table.add_column(
        "content", no_wrap=True, overflow="ellipsis", max_width=content_width
    )
    for message in messages:
        text = " ".join(message.text.split())
        if message.tool_calls:
            text = ", ".join(
                f"{c.name}({c.arguments[:40]})" for c in message.tool_calls
            )
        table.add_row(str(message.id), message.role, text[:200])
    return table
