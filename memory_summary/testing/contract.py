"""The store contract suite as a pytest class: subclass it to check a store.

``InMemoryStore`` is the reference; the project's own stores (memory, SQLite,
PostgreSQL) run through this same class. A store written elsewhere proves it behaves
alike with one subclass that says how to build it::

    from memory_summary.testing.contract import StoreContract

    class TestRedisStore(StoreContract):
        def make_store(self, tmp_path):
            return RedisStore(url="redis://localhost:6379/15")

        def dispose_store(self, store):   # optional; the default calls close()
            store.flush_and_close()

The name of the subclass must start with ``Test`` for pytest to collect it. Each test
gets a fresh store from ``make_store`` and a session id of its own (``sid``); a store
that shares one database between tests must keep sessions of different ids apart,
which every store must do anyway.

What a store must offer is what ``SummaryEngine`` needs of it: the memory-store
methods (``save_message``, ``get_history``, ``get_full_history``, ``trim_history``,
the metadata methods, ``clear_session``, ``clear_all``) and the compression ones
(``count_history``, ``get_oldest_history``, ``get_archived``, ``commit``: the fenced
commit with its attached record and the lease's release, ``forget_session``,
``quarantine_metadata`` and the leases). The optional batch save (``save_messages``)
is tested when the store has it and skipped otherwise. ``LeaseLimitContract`` (leases
of at most a day) is opt-in: add it beside ``StoreContract``. Needs
``pip install 'memory-summary[testing]'``.
"""

from __future__ import annotations

from .extra import pytest  # noqa: F401 (first: a missing extra is named)

# isort: split

from .archived_contract import ArchivedContract
from .attaching_contract import AttachingContract
from .batch_contract import BatchContract
from .content_contract import ContentContract
from .fencing_contract import FencingContract
from .history_contract import HistoryContract
from .hostile_contract import HostileContract
from .instruction_contract import InstructionContract
from .lease_contract import LeaseContract, LeaseLimitContract, poll_until_acquired
from .store_fixtures import StoreFixtures

__all__ = ["LeaseLimitContract", "StoreContract", "poll_until_acquired"]


class StoreContract(
    HistoryContract,
    ContentContract,
    ArchivedContract,
    FencingContract,
    AttachingContract,
    LeaseContract,
    HostileContract,
    BatchContract,
    InstructionContract,
    StoreFixtures,
):
    """Every store test; a subclass provides ``make_store`` (and maybe more).

    Override ``make_store(tmp_path)`` to return a new, empty store; override
    ``dispose_store(store)`` when closing it takes more than its ``close()``; or
    override the ``store`` fixture itself to build it from fixtures of your own.
    """
