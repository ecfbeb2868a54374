"""The public testing kit used from outside the project, as a store's author would.

A test module in a directory of its own (no conftest, no ``tests`` package) subclasses
``StoreContract`` for a store it defines, and pytest runs it in a child process: a
store that behaves passes every contract test; one that flattens content parts into
text is caught by the content tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given

from memory_summary import Message, StoreError
from memory_summary.domain import CommitRequest
from memory_summary.testing import fakes, strategies
from memory_summary.testing.contract import LeaseLimitContract, StoreContract

OUTSIDE_MODULE = textwrap.dedent(
    '''
    from memory_summary import Message
    from memory_summary.adapters import InMemoryStore
    from memory_summary.testing.contract import LeaseLimitContract, StoreContract


    class DictStore:
        """A store of its own: keeps sessions in a dict, delegates the rest."""

        def __init__(self):
            self.inner = InMemoryStore()
            self.saved = {}

        def save_message(self, session_id, message):
            stored = self.inner.save_message(session_id, message)
            self.saved.setdefault(session_id, []).append(stored.id)
            return stored

        def __getattr__(self, name):
            return getattr(self.inner, name)


    class FlatteningStore(DictStore):
        """Keeps only the text of content given as parts: a bug the contract finds."""

        def get_history(self, session_id, limit=None):
            return [
                Message(m.role, m.text, m.tool_calls, m.tool_call_id, m.name, id=m.id)
                if isinstance(m.content, tuple) else m
                for m in self.inner.get_history(session_id, limit)
            ]


    class LongLeaseStore(DictStore):
        """Grants leases of any length (written before the day's limit)."""

        def acquire_lease(self, session_id, *, owner, ttl_s):
            ttl_s = 60 if isinstance(ttl_s, float) and 86400 < ttl_s < 2e300 else ttl_s
            return self.inner.acquire_lease(session_id, owner=owner, ttl_s=ttl_s)

        def renew_lease(self, session_id, token, *, ttl_s):
            ttl_s = 60 if isinstance(ttl_s, float) and 86400 < ttl_s < 2e300 else ttl_s
            return self.inner.renew_lease(session_id, token, ttl_s=ttl_s)


    class TestDictStore(StoreContract, LeaseLimitContract):
        def make_store(self, tmp_path):
            return DictStore()


    class TestLongLeaseStore(StoreContract):
        def make_store(self, tmp_path):
            return LongLeaseStore()


    class TestLongLeaseLimited(StoreContract, LeaseLimitContract):
        def make_store(self, tmp_path):
            return LongLeaseStore()


    class TestFlatteningStore(StoreContract):
        def make_store(self, tmp_path):
            return FlatteningStore()
    '''
)


@pytest.fixture(scope="module")
def outside_run(tmp_path_factory) -> subprocess.CompletedProcess[str]:
    """Run the whole contract on DictStore and the content tests on FlatteningStore.

    One child pytest for both (``-rA`` names every outcome).
    """
    directory = tmp_path_factory.mktemp("outside")
    (directory / "test_my_store.py").write_text(OUTSIDE_MODULE, encoding="utf-8")
    env = {**os.environ, "HYPOTHESIS_PROFILE": "default"}
    selection = (
        "TestDictStore or (TestFlatteningStore and (round_trip or parts))"
        " or (TestLongLease and a_lease)"
    )
    options = ["-q", "-rA", "-p", "no:cacheprovider", "-k", selection]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *options],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def outcomes(run: subprocess.CompletedProcess[str], cls: str) -> dict[str, str]:
    """Map each test of ``cls`` to its outcome word, from the ``-rA`` summary."""
    prefix = f"test_my_store.py::{cls}::"
    found = {}
    for line in run.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "SKIPPED", "ERROR") and rest.startswith(prefix):
            found[rest.removeprefix(prefix).split(" ")[0]] = word
    return found


def test_a_store_defined_outside_the_project_runs_the_whole_contract(outside_run):
    contract_tests = sum(1 for name in dir(StoreContract) if name.startswith("test_"))
    contract_tests += sum(
        1 for name in dir(LeaseLimitContract) if name.startswith("test_")
    )

    passed = outcomes(outside_run, "TestDictStore")

    assert set(passed.values()) == {"PASSED"}, outside_run.stdout + outside_run.stderr
    assert len(passed) >= contract_tests


def test_the_contract_catches_a_store_that_loses_content_parts(outside_run):
    flattening = outcomes(outside_run, "TestFlatteningStore")

    assert outside_run.returncode == 1
    assert flattening["test_openai_messages_round_trip_through_the_store"] == "FAILED"
    assert any(
        name.startswith("test_saved_parts_come_back_equal_and_frozen")
        and outcome == "FAILED"
        for name, outcome in flattening.items()
    ), outside_run.stdout


def test_the_kits_fakes_script_replies_and_failures():
    llm = fakes.ScriptedSummarizer("one", RuntimeError("down"))
    store = fakes.FailingStore()
    saved = store.save_message("s1", Message("user", "hi"))

    first = llm.complete([Message("user", "x")], max_tokens=10, temperature=0.3)

    assert first == "one"
    with pytest.raises(RuntimeError, match="down"):
        llm.complete([], max_tokens=10, temperature=0.3)
    assert [list(c) for c in llm.calls] == [[Message("user", "x")], []]
    with pytest.raises(StoreError, match="commit failed"):
        store.commit(
            CommitRequest(
                session_id="s1",
                namespace="summary",
                record={"generation": "g"},
                expect_generation=None,
                through_id=saved.id,
                expect_archived=1,
            )
        )
    assert store.get_history("s1") == [saved]


@given(message=strategies.openai_messages())
def test_the_kits_strategies_make_messages_the_library_accepts(message):
    assert Message.from_openai(message).role == message["role"]


def test_without_the_extra_the_kit_names_it(tmp_path):
    for module in ("strategies", "contract"):
        probe = (
            "import sys; sys.modules['hypothesis'] = None; "
            f"import memory_summary.testing.{module}"
        )

        result = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=tmp_path,  # not the repository, whose folders are not the package
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

        assert result.returncode == 1
        assert "pip install 'memory-summary[testing]'" in result.stderr


def test_the_lease_limit_is_opt_in_and_catches_a_store_granting_more(outside_run):
    """A store written before the day's limit still passes ``StoreContract``."""
    plain = outcomes(outside_run, "TestLongLeaseStore")
    limited = outcomes(outside_run, "TestLongLeaseLimited")

    assert plain, outside_run.stdout
    assert set(plain.values()) == {"PASSED"}, outside_run.stdout
    assert {name for name, outcome in limited.items() if outcome == "FAILED"} == {
        "test_a_lease_longer_than_a_day_is_refused[86401.0]",
        "test_a_lease_longer_than_a_day_is_refused[1e+300]",
    }, outside_run.stdout
