"""The real ``memory-summary`` console script, run in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def script() -> list[str]:
    found = shutil.which("memory-summary", path=str(Path(sys.executable).parent))
    assert found, "the console script is not installed next to this interpreter"
    return [found]


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith("MEMORY_SUMMARY_")
    }
    environ.update(env or {})
    return subprocess.run(
        [*script(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
        cwd=cwd,
    )


def test_config_check_prints_the_effective_defaults():
    result = run("config", "check")

    assert result.returncode == 0
    assert "configuration OK (defaults" in result.stdout
    assert "keep_recent               20" in result.stdout


def test_config_check_reads_a_toml_file_and_environment_overrides(tmp_path):
    path = tmp_path / "summary.toml"
    path.write_text(
        '[memory_summary]\nkeepRecent = 10\nlocale = "zh"\n', encoding="utf-8"
    )

    result = run(
        "config", "check", str(path), "--json", env={"MEMORY_SUMMARY_THRESHOLD": "50"}
    )

    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    assert (values["keep_recent"], values["locale"], values["threshold"]) == (
        10,
        "zh",
        50,
    )


def test_a_bad_key_exits_3_with_a_suggestion(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("keepRecnt = 5\n", encoding="utf-8")

    result = run("config", "check", str(path))

    assert result.returncode == 3
    assert "did you mean 'keepRecent'?" in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_toml_and_missing_files_say_what_is_wrong(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("threshold = = 3\n", encoding="utf-8")

    assert "valid TOML" in run("config", "check", str(broken)).stderr
    missing = run("config", "check", str(tmp_path / "nope.toml"))
    assert missing.returncode == 3
    assert "an existing TOML file" in missing.stderr


def test_no_command_prints_help_and_exits_2():
    result = run()

    assert result.returncode == 2
    assert "usage: memory-summary" in result.stderr


def test_version_and_module_entry_point_agree(tmp_path):
    from_script = run("--version").stdout
    from_module = subprocess.run(
        [sys.executable, "-m", "memory_summary", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=True,
    ).stdout

    assert from_script == from_module
    assert from_script.startswith("memory-summary 0.")
