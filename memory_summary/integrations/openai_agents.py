"""The OpenAI Agents SDK's ``Session`` over a ``SummaryEngine`` (extra openai-agents).

``SummarySession`` keeps a run's items in the engine's store, one stored ``Message``
per SDK item, so the engine folds old items into its summary like any chat history:

- a ``message`` item becomes a message of its role (``input_text``/``output_text``
  parts read as text, images and files as parts the summarizer sees as placeholders);
- a tool call (``function_call``, and every other ``*_call`` item with a ``call_id``)
  becomes an assistant message calling that tool, and its output (``*_call_output``)
  a tool message answering it, so a compression never separates a call from its
  output;
- any other item (``reasoning``, hosted tool calls such as ``web_search_call``,
  ``item_reference``...) becomes a ``system`` message of kind ``openai-agents-item``:
  the summarizer never reads it, and a compression archives it with the turns
  around it.

A ``reasoning`` item and the output items after it come from one model response:
they are one group for a compression (``MODEL_RESPONSE``), folded or kept together,
so ``get_items`` never returns a function call without its reasoning item. A batch
of items is saved all or nothing (``add_items``).

Every item is also kept verbatim in its message's metadata, so ``get_items`` returns
what ``add_items`` got (a message's text is kept once, in ``content``, normalized like
every message text: no NUL, no lone surrogates). A
message the host saved in OpenAI chat format (``Message.from_openai``) reads back as
the equivalent items.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

try:
    from agents import FunctionTool
    from agents.memory import SessionSettings
    from agents.tool_context import ToolContext
except ImportError as exc:  # the extra is missing
    raise ImportError(
        "memory_summary.integrations.openai_agents needs the OpenAI Agents SDK; "
        "install it with: pip install 'memory-summary[openai-agents]'"
    ) from exc

from memory_summary.aio import AsyncSummaryEngine
from memory_summary.batch import save_batch
from memory_summary.domain import (
    Message,
    PoppingStore,
    ToolCall,
    mask_tool_results,
)
from memory_summary.domain.capabilities import missing_members
from memory_summary.engine import SummaryEngine

# The item conversion stays importable from here, where it was before it moved.
from memory_summary.response_items import (
    ITEM_KIND,
    Item,
    batch_messages,
    items_of,
    summary_item,
)
from memory_summary.response_items import item_message as item_message

if TYPE_CHECKING:
    from agents import TResponseInputItem

__all__ = ["ITEM_KIND", "SummarySession", "recall_function_tools"]


class SummarySession:
    """An Agents SDK session whose history a ``SummaryEngine`` keeps in its window.

    Pass it to ``Runner.run(agent, input, session=SummarySession(sid, engine))``.
    ``get_items()`` returns the injected summary (a ``system`` message item) and then
    the active items; ``add_items`` stores items and reports the turn
    (``engine.turn_after``), which compresses in the background once the session
    reaches the threshold; ``pop_item`` takes back the newest active item;
    ``clear_session`` forgets the session (``engine.forget``: items, archive and
    summary). Store calls run in a worker thread, never on the event loop.

    With ``mask_tool_results_after`` set, ``get_items()`` returns old tool outputs as
    the stubs ``assemble`` sends (the store keeps them), counting the run's coming
    input as a user turn (the SDK reads the session before adding it);
    ``recall_tools()`` gives the agent the tools to read them back.

    ``get_items(limit=n)`` returns the newest ``n`` stored items without the summary:
    the SDK reads a session's tail this way to check its own writes. Leave
    ``session_settings.limit`` unset: the engine bounds the history, and a limit
    would drop the summary from the model's input.

    Args:
        session_id: the engine's session id.
        engine: a ``SummaryEngine`` or ``AsyncSummaryEngine``; its store must offer
            ``pop_message`` (every store this library ships does).
        session_settings: the SDK's settings (``limit``; see above).

    Raises:
        TypeError: the engine's store has no ``pop_message``.

    Example:
        >>> from memory_summary import SummaryEngine
        >>> from memory_summary.adapters import InMemoryStore
        >>> with SummaryEngine(InMemoryStore()) as engine:
        ...     session = SummarySession("alice", engine)
        ...     asyncio.run(session.add_items([{"role": "user", "content": "hi"}]))
        ...     asyncio.run(session.get_items())
        [{'role': 'user', 'content': 'hi'}]
    """

    def __init__(
        self,
        session_id: str,
        engine: SummaryEngine | AsyncSummaryEngine,
        *,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.engine = (
            engine.engine if isinstance(engine, AsyncSummaryEngine) else engine
        )
        self.session_settings = session_settings
        store = self.engine.memory
        missing = missing_members(store, PoppingStore)
        if missing:
            raise TypeError(
                f"memory store {type(store).__name__} lacks {', '.join(missing)}, "
                "which SummarySession.pop_item needs (see PoppingStore)"
            )
        self._store = cast(PoppingStore, store)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the summary item and the active items; see the class docstring."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None:
            if limit <= 0:
                return []
            tail = await asyncio.to_thread(
                self._store.get_history, self.session_id, limit
            )
            return cast("list[TResponseInputItem]", items_of(tail)[-limit:])
        history, prompt = await asyncio.to_thread(self._read)
        head: list[Item] = [] if prompt is None else [summary_item(prompt)]
        config = self.engine.config
        if config.mask_tool_results_after is not None:  # as ``assemble`` sends them
            # The SDK reads the session before it adds the run's input: that input
            # is the next user turn (the empty user message below stands for it).
            history = mask_tool_results(
                [*history, Message("user", "")],
                config.mask_tool_results_after,
                locale=config.locale,
            )[:-1]
        return cast("list[TResponseInputItem]", head + items_of(history))

    def _read(self) -> tuple[list[Message], str | None]:
        return (
            self._store.get_history(self.session_id),
            self.engine.build_prompt(self.session_id),
        )

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store ``items`` in order, all or nothing, then report the turn.

        The batch is saved at once (``save_batch``): an item the store refuses
        raises and leaves none of them saved, and two calls at once never
        interleave their items. The turn may compress in the background. A store
        without ``save_messages`` that fails midway raises ``PartiallySaved``,
        which lists the items saved and the rest.
        """
        messages = batch_messages(items)  # all checked before any save
        await asyncio.to_thread(save_batch, self._store, self.session_id, messages)
        self.engine.turn_after(self.session_id)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the newest active item and return it; None when none is active.

        Items already folded into the summary cannot be taken back. A message the
        host saved in chat format that reads as several items (an assistant text
        with tool calls) is removed whole; its last item is returned.
        """
        message = await asyncio.to_thread(self._store.pop_message, self.session_id)
        if message is None:
            return None
        return cast("TResponseInputItem", items_of([message])[-1])

    async def clear_session(self) -> None:
        """Forget the session: its items, archive and summary (``engine.forget``)."""
        await asyncio.to_thread(self.engine.forget, self.session_id)

    def recall_tools(self) -> list[FunctionTool]:
        """Return the recall tools bound to this session (``recall_function_tools``)."""
        return recall_function_tools(self.session_id, self.engine)


def recall_function_tools(
    session_id: str, engine: SummaryEngine | AsyncSummaryEngine
) -> list[FunctionTool]:
    """Return the engine's recall tools as the SDK's ``FunctionTool``s, for a session.

    Give them to the agent (``Agent(..., tools=[*yours, *session.recall_tools()])``).
    Each call runs ``engine.call_recall_tool`` in a worker thread; a bad argument
    comes back to the model as the tool's output saying what was wrong.
    """
    sync = engine.engine if isinstance(engine, AsyncSummaryEngine) else engine

    def invoker(name: str) -> Any:
        async def invoke(context: ToolContext[Any], arguments: str) -> str:
            call_id = getattr(context, "tool_call_id", None) or "agents"
            call = ToolCall(call_id, name, arguments)
            message = await asyncio.to_thread(sync.call_recall_tool, session_id, call)
            return message.text

        return invoke

    tools = []
    for definition in sync.recall_tools():
        function = cast("dict[str, Any]", definition["function"])
        tools.append(
            FunctionTool(
                name=function["name"],
                description=function["description"],
                params_json_schema=function["parameters"],
                on_invoke_tool=invoker(function["name"]),
                strict_json_schema=False,  # optional arguments have defaults
            )
        )
    return tools
