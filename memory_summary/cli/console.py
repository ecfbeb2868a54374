"""Where tables print, and the table of a session's history.

Stored text is untrusted: everything printed from a store goes through ``shown``
(``memory_summary.terminal_text``), which writes the characters a terminal would act
on as visible escapes, on a terminal and in a pipe alike.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from memory_summary.domain import Message, ToolCall
from memory_summary.terminal_text import shown

_PIPED_WIDTH = 4096  # columns of a table printed to a pipe or a file
PIPED_CONTENT_COLUMNS = 200  # a history row's content in a pipe, cut past it
_ELLIPSIS = "…"
# Where a cut may fall: after a space or a JSON delimiter, never inside a word, a
# number or an escape.
_CLEAN_BREAKS = frozenset(" ,;:)]}")
_MIN_KEPT = 0.6  # a clean cut keeps at least this share of the room, else a hard one


def table_console() -> Console:
    """Return the console tables print to: a pipe or file gets every column.

    On a terminal a table fits its width; elsewhere (``stats > usage.txt``) no
    terminal bounds the line, so columns are never cut to a guessed 80.
    """
    console = Console(soft_wrap=False, highlight=False, emoji=False, markup=False)
    if not console.is_terminal:
        console.width = _PIPED_WIDTH
    return console


def print_table(console: Console, table: Table) -> None:
    """Print ``table``; in a pipe or a file, without the padding after each row."""
    if console.is_terminal:
        console.print(table)
        return
    with console.capture() as captured:
        console.print(table)
    lines = captured.get().splitlines()
    print("\n".join(line.rstrip() for line in lines))


def clipped(text: str, columns: int) -> str:
    """Return ``text`` cut to ``columns`` terminal cells at a clean place, with "…".

    A cut falls after a space or a JSON delimiter when one is near the end, so a word,
    a number or a JSON string is not split in the middle; wide characters count two.

    >>> clipped('web_search({"query": "Airflow retries", "top": 10})', 36)
    'web_search({"query": "Airflow …'
    >>> clipped("short", 36)
    'short'
    """
    if cell_len(text) <= columns:
        return text
    room = columns - cell_len(_ELLIPSIS)
    kept: list[str] = []
    used = 0
    for char in text:
        used += cell_len(char)
        if used > room:
            break
        kept.append(char)
    cut = "".join(kept)
    clean = max((cut.rfind(mark) for mark in _CLEAN_BREAKS), default=-1) + 1
    if clean >= _MIN_KEPT * len(cut):
        cut = cut[:clean]
    return cut + _ELLIPSIS


def _call_text(call: ToolCall) -> str:
    """Return a tool call as ``name(arguments)``, the arguments' JSON on one line."""
    try:
        arguments = json.dumps(json.loads(call.arguments), ensure_ascii=False)
    except (ValueError, RecursionError):  # as the model sent it: not always JSON
        arguments = " ".join(call.arguments.split())
    return f"{call.name}({arguments})"


def history_table(messages: Sequence[Message], width: int | None) -> Table:
    """Return one row per message, the content cut at a clean place to fit.

    ``width`` is the terminal's (the content column fills what the id and role
    columns leave); None in a pipe, where content is cut past
    ``PIPED_CONTENT_COLUMNS``.
    """
    table = Table(
        title="active history", title_justify="left", box=None, padding=(0, 1)
    )
    id_width = max((len(str(m.id)) for m in messages), default=2)
    content_columns = (
        PIPED_CONTENT_COLUMNS if width is None else max(20, width - id_width - 9 - 6)
    )
    table.add_column("id", justify="right", no_wrap=True, width=id_width)
    table.add_column("role", no_wrap=True, width=9)
    table.add_column(
        "content", no_wrap=True, overflow="ellipsis", max_width=content_columns
    )
    for message in messages:
        text = " ".join(message.text.split())
        if message.tool_calls:
            text = ", ".join(_call_text(c) for c in message.tool_calls)
        table.add_row(
            str(message.id), shown(message.role), clipped(shown(text), content_columns)
        )
    return table
