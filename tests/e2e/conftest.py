"""The command line run in-process: ``main(argv)`` with a clean environment."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from memory_summary.cli import main

CliRun = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli_main(monkeypatch, capsys, tmp_path) -> CliRun:
    """Return a runner of ``main(argv)`` in ``tmp_path``: (exit code, stdout, stderr).

    Only the ``MEMORY_SUMMARY_*`` variables given as ``env`` are set; help is
    formatted 200 columns wide, so one option's help stays on one line.
    """
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    for name in [name for name in os.environ if name.startswith("MEMORY_SUMMARY_")]:
        monkeypatch.delenv(name)

    def run(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        with monkeypatch.context() as patch:
            for name, value in (env or {}).items():
                patch.setenv(name, value)
            code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run
