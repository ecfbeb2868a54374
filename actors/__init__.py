"""The concurrency shell: the thread runtime, session actors and compression jobs."""

from __future__ import annotations

from .compression import CompressionJob
from .registry import SessionRegistry
from .runtime import ThreadRuntime
from .session import SessionActor, SessionServices
from .workers import WorkerPool

__all__ = [
    "CompressionJob",
    "SessionActor",
    "SessionRegistry",
    "SessionServices",
    "ThreadRuntime",
    "WorkerPool",
]
