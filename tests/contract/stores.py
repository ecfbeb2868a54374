"""Builds each store under contract test."""

from __future__ import annotations

from pathlib import Path

from memory_summary.adapters import InMemoryStore

STORE_KINDS = ["memory"]


def make_store(kind: str, tmp_path: Path) -> object:
    if kind == "memory":
        return InMemoryStore()
    raise ValueError(kind)
