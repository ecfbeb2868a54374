"""The concurrency shell: the thread runtime, session actors and the compressor."""

from __future__ import annotations

from .compression import CompressionRequest, Compressor
from .registry import SessionRegistry
from .runtime import ThreadRuntime
from .session import SessionActor, SessionServices
from .workers import WorkerPool

__all__ = [
    "CompressionRequest",
    "Compressor",
    "SessionActor",
    "SessionRegistry",
    "SessionServices",
    "ThreadRuntime",
    "WorkerPool",
]
