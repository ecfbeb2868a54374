"""Fuzz the command line: no argument list makes it raise, and every exit is documented.

``main(argv)`` runs in-process (the real parser, engine and SQLite files in a
temporary directory) over argument lists built from every sub-command's options and
hostile values; ``test_cli_safety.py`` runs the console script as a real process.
``facts`` and ``quality`` are the benchmark scripts' commands (``benchmarks/facts.py``,
``quality.py``), fuzzed through the same ``main`` with their own parser.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from summary_quality.command import build_facts_parser, build_quality_parser

from memory_summary.cli import main

pytestmark = pytest.mark.e2e

DOCUMENTED_EXITS = {0, 2, 3, 4}
BENCHMARK_PARSERS = {"facts": build_facts_parser, "quality": build_quality_parser}
HOSTILE = ("", " ", "-1", "0", "x", "1.5", "nan", "9" * 30, "\udcff", "-", "--")
# option -> values that make sense (drawn three times in four), besides HOSTILE
SENSIBLE: dict[str, tuple[str, ...]] = {
    "session": ("s0", "s1", "会话"),
    "--db": (
        "demo.sqlite3",
        "memory-summary-demo.sqlite3",
        "new.sqlite3",
        "notes.txt",
        "dir",
        "missing/x.sqlite3",
        ":memory:",
    ),
    "--config": ("good.toml", "bad.toml", "none.toml", "dir"),
    "--timeout": ("1e-9", "1e300", "inf", "30"),
    "--types": ("summary", "summry", "history", "history,summary", ","),
    "--schema": ("memory_summary", "x y"),
    "--locale": ("en", "zh", "both", "fr"),
    "--limit": ("1", "3", "100000"),
    "--sessions": ("1", "2", "10001"),
    "--turns": ("1", "2", "4"),
    "--workers": ("1", "2", "257"),
    "--seed": ("7", "-7", "9" * 40),
    "--context-tokens": ("1", "4096"),
    # a server is not fuzzed: connecting takes the driver's timeout
    "--dsn": ("",),
    "--data": ("short.json", "bad.json", "empty.json", "notes.txt", "none.json", "dir"),
    "--budget-factors": ("1", "4", "0.5", "inf", "1e400"),
    "--conversations": ("1", "2", "1001"),
    "--dates": ("session", "every", "none", "x"),
}
FLAGS = ("--quiet", "--force", "--json", "--all", "--help", "--version", "--bogus")
OPTIONS = {
    "demo": ("--db", "--sessions", "--turns", "--seed", "--workers", "--config"),
    "inspect": ("--limit", "--db", "--schema", "--config"),
    "compress": ("--timeout", "--db", "--schema", "--config"),
    "clear": ("--types", "--db", "--schema", "--config", "--all"),
    "stats": ("--limit", "--db", "--schema", "--config", "--json"),
    "sessions": ("--limit", "--db", "--schema", "--config", "--json"),
    # --data is always given: the default path is a dataset's, not fuzzed
    "quality": (
        "--data",
        "--budget-factors",
        "--conversations",
        "--dates",
        "--json",
        "--quiet",
        "--config",
    ),
    "config": ("--json",),
    # --conversations is always given and always out of range: a real facts run
    # takes seconds, the other paths are what is fuzzed here.
    "facts": ("--locale", "--seed", "--context-tokens", "--config", "--json"),
    "": ("--config", "--dsn"),
}


def values(name: str) -> st.SearchStrategy[str]:
    sensible = SENSIBLE.get(name, ())
    if name == "--dsn" or not sensible:
        return st.sampled_from(sensible or HOSTILE)
    return st.one_of(
        st.sampled_from(sensible), st.sampled_from(sensible), st.sampled_from(HOSTILE)
    )


@st.composite
def argument_lists(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(OPTIONS)))
    argv = [command] if command else []
    if command in ("inspect", "compress", "clear"):
        argv.append(draw(values("session")))
    elif command == "config":
        argv.append("check")
        argv += draw(st.lists(values("--config"), max_size=1))
    elif command == "facts":
        argv += ["--conversations", draw(st.sampled_from(("0", "-1", "x", "")))]
    elif command == "quality":
        argv += ["--data", draw(values("--data"))]
    for _ in range(draw(st.integers(0, 3))):
        option = draw(st.sampled_from(OPTIONS[command]))
        if option in FLAGS:
            argv.append(option)
        else:
            argv += [option, draw(values(option))]
    if draw(st.integers(0, 7)) == 0:
        argv.insert(
            draw(st.integers(0, len(argv))), draw(st.sampled_from(FLAGS + HOSTILE))
        )
    return argv


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    template = root / "template"
    template.mkdir()
    with _inside(template):
        assert main(["demo", "--sessions", "2", "--turns", "40", "--quiet"]) == 0
    return root


@contextlib.contextmanager
def _inside(directory: Path):
    before = Path.cwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


def _fresh(workdir: Path) -> Path:
    """Lay out the files the values name, afresh for each example."""
    here = workdir / "run"
    shutil.rmtree(here, ignore_errors=True)
    here.mkdir()
    shutil.copy(workdir / "template" / "memory-summary-demo.sqlite3", here)
    shutil.copy(here / "memory-summary-demo.sqlite3", here / "demo.sqlite3")
    (here / "notes.txt").write_text("not a database\n", encoding="utf-8")
    (here / "dir").mkdir()
    (here / "good.toml").write_text(
        "[memory_summary]\nkeepRecent = 4\n\n[memory_summary.cli]\nturns = 2\n",
        encoding="utf-8",
    )
    (here / "bad.toml").write_text("threshold = = 1\n", encoding="utf-8")
    (here / "short.json").write_text(json.dumps([SHORT_CHAT]), encoding="utf-8")
    (here / "bad.json").write_text('[{"conversation": 3}]', encoding="utf-8")
    (here / "empty.json").write_text("", encoding="utf-8")
    return here


# A LoCoMo conversation of two turns: quality replays it in a blink.
SHORT_CHAT = {
    "sample_id": "short",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a cat, Juniper."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely name!"},
        ],
    },
    "qa": [
        {"question": "Cat?", "answer": "Juniper", "evidence": ["D1:1"], "category": 4}
    ],
}


ENVIRONMENT = {
    # small demos, so each example stays fast
    "MEMORY_SUMMARY_CLI_SESSIONS": "1",
    "MEMORY_SUMMARY_CLI_TURNS": "3",
    "OPENAI_API_KEY": "",
}


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(argv=argument_lists())
def test_no_argument_list_raises_and_every_exit_is_documented(workdir, argv):
    here = _fresh(workdir)
    out, err = io.StringIO(), io.StringIO()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_SUMMARY_")}

    with (
        mock.patch.dict(os.environ, {**clean, **ENVIRONMENT}, clear=True),
        _inside(here),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        build = BENCHMARK_PARSERS.get(argv[0]) if argv else None
        code = main(argv[1:], build=build) if build else main(argv)

    event(f"exit {code}")
    assert code in DOCUMENTED_EXITS, (argv, err.getvalue())
    assert "Traceback" not in err.getvalue() + out.getvalue()
    if code == 2:
        assert "error:" in err.getvalue() or "usage:" in err.getvalue()
    if code in (3, 4):
        who = f"{argv[0]}: " if build else "memory-summary"
        assert "memory-summary" in err.getvalue() or who in err.getvalue()
    assert (here / "notes.txt").exists() or "--force" in argv
    assert not (here / "missing").exists()
