"""Both a built wheel and the editable install expose only ``memory_summary``."""

from __future__ import annotations

import email
import email.message
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # Built from a copy of the checkout, through the sdist as a release is: the
    # checkout's own ./build (a former build's modules) and egg-info never leak in, and
    # two suites running at once never build in the same folder.
    source = tmp_path_factory.mktemp("source") / "memory-summary"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv*",
            "build",
            "dist",
            "site",
            "*.egg-info",
            "__pycache__",
            ".hypothesis",
            ".pytest_cache",
            ".mypy_cache",
            ".ruff_cache",
        ),
    )
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--no-isolation",
            "--outdir",
            str(out),
        ],
        cwd=source,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("memory_summary-*.whl")
    return built


def test_the_wheel_holds_only_the_memory_summary_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}

    assert {t for t in top if not t.endswith(".dist-info")} == {"memory_summary"}
    for sub in ("domain", "actors", "adapters", "integrations", "testing"):
        assert f"memory_summary/{sub}/__init__.py" in names
    assert "memory_summary/py.typed" in names
    # the benchmarks' replays and fact generators stay in the checkout's benchmarks/
    assert [n for n in names if "quality" in n or "benchmark" in n] == []


def test_an_installed_wheel_imports_the_subpackages(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    probe = (
        "import importlib.util, memory_summary.domain, memory_summary.actors, "
        "memory_summary.adapters; print(memory_summary.domain.__file__); "
        "print([n for n in ('domain', 'actors', 'adapters') "
        "if importlib.util.find_spec(n)]); import sys; "
        "print(sorted(type(f).__name__ for f in sys.meta_path "
        "if type(f).__module__.startswith('memory_summary')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    domain_file, leaked, finders = result.stdout.splitlines()
    assert domain_file.startswith(str(target))
    assert leaked == "[]"
    assert finders == "[]"  # the checkout's folder mapping stays out of a wheel


def test_the_editable_install_imports_the_subpackages(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib.util, memory_summary.domain as d; "
            "print(d.SummaryConfig().threshold);"
            "print(importlib.util.find_spec('domain'))",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert result.stdout.splitlines() == ["30", "None"]


def test_importing_the_library_imports_no_test_framework(tmp_path):
    probe = (
        "import sys, memory_summary, memory_summary.adapters, memory_summary.testing; "
        "print(sorted(m for m in ('pytest', 'hypothesis') if m in sys.modules))"
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


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(name))


def test_the_wheel_carries_the_license_it_declares(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    metadata = wheel_metadata(wheel)

    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names) or any(
        name.endswith(".dist-info/LICENSE") for name in names
    )
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert "License :: OSI Approved :: MIT License" in metadata.get_all("Classifier")


def test_the_metadata_names_every_supported_python_and_the_project_urls(wheel):
    metadata = wheel_metadata(wheel)
    classifiers = metadata.get_all("Classifier")
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL"))

    for minor in (10, 11, 12, 13):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert metadata["Requires-Python"] == ">=3.10"
    assert set(urls) == {"Homepage", "Documentation", "Changelog", "Issues"}


def test_the_all_extra_brings_every_optional_integration(wheel):
    requires = wheel_metadata(wheel).get_all("Requires-Dist")

    def extra(name: str) -> set[str]:
        marker = f'extra == "{name}"'
        return {r.split(";")[0].strip() for r in requires if marker in r}

    optional = {"openai", "anthropic", "postgres", "redis", "otel"}
    optional |= {"openai-agents", "langchain", "testing"}
    for name in optional:
        assert extra(name) <= extra("all"), name


def test_the_version_is_released_in_the_changelog(wheel):
    version = wheel_metadata(wheel)["Version"]
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")

    assert re.search(
        rf"^## {re.escape(version)} - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M
    )
    assert changelog.index("## Unreleased") < changelog.index(f"## {version} ")
