"""A FastAPI chat server whose conversations stay inside the model's context window.

POST /chat/{session_id} with {"messages": [...]} (this turn's OpenAI-format messages)
stores them, sends the model the summary plus the active history, stores the reply,
reports the usage the model returned, and answers with the reply and that usage.

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_MODEL=qwen2.5-7b-instruct \
        uvicorn --factory examples.fastapi_chat:create_app
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from openai import AsyncOpenAI
from pydantic import BaseModel

from memory_summary import SummaryConfig, SummaryEngine, messages_from_openai
from memory_summary.adapters import SqliteStore
from memory_summary.aio import AsyncSummaryEngine

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


class Turn(BaseModel):
    """One turn's request body."""

    messages: list[dict[str, Any]]  # OpenAI chat format, usually one user message


def create_app(
    db_path: str = "chat.sqlite3",
    context_tokens: int = 8192,  # the chat model's window, for the usage ratio
    config: SummaryConfig | None = None,
) -> FastAPI:
    """Build the app; the model comes from OPENAI_BASE_URL and OPENAI_MODEL."""
    store = SqliteStore(db_path)
    engine = AsyncSummaryEngine(SummaryEngine(store, config=config))
    client = AsyncOpenAI(api_key=os.environ.get("OPENAI_API_KEY", "none"))
    model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with engine:  # stops the engine (and its threads) at shutdown
            yield
        await client.close()
        store.close()

    app = FastAPI(lifespan=lifespan)
    app.state.engine = engine

    @app.post("/chat/{session_id}")
    async def chat(session_id: str, turn: Turn) -> dict[str, Any]:
        def save(messages: list[Any]) -> list[dict[str, object]]:
            for message in messages_from_openai(messages):
                store.save_message(session_id, message)
            return [m.to_openai() for m in store.get_history(session_id)]

        history = await asyncio.to_thread(save, turn.messages)  # SQLite: off the loop
        request = await engine.assemble_openai([SYSTEM, *history], session_id)
        completion = await client.chat.completions.create(model=model, messages=request)
        reply = completion.choices[0].message
        await asyncio.to_thread(save, [reply])
        engine.turn_after(session_id, model=model)  # compresses in the background
        usage = completion.usage  # the model's own count, when it reports one
        if usage is not None:  # a nearly full window compresses before the next turn
            engine.token_usage(session_id, usage.prompt_tokens / context_tokens)
        reported = usage.model_dump(exclude_none=True) if usage else None
        return {"message": reply.model_dump(exclude_none=True), "usage": reported}

    return app
