"""The integrations stay optional: importing the library loads no framework."""

from __future__ import annotations

import subprocess
import sys

FRAMEWORKS = ("agents", "langchain", "langchain_core", "langgraph", "fastapi")


def test_importing_the_library_loads_no_framework(tmp_path):
    probe = (
        "import sys, memory_summary, memory_summary.integrations, memory_summary.aio; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}))"
    )

    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert result.stdout.strip() == "[]"
