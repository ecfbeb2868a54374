"""The fixtures every store contract suite gives its tests: a fresh store and a sid.

``StoreContract`` and ``SearchContract`` both build on ``StoreFixtures``, so a store's
author writes ``make_store`` (and maybe ``dispose_store``) the same way for each.
Needs ``pip install 'memory-summary[testing]'``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

from .extra import pytest  # first: a missing extra is named, before any use

__all__ = ["StoreFixtures"]


class StoreFixtures:
    """The ``store`` and ``sid`` fixtures; a subclass provides ``make_store``."""

    def make_store(self, tmp_path: Path) -> Any:
        """Return a new store to test; ``tmp_path`` is a directory of the test's own."""
        raise NotImplementedError(
            f"{type(self).__name__} must define make_store(self, tmp_path)"
        )

    def dispose_store(self, store: Any) -> None:
        """Release what ``make_store`` built: by default, call its ``close()``."""
        close = getattr(store, "close", None)
        if callable(close):
            close()

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Any]:
        """A fresh store from ``make_store``, disposed of after the test."""
        made = self.make_store(tmp_path)
        try:
            yield made
        finally:
            self.dispose_store(made)

    @pytest.fixture
    def sid(self) -> str:
        """A session id of its own: a shared database may outlive a test run."""
        return f"s-{uuid4().hex[:8]}"
