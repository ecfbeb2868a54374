"""``GenerationReadingStore``: a record the store wrote is told unchanged, exactly.

The SQL stores answer ``get_metadata_unless`` with ``(True, None)`` only while the row
holds the very text they last wrote at the key under the generation asked for;
whatever another program did to the row since (rewrote it, even keeping the
generation; deleted it) is read as ``get_metadata`` reads it.
"""

from __future__ import annotations

import json

from memory_summary.domain import NAMESPACE, GenerationReadingStore
from memory_summary.domain.capabilities import has_capability
from tests.contract.stores import run_sql, write_raw_metadata

RECORD = {"text": "Ada likes tea.", "tokens": 4, "generation": "g1", "usage": [1, 2]}


def test_an_unchanged_record_is_told_without_its_data(sql_store, sid):
    assert has_capability(sql_store, GenerationReadingStore)
    sql_store.save_metadata(NAMESPACE, sid, RECORD)

    assert sql_store.get_metadata_unless(NAMESPACE, sid, "g1") == (True, None)
    assert sql_store.get_metadata_unless(NAMESPACE, sid, "g1") == (True, None)


def test_another_generation_gets_the_record(sql_store, sid):
    sql_store.save_metadata(NAMESPACE, sid, RECORD)

    assert sql_store.get_metadata_unless(NAMESPACE, sid, "g0") == (False, RECORD)


def test_a_foreign_rewrite_is_read_even_under_the_same_generation(sql_store, sid):
    sql_store.save_metadata(NAMESPACE, sid, RECORD)
    theirs = {**RECORD, "text": "Ada likes coffee."}
    write_raw_metadata(sql_store, NAMESPACE, sid, json.dumps(theirs))

    same, data = sql_store.get_metadata_unless(NAMESPACE, sid, "g1")

    assert (same, data) == (False, theirs)
    data["text"] = "the caller's own copy"  # type: ignore[index]
    assert sql_store.get_metadata(NAMESPACE, sid) == theirs


def test_a_foreign_delete_reads_as_no_record(sql_store, sid):
    sql_store.save_metadata(NAMESPACE, sid, RECORD)
    run_sql(
        sql_store,
        "DELETE FROM {t}metadata WHERE namespace = ? AND key = ?",
        (NAMESPACE, sid),
    )

    assert sql_store.get_metadata_unless(NAMESPACE, sid, "g1") == (False, None)


def test_a_record_this_store_did_not_write_is_read_in_full(sql_store, sid):
    write_raw_metadata(sql_store, NAMESPACE, sid, json.dumps(RECORD))

    assert sql_store.get_metadata_unless(NAMESPACE, sid, "g1") == (False, RECORD)
