"""A LangChain v1 agent middleware over a ``SummaryEngine`` (extra ``langchain``).

``SummaryMiddleware`` keeps an agent's conversation in the engine's store and the
model's input inside its context window, as ``SummarizationMiddleware`` does, but
with this library's summaries, fenced compressions and stores:

- ``before_model`` saves the state's new messages (converted through the OpenAI chat
  format, ``Message.from_openai``) and removes from the state the messages a
  compression archived, so a checkpointed state stays as short as the history;
- ``wrap_model_call`` sends the model the summary (appended to the system message)
  plus the active history: the state's messages, preceded by stored ones the state
  lacks (an agent run without a checkpointer still sees earlier turns);
- ``after_model`` saves the model's reply and reports the turn
  (``engine.turn_after``), which compresses in the background at the threshold.

With ``mask_tool_results_after`` set, the model gets old tool results as the stubs
``assemble`` sends; ``recall_tools(engine)`` gives the model the recall tools.

Messages keep their LangChain ids in the store (metadata ``langchain_id``); what the
OpenAI chat format cannot carry (``additional_kwargs``, ``response_metadata``) is not
stored.

Instructions are context, not history: a ``SystemMessage`` (or a developer message)
in the agent's messages is never stored, folded or removed from the state, so the
model sees it on every call; it lasts as long as the state does (a checkpointer
keeps it across runs, as it keeps the agent's other messages).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ModelRequest,
        ModelResponse,
    )
    from langchain_core.callbacks import CallbackManagerForToolRun
    from langchain_core.messages import (
        AnyMessage,
        BaseMessage,
        RemoveMessage,
        SystemMessage,
        convert_to_messages,
        convert_to_openai_messages,
    )
    from langchain_core.tools import BaseTool
    from langgraph.config import get_config
    from langgraph.runtime import Runtime
except ImportError as exc:  # the extra is missing
    raise ImportError(
        "memory_summary.integrations.langchain needs LangChain v1; install it "
        "with: pip install 'memory-summary[langchain]'"
    ) from exc

import attrs

from memory_summary.aio import AsyncSummaryEngine
from memory_summary.batch import save_batch
from memory_summary.domain import Message, ToolCall, mask_tool_results
from memory_summary.engine import SummaryEngine

__all__ = ["LANGCHAIN_ID", "RecallTool", "SummaryMiddleware", "recall_tools"]

LANGCHAIN_ID = "langchain_id"
"""Metadata key of a stored message: the id of the LangChain message it came from."""

ModelHandler = Callable[[ModelRequest[Any]], ModelResponse[Any]]
AsyncModelHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]


class SummaryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Keeps a LangChain agent's history in a ``SummaryEngine`` store, summarized.

    Add it to ``create_agent(model, tools, middleware=[SummaryMiddleware(engine)])``.
    The session is ``session_id`` when given, else the run's ``thread_id``
    (``config={"configurable": {"thread_id": ...}}``). See the module docstring for
    what each hook does.

    Args:
        engine: a ``SummaryEngine`` or ``AsyncSummaryEngine``.
        session_id: one fixed session for every run; None: the run's thread id.

    Raises:
        ValueError: (at a model call) no ``session_id`` and the run has no thread id.

    Example:
        >>> from memory_summary import SummaryEngine
        >>> from memory_summary.adapters import InMemoryStore
        >>> with SummaryEngine(InMemoryStore()) as engine:
        ...     middleware = SummaryMiddleware(engine)
        >>> middleware.name
        'SummaryMiddleware'
    """

    def __init__(
        self,
        engine: SummaryEngine | AsyncSummaryEngine,
        *,
        session_id: str | None = None,
    ) -> None:
        super().__init__()
        self.engine = (
            engine.engine if isinstance(engine, AsyncSummaryEngine) else engine
        )
        self.session_id = session_id

    # -- the hooks

    def before_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Save the state's new messages; drop the archived ones from the state."""
        return self._sync(state["messages"], self._session(runtime))

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Save the state's new messages; drop the archived ones from the state."""
        sid = self._session(runtime)
        return await asyncio.to_thread(self._sync, state["messages"], sid)

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: ModelHandler
    ) -> ModelResponse[Any]:
        """Call the model with the summary and the active history."""
        return handler(self._request(request))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: AsyncModelHandler
    ) -> ModelResponse[Any]:
        """Call the model with the summary and the active history."""
        return await handler(await asyncio.to_thread(self._request, request))

    def after_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Save the model's reply and report the turn (it may compress)."""
        sid = self._session(runtime)
        self._sync(state["messages"], sid)
        self.engine.turn_after(sid)
        return None

    async def aafter_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Save the model's reply and report the turn (it may compress)."""
        sid = self._session(runtime)
        await asyncio.to_thread(self._sync, state["messages"], sid)
        self.engine.turn_after(sid)
        return None

    # -- the work (store I/O: run in a worker thread by the async hooks)

    def _session(self, runtime: Runtime[Any] | None) -> str:
        if self.session_id is not None:
            return self.session_id
        thread_id = _thread_id(runtime)
        if thread_id is None:
            raise ValueError(
                "SummaryMiddleware needs a session: pass session_id=... or run the "
                'agent with config={"configurable": {"thread_id": ...}}'
            )
        return thread_id

    def _sync(self, messages: Sequence[AnyMessage], sid: str) -> dict[str, Any] | None:
        """Save messages the store lacks; return a state update removing archived ones.

        Messages up to the last one the active history holds are known; those after
        it are new. Known ones the active history no longer holds were archived.
        """
        store = self.engine.memory
        active = {m.metadata.get(LANGCHAIN_ID) for m in store.get_history(sid)} - {None}
        last = max((i for i, m in enumerate(messages) if m.id in active), default=None)
        if last is None:
            new = [m for m in messages if m.id not in active]
            archived: list[AnyMessage] = []
        else:
            new = list(messages[last + 1 :])
            archived = [m for m in messages[:last] if m.id not in active]
        # Instructions are context: never stored, so never folded or removed.
        history = [m for m in new if not is_instruction(m)]
        archived = [m for m in archived if not is_instruction(m)]
        if history:
            save_batch(store, sid, [stored_message(m) for m in history])
        if not archived:
            return None
        return {"messages": [RemoveMessage(id=m.id) for m in archived if m.id]}

    def _request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        sid = self._session(request.runtime)
        history = self.engine.memory.get_history(sid)
        present = {m.id for m in request.messages}
        earlier = [
            m for m in (langchain_message(s) for s in history) if m.id not in present
        ]
        prompt = self.engine.build_prompt(sid)
        system = request.system_message
        if prompt is not None:
            system = _with_summary(system, prompt)
        messages = self._masked([*earlier, *request.messages], history)
        return request.override(messages=messages, system_message=system)

    def _masked(
        self, messages: list[AnyMessage], history: Sequence[Message]
    ) -> list[AnyMessage]:
        """Return ``messages`` with old tool results masked (``assemble``'s rule).

        With ``mask_tool_results_after`` set, a tool message older than that many
        user turns is sent as the one-line stub ``assemble`` would send, naming its
        stored id for ``read_history``; the state and the store keep the result.
        """
        config = self.engine.config
        if config.mask_tool_results_after is None:
            return messages
        stored_ids = {m.metadata.get(LANGCHAIN_ID): m.id for m in history}
        shadows = [
            attrs.evolve(stored_message(m), id=stored_ids.get(m.id)) for m in messages
        ]
        masked = mask_tool_results(
            shadows, config.mask_tool_results_after, locale=config.locale
        )
        return [
            m if stub is shadow else m.model_copy(update={"content": stub.text})
            for m, shadow, stub in zip(messages, shadows, masked, strict=True)
        ]


def _thread_id(runtime: Runtime[Any] | None) -> str | None:
    """Return the run's thread id, or None when it has none."""
    info = getattr(runtime, "execution_info", None)  # recent LangGraph releases
    thread_id = getattr(info, "thread_id", None)
    if thread_id is None:
        try:
            thread_id = get_config().get("configurable", {}).get("thread_id")
        except RuntimeError:  # called outside a run
            return None
    return None if thread_id is None or thread_id == "" else str(thread_id)


def _with_summary(system: SystemMessage | None, prompt: str) -> SystemMessage:
    """Return the system message with the summary appended (one system message)."""
    if system is None:
        return SystemMessage(content=prompt)
    if isinstance(system.content, str):
        content: str | list[str | dict[str, Any]] = f"{system.content}\n\n{prompt}"
    else:
        content = [*system.content, {"type": "text", "text": prompt}]
    return system.model_copy(update={"content": content})


def is_instruction(message: BaseMessage) -> bool:
    """Tell whether a LangChain message is a system or developer instruction."""
    if isinstance(message, SystemMessage):
        return True
    return getattr(message, "role", None) in ("system", "developer")


def stored_message(message: BaseMessage) -> Message:
    """Return the library message storing a LangChain message (via OpenAI format)."""
    converted = Message.from_openai(convert_to_openai_messages(message))
    if message.id is None:
        return converted
    return attrs.evolve(converted, metadata={LANGCHAIN_ID: message.id})


def langchain_message(message: Message) -> AnyMessage:
    """Return the LangChain message a stored message holds, with its id."""
    (converted,) = convert_to_messages([message.to_openai()])
    known = message.metadata.get(LANGCHAIN_ID)
    if isinstance(known, str):
        converted.id = known
    return cast("AnyMessage", converted)  # a chat message converts to one of them


class RecallTool(BaseTool):
    """One recall tool (``search_history`` or ``read_history``) as a LangChain tool.

    Its arguments are the engine's JSON schema; the call runs
    ``engine.call_recall_tool``, so a bad argument comes back to the model as a
    tool result saying what was wrong. The session is ``session_id``, else the
    run's ``thread_id`` (the one ``SummaryMiddleware`` uses). Build them with
    ``recall_tools(engine)``.
    """

    engine: Any  # SummaryEngine: pydantic cannot check it
    session_id: str | None = None

    def _session(self) -> str:
        sid = self.session_id or _thread_id(None)
        if sid is None:
            raise ValueError(
                "the recall tools need a session: pass session_id=... or run the "
                'agent with config={"configurable": {"thread_id": ...}}'
            )
        return sid

    def _run(
        self,
        *args: Any,
        run_manager: CallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> str:
        call = ToolCall("langchain", self.name, json.dumps(kwargs, ensure_ascii=False))
        message = self.engine.call_recall_tool(self._session(), call)
        return cast(str, message.text)

    async def _arun(self, *args: Any, **kwargs: Any) -> str:
        kwargs.pop("run_manager", None)
        sid = self._session()  # in the run's context, before the thread hop
        call = ToolCall("langchain", self.name, json.dumps(kwargs, ensure_ascii=False))
        message = await asyncio.to_thread(self.engine.call_recall_tool, sid, call)
        return cast(str, message.text)


def recall_tools(
    engine: SummaryEngine | AsyncSummaryEngine, session_id: str | None = None
) -> list[BaseTool]:
    """Return the engine's recall tools as LangChain tools.

    Pass them to ``create_agent(model, tools=[*your_tools, *recall_tools(engine)],
    middleware=[SummaryMiddleware(engine)])``; the session is ``session_id``, else
    the run's ``thread_id``.
    """
    sync = engine.engine if isinstance(engine, AsyncSummaryEngine) else engine
    return [
        RecallTool(
            name=function["name"],
            description=function["description"],
            args_schema=function["parameters"],
            engine=sync,
            session_id=session_id,
        )
        for function in (
            cast("dict[str, Any]", definition["function"])
            for definition in sync.recall_tools()
        )
    ]
