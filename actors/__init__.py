"""The concurrency shell: session actors, their registry, and the engine core."""

from __future__ import annotations

from .engine import EngineCore
from .registry import SessionRegistry
from .session import SessionActor

__all__ = ["EngineCore", "SessionActor", "SessionRegistry"]
