"""The summarizer contract from the kit, used from outside the project.

A test module in a directory of its own subclasses ``SummarizerContract`` for
summarizers it defines, and pytest runs it in a child process: a summarizer that keeps
the port passes; one that lets its driver's exception escape, or whose stream pieces
do not join to its answer, is caught.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from memory_summary.testing.summarizer_contract import SummarizerContract

OUTSIDE_MODULE = textwrap.dedent(
    '''
    from memory_summary import SummarizerError
    from memory_summary.testing.summarizer_contract import SummarizerContract


    class EchoSummarizer:
        """Answers with the first words of the request: keeps the port."""

        def __init__(self, down=False):
            self.down = down

        def context_length(self, model=None):
            return 8192

        def complete(self, messages, *, model=None, max_tokens, temperature):
            if self.down:
                raise SummarizerError("the endpoint is down")
            return " ".join(messages[-1].text.split()[:20])

        def stream(self, messages, *, model=None, max_tokens, temperature):
            if self.down:
                raise SummarizerError("the endpoint is down")
            words = self.complete(messages, max_tokens=max_tokens,
                                  temperature=temperature).split(" ")
            for index, word in enumerate(words):
                yield word if index == 0 else " " + word


    class LeakySummarizer(EchoSummarizer):
        """Lets its driver's error escape and streams something else: caught."""

        def complete(self, messages, *, model=None, max_tokens, temperature):
            if self.down:
                raise ConnectionError("driver error")
            return "answer"

        def stream(self, messages, *, model=None, max_tokens, temperature):
            yield "another answer"


    class TestEcho(SummarizerContract):
        def make_summarizer(self, request):
            return EchoSummarizer()

        def make_failing_summarizer(self, request):
            return EchoSummarizer(down=True)


    class TestLeaky(SummarizerContract):
        def make_summarizer(self, request):
            return LeakySummarizer()

        def make_failing_summarizer(self, request):
            return LeakySummarizer(down=True)
    '''
)


@pytest.fixture(scope="module")
def outside_run(tmp_path_factory) -> subprocess.CompletedProcess[str]:
    """Run both outside classes in one child pytest (``-rA`` names every outcome)."""
    directory = tmp_path_factory.mktemp("outside")
    (directory / "test_my_summarizer.py").write_text(OUTSIDE_MODULE, encoding="utf-8")
    env = {**os.environ, "HYPOTHESIS_PROFILE": "default"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def outcomes(run: subprocess.CompletedProcess[str], cls: str) -> dict[str, str]:
    """Map each test of ``cls`` to its outcome word, from the ``-rA`` summary."""
    prefix = f"test_my_summarizer.py::{cls}::"
    found = {}
    for line in run.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "SKIPPED", "ERROR") and rest.startswith(prefix):
            found[rest.removeprefix(prefix).split(" ")[0]] = word
    return found


def test_a_summarizer_defined_outside_the_project_passes_the_contract(outside_run):
    contract_tests = sum(
        1 for name in dir(SummarizerContract) if name.startswith("test_")
    )

    echo = outcomes(outside_run, "TestEcho")

    assert "FAILED" not in echo.values(), outside_run.stdout + outside_run.stderr
    assert "ERROR" not in echo.values(), outside_run.stdout + outside_run.stderr
    assert list(echo.values()).count("PASSED") >= contract_tests - 1


def test_the_contract_catches_escaping_driver_errors_and_diverging_streams(
    outside_run,
):
    leaky = outcomes(outside_run, "TestLeaky")

    assert outside_run.returncode == 1
    for caught in (
        "test_a_failing_call_raises_a_summarizer_error",
        "test_stream_pieces_join_to_what_complete_returns",
    ):
        assert leaky[caught] == "FAILED", outside_run.stdout


def test_without_the_extra_the_summarizer_kit_names_it(tmp_path):
    probe = (
        "import sys; sys.modules['hypothesis'] = None; "
        "import memory_summary.testing.summarizer_contract"
    )

    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 1
    assert "pip install 'memory-summary[testing]'" in result.stderr
