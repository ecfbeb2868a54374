"""Builds each store under contract test."""

from __future__ import annotations

from pathlib import Path

from memory_summary.adapters import InMemoryStore, SqliteStore

STORE_KINDS = ["memory", "sqlite"]


def make_store(kind: str, tmp_path: Path) -> object:
    if kind == "memory":
        return InMemoryStore()
    if kind == "sqlite":
        return SqliteStore(tmp_path / "store.sqlite3")
    raise ValueError(kind)
