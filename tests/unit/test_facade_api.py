from __future__ import annotations

import importlib

import memory_summary


def isort_key(name: str) -> tuple[int, str]:
    """Ruff's __all__ order (RUF022): CONSTANTS, then Classes, then functions."""
    if name.isupper() or (name.replace("_", "").isupper()):
        return (0, name)
    return (1, name) if name[:1].isupper() else (2, name)


def test_facade_exports_the_public_contract():
    contract = {
        "SummaryEngine",
        "SummaryConfig",
        "LLMRef",
        "Message",
        "ToolCall",
        "Compressing",
        "CompressRequested",
        "ClearResult",
        "ConfigError",
    }

    assert contract <= set(memory_summary.__all__)
    assert memory_summary.__all__ == sorted(memory_summary.__all__, key=isort_key)
    for name in memory_summary.__all__:
        assert hasattr(memory_summary, name)


def test_adapters_export_the_contract_stores():
    adapters = importlib.import_module("memory_summary.adapters")

    assert {"InMemoryStore", "InMemoryArchive"} <= set(adapters.__all__)


def test_every_package_lists_a_sorted_all():
    for name in (
        "memory_summary.domain",
        "memory_summary.actors",
        "memory_summary.adapters",
    ):
        module = importlib.import_module(name)
        assert module.__all__ == sorted(module.__all__, key=isort_key), name
        assert all(hasattr(module, n) for n in module.__all__)


def test_domain_imports_only_pure_modules():
    import ast
    import pkgutil
    from pathlib import Path

    domain = importlib.import_module("memory_summary.domain")
    allowed = {
        "__future__",
        "attrs",
        "contextlib",
        "collections",
        "difflib",
        "math",
        "re",
        "typing",
        "unicodedata",
    }
    for info in pkgutil.iter_modules(domain.__path__):
        path = Path(domain.__path__[0]) / f"{info.name}.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, (info.name, name)
