"""A FastAPI chat server whose conversations stay inside the model's context window.

POST /chat/{session_id} {"message": "..."} is one turn: the library saves the user's
message and builds the request (the summary plus the active history), the model
answers, the library saves the reply, reads its usage and compresses in the
background when due. The model is OPENAI_BASE_URL's (OPENAI_API_KEY, OPENAI_MODEL);
without it, the testing kit's scripted chat model on loopback, so it runs offline.

    pip install 'memory-summary[openai]' fastapi uvicorn
    uvicorn --factory fastapi_chat:create_app
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI
from openai import AsyncOpenAI
from pydantic import BaseModel

from memory_summary import SummaryConfig, SummaryEngine
from memory_summary.adapters import SqliteStore
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.testing import ChatModelServer

SYSTEM = "You are a helpful assistant."


class Turn(BaseModel):
    """One turn's request body: the user's text."""

    message: str


def create_app(
    db_path: str = "chat.sqlite3", config: SummaryConfig | None = None
) -> FastAPI:
    """Build the app: history in ``db_path``, the model from OPENAI_* or scripted."""
    store = SqliteStore(db_path)
    # The offline summarizer folds in a child process: off the event loop's GIL.
    config = config or SummaryConfig(offline_fold="process")
    engine = AsyncSummaryEngine(SummaryEngine(store, config=config))
    model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            base_url = os.environ.get("OPENAI_BASE_URL")
            if base_url is None:  # offline: a scripted model that echoes
                base_url = stack.enter_context(ChatModelServer()).base_url
            api_key = os.environ.get("OPENAI_API_KEY", "none")
            client = AsyncOpenAI(base_url=base_url, api_key=api_key)
            stack.push_async_callback(client.close)
            stack.callback(store.close)
            await stack.enter_async_context(engine)  # stopped first, at shutdown
            app.state.client = client
            yield

    app = FastAPI(lifespan=lifespan)
    app.state.engine = engine

    @app.post("/chat/{session_id}")
    async def chat(session_id: str, turn: Turn) -> dict[str, object]:
        conversation = engine.conversation(session_id, model=model)
        request = await conversation.prepare(turn.message, system=SYSTEM)
        completion = await app.state.client.chat.completions.create(
            model=model, messages=request
        )
        await conversation.record(completion)  # saves it; compresses when due
        return {"reply": completion.choices[0].message.content}

    return app
