"""The Python versions we claim are the ones CI runs, said the same everywhere.

``setup.cfg``'s classifiers are the one list: ``.ci/run`` reads it through
``.ci/pythons.sh`` (the whole suite on ``python3``, the not-slow suite on each other
version), and the README and the docs name its range.
"""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _classified() -> list[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    found = re.findall(
        r"^Programming Language :: Python :: (3\.\d+)$",
        config["metadata"]["classifiers"],
        flags=re.MULTILINE,
    )
    return sorted(found, key=lambda v: tuple(map(int, v.split("."))))


def test_the_classifiers_cover_python_requires_without_gaps():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    minimum = config["options"]["python_requires"].removeprefix(">=")
    minors = [int(v.split(".")[1]) for v in _classified()]

    assert _classified()[0] == minimum
    assert minors == list(range(minors[0], minors[-1] + 1))


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_ci_runs_the_versions_the_classifiers_declare():
    listed = subprocess.run(
        ["bash", "-c", "source .ci/pythons.sh && ci_declared_pythons"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.split()
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")

    assert listed == _classified()
    assert "source .ci/pythons.sh" in run
    assert "declared=$(ci_declared_pythons)" in run


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_the_pages_name_the_declared_range(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    versions = _classified()

    assert f"Python {versions[0]} to {versions[-1]}" in text
    assert re.findall(r"Python 3\.\d+\+", text) == []  # no open-ended claim
