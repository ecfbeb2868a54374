"""Map ``domain/``, ``actors/`` and ``adapters/`` into the package in a source checkout.

setup.cfg installs the top-level ``domain/``, ``actors/`` and ``adapters/`` folders as
``memory_summary.domain``, ``.actors`` and ``.adapters``. With a checkout's root on
``sys.path`` (``python -m memory_summary``, an example, or ``uvicorn
examples.fastapi_chat:...`` started from the root), ``import memory_summary`` finds the
``memory_summary/`` folder itself, which does not hold them. For that case only, a
finder maps exactly those three names to the sibling folders; their submodules load
through their ``__path__`` as usual. A wheel or an editable install holds the three
inside the package: there nothing is installed and nothing changes.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

PACKAGE = __name__.rpartition(".")[0]
SUBPACKAGES = ("domain", "actors", "adapters")


class SiblingFolders(importlib.abc.MetaPathFinder):
    """Finds ``memory_summary.<name>`` in the checkout's ``<name>/`` folder."""

    def __init__(self, folders: dict[str, Path]) -> None:
        self.folders = folders

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        folder = self.folders.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname,
            folder / "__init__.py",
            submodule_search_locations=[str(folder)],
        )


def checkout_folders(package_dir: Path) -> dict[str, Path]:
    """Return the sibling folders to map, or ``{}`` when the package holds its own."""
    root = package_dir.parent
    if (package_dir / "domain").is_dir() or not (root / "setup.cfg").is_file():
        return {}
    folders = {f"{PACKAGE}.{name}": root / name for name in SUBPACKAGES}
    if not all((folder / "__init__.py").is_file() for folder in folders.values()):
        return {}
    return folders


def map_checkout_folders() -> None:
    """Install the finder once, when this package runs from a source checkout."""
    folders = checkout_folders(Path(__file__).parent)
    already = any(isinstance(finder, SiblingFolders) for finder in sys.meta_path)
    if folders and not already:
        sys.meta_path.append(SiblingFolders(folders))


map_checkout_folders()
