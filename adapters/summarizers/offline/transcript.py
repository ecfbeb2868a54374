"""The offline summarizer's reading of a request: its sections and transcript entries.

``domain.prompt`` tags the request (``<previous_summary>``, ``<conversation>``, the task
state); ``domain.render`` labels each entry (``ENTRY_LABEL``).
"""

from __future__ import annotations

from collections.abc import Iterator

from memory_summary.domain.config import Locale
from memory_summary.domain.prompt import CONVERSATION_TAG, PREVIOUS_TAG, TASK_STATE_TAG
from memory_summary.domain.render import ENTRY_LABEL, LABEL_ROLES

from .salience import Role


def sections_of(request: str) -> tuple[str, str]:
    """Return the previous summary and the conversation of a request.

    The first ``<previous_summary>`` opening the request and the last
    ``</conversation>`` close them: tags quoted inside messages stay message text.
    """
    previous, rest = "", request
    opening = f"<{PREVIOUS_TAG}>\n"
    closing = f"\n</{PREVIOUS_TAG}>\n\n<{CONVERSATION_TAG}>\n"
    if request.startswith(opening) and closing in request:
        previous, _, rest = request[len(opening) :].partition(closing)
        rest = f"<{CONVERSATION_TAG}>\n" + rest
    opening, closing = f"<{CONVERSATION_TAG}>\n", f"\n</{CONVERSATION_TAG}>"
    if not rest.startswith(opening) or closing not in rest:
        return previous, rest  # not our request format: extract from all of it
    body = rest[len(opening) :]
    state = f"{closing}\n\n<{TASK_STATE_TAG}>\n"
    end = body.rfind(state) if state in body else body.rfind(closing)
    return previous, body[:end]


def entries(
    conversation: str,
) -> Iterator[tuple[Role | None, str, str, Locale | None]]:
    """Yield each transcript entry: role, tool name, body, and its labels' locale."""
    role: Role | None = None
    locale: Locale | None = None
    tool, lines = "", list[str]()
    for raw in conversation.splitlines():
        match = ENTRY_LABEL.match(raw)
        if match is None:
            lines.append(raw)
            continue
        if lines:
            yield role, tool, "\n".join(lines), locale
        label = match.group("speaker") or match.group("call") or match.group("result")
        locale = "en" if label.isascii() else "zh"
        body = raw[match.end() :]
        if match.group("speaker"):
            role, tool = LABEL_ROLES[label], ""
        elif match.group("call"):
            role, tool = "call", match.group("name")
            body = body[:-1] if body.endswith(")") else body
        else:
            role, tool = "tool", match.group("tool")
        lines = [body]
    if lines:
        yield role, tool, "\n".join(lines), locale
