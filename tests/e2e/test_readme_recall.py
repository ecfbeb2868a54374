"""The README's Recall example runs as written and finds the folded fact."""

from __future__ import annotations

import pytest

from tests.e2e.test_readme import python_blocks, run_block

pytestmark = pytest.mark.e2e


def test_the_recall_example_finds_an_archived_message(tmp_path):
    block = next(b for b in python_blocks() if 'search_history("alice"' in b)

    result = run_block(block, tmp_path)

    assert result.returncode == 0, result.stderr
    found, around = result.stdout.splitlines()
    assert found == "My passport number is X1234567. True 1"
    assert around.startswith("[1, 2, 3")
