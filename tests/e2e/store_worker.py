"""A process that races for one session's lease and commits (run as a script).

Usage: store_worker.py MODE TARGET SESSION [ARGS...]
  TARGET  ``sqlite:<file>``, ``postgres:<dsn>|<schema>`` or ``redis:<url>|<prefix>``
  MODE    ``race NAME ROUNDS``  after a line on stdin, take the lease ROUNDS times;
                                under it, save a message and commit it fenced;
                                report each holding interval
          ``stale``             take a short lease, wait until another process has
                                committed since, then commit with the stale lease and
                                generation; report both results
          ``contend EXPECT NEW`` try to take the lease once, then commit the record
                                generation NEW over EXPECT without a lease
Prints one JSON object per line, flushed, so the parent can follow along.
"""

from __future__ import annotations

import json
import sys
import threading
import time

from memory_summary import Message
from memory_summary.domain import CommitRequest

NS = "summary"
DEADLINE_S = 60.0
_pause = threading.Event()  # never set: its wait() spaces polls


def report(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def open_store(target: str):
    kind, _, where = target.partition(":")
    if kind == "sqlite":
        from memory_summary.adapters import SqliteStore

        return SqliteStore(where)
    if kind == "redis":
        from memory_summary.adapters import RedisStore

        url, _, prefix = where.rpartition("|")
        return RedisStore(url, prefix=prefix, timeout_s=10)
    from memory_summary.adapters import PostgresStore

    dsn, _, schema = where.rpartition("|")
    return PostgresStore(dsn, schema=schema, timeout_s=10)


def generation(store, sid: str):
    record = store.get_metadata(NS, sid)
    return None if record is None else record.get("generation")


def poll(until, what: str):
    """Call ``until`` until it returns something truthy; fail after the deadline."""
    stop_at = time.monotonic() + DEADLINE_S
    while time.monotonic() < stop_at:
        found = until()
        if found:
            return found
        _pause.wait(0.001)
    report(event="timeout", waiting_for=what)
    sys.exit(1)


def race(store, sid: str, name: str, rounds: int) -> None:
    report(event="ready", name=name)
    sys.stdin.readline()  # the parent starts every racer at once
    for round_ in range(rounds):
        token = poll(
            lambda: store.acquire_lease(sid, owner=name, ttl_s=30), "the lease"
        )
        start = time.time()  # taken after acquiring ...
        expected = generation(store, sid)
        saved = store.save_message(sid, Message("user", f"{name} round {round_}"))
        active = [m for m in store.get_history(sid) if m.id <= saved.id]
        result = store.commit(
            CommitRequest(
                session_id=sid,
                namespace=NS,
                record={"generation": f"{name}-{round_}", "holder": name},
                expect_generation=expected,
                through_id=saved.id,
                expect_archived=len(active),
                lease=token,
            )
        )
        end = time.time()  # ... and before releasing
        store.release_lease(sid, token)
        _pause.wait(0.002)  # lets the others poll in, so the holder changes
        report(
            event="held",
            name=name,
            start=start,
            end=end,
            result=result.fenced or "committed",
        )


def stale(store, sid: str) -> None:
    token = store.acquire_lease(sid, owner="stale", ttl_s=0.3)
    expected = generation(store, sid)
    report(event="leased", token=token is not None)
    poll(lambda: generation(store, sid) != expected, "another commit")
    with_lease = store.commit(
        CommitRequest(
            session_id=sid,
            namespace=NS,
            record={"generation": "stale"},
            expect_generation=expected,
            lease=token,
        )
    )
    without_lease = store.commit(
        CommitRequest(
            session_id=sid,
            namespace=NS,
            record={"generation": "stale"},
            expect_generation=expected,
        )
    )
    report(
        event="stale",
        with_lease=with_lease.fenced,
        without_lease=without_lease.fenced,
        renewed=store.renew_lease(sid, token, ttl_s=1),
    )


def contend(store, sid: str, expect: str, new: str) -> None:
    token = store.acquire_lease(sid, owner="contender", ttl_s=30)
    result = store.commit(
        CommitRequest(
            session_id=sid,
            namespace=NS,
            record={"generation": new},
            expect_generation=expect,
        )
    )
    report(
        event="contended",
        acquired=token is not None,
        commit=result.fenced or "committed",
    )


def main(argv: list[str]) -> None:
    mode, target, sid, *rest = argv
    store = open_store(target)
    try:
        if mode == "race":
            race(store, sid, rest[0], int(rest[1]))
        elif mode == "stale":
            stale(store, sid)
        elif mode == "contend":
            contend(store, sid, rest[0], rest[1])
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    finally:
        store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
