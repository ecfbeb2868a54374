"""What the CLI shows: hints that run from the shell, progress on a terminal."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

from rich.console import Console

from memory_summary.cli import invocation
from memory_summary.demo import run_demo


def fake_script(directory: Path) -> Path:
    directory.mkdir(parents=True)
    script = directory / "memory-summary"
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def test_a_script_not_on_the_path_is_named_by_its_full_path(tmp_path, monkeypatch):
    script = fake_script(tmp_path / "venv" / "bin")
    monkeypatch.setattr(sys, "argv", [str(script), "demo"])
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))

    assert invocation() == str(script)


def test_a_script_on_the_path_is_named_by_its_name(tmp_path, monkeypatch):
    script = fake_script(tmp_path / "venv" / "bin")
    monkeypatch.setattr(sys, "argv", [str(script), "demo"])
    monkeypatch.setenv("PATH", f"{tmp_path / 'elsewhere'}{os.pathsep}{script.parent}")

    assert invocation() == "memory-summary"


def test_another_program_on_the_path_is_not_taken_for_this_one(tmp_path, monkeypatch):
    ours = fake_script(tmp_path / "venv" / "bin")
    other = fake_script(tmp_path / "global" / "bin")
    monkeypatch.setattr(sys, "argv", [str(ours), "demo"])
    monkeypatch.setenv("PATH", str(other.parent))

    assert invocation() == str(ours)


def test_progress_on_a_terminal_shows_elapsed_time_rate_and_eta(tmp_path):
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)

    report = run_demo(
        tmp_path / "demo.sqlite3", sessions=2, turns=12, workers=2, console=console
    )

    shown = screen.getvalue()
    assert report.turns == 24
    assert "sessions 2/2" in shown
    assert "24/24" in shown
    assert "turns" in shown
    assert "/s" in shown  # the rate
    assert "ETA" in shown
    assert "0:00:0" in shown  # the elapsed time, from the start
    assert "compressions running" in shown
