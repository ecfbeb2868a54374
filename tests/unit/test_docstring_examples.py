"""Every ``>>>`` example in the package's docstrings runs and shows what it says.

The reference pages render these examples, so a wrong one misleads a reader. The
benchmarks' scoring code (``benchmarks/summary_quality``) states its matching rules
as examples too: they run here as well.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
import summary_quality

import memory_summary

SKIPPED_PACKAGES = ("memory_summary.integrations",)  # optional extras' frameworks


def _modules() -> list[str]:
    names = []
    for package in (memory_summary, summary_quality):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if info.name.startswith(SKIPPED_PACKAGES) or info.name.endswith("__main__"):
                continue
            names.append(info.name)
    return sorted(names)


def _with_examples() -> list[str]:
    finder = doctest.DocTestFinder()
    return [
        name
        for name in _modules()
        if any(t.examples for t in finder.find(importlib.import_module(name)))
    ]


@pytest.mark.parametrize("name", _with_examples())
def test_docstring_examples_hold(name):
    module = importlib.import_module(name)

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)

    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} fail"
