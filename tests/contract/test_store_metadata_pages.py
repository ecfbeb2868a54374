"""Reading a metadata namespace page by page (``metadata_page``), on every store.

``engine.usage()`` and ``memory-summary stats`` scan every summary record this way:
pages in code-point order of the key, resumed after the last key, never stopping at
a row a foreign writer corrupted.
"""

from __future__ import annotations

import pytest

from memory_summary.domain import MetadataPages
from tests.contract.stores import write_raw_metadata


def all_pages(store, namespace, limit):
    pages, after = [], None
    while True:
        page = store.metadata_page(namespace, after_key=after, limit=limit)
        pages.append(page)
        if len(page) < limit:
            return pages
        after = page[-1][0]


def test_every_store_offers_metadata_pages(store):
    assert isinstance(store, MetadataPages)


def test_pages_hold_every_key_once_in_code_point_order(store, sid):
    ns = f"pages-{sid}"
    keys = [f"{sid}-{suffix}" for suffix in ("b", "a", "Z", "é", "中", "a1", "10", "9")]
    for index, key in enumerate(keys):
        store.save_metadata(ns, key, {"n": index})
    store.save_metadata(f"other-{sid}", keys[0], {"n": -1})

    pages = all_pages(store, ns, limit=3)

    seen = [pair for page in pages for pair in page]
    assert [key for key, _ in seen] == sorted(keys)  # Python sorts by code point
    assert dict(seen) == {key: {"n": index} for index, key in enumerate(keys)}
    assert [len(page) for page in pages] == [3, 3, 2]


def test_a_page_starts_after_the_given_key_and_honours_the_limit(store, sid):
    ns = f"pages-{sid}"
    for key in ("a", "b", "c", "d"):
        store.save_metadata(ns, key, {"k": key})

    page = store.metadata_page(ns, after_key="b", limit=1)

    assert page == [("c", {"k": "c"})]
    assert store.metadata_page(ns, after_key="d") == []
    assert store.metadata_page(ns, limit=0) == []
    assert store.metadata_page(f"empty-{sid}") == []


def test_a_negative_limit_is_refused(store, sid):
    with pytest.raises(ValueError, match="limit"):
        store.metadata_page(f"pages-{sid}", limit=-1)


def test_a_corrupt_row_reads_as_none_and_the_scan_goes_on(foreign_store, sid):
    ns = f"pages-{sid}"
    foreign_store.save_metadata(ns, "a", {"ok": 1})
    write_raw_metadata(foreign_store, ns, "b", "{not json")
    write_raw_metadata(foreign_store, ns, "c", "[1, 2]")
    foreign_store.save_metadata(ns, "d", {"ok": 4})

    page = foreign_store.metadata_page(ns)

    assert page == [("a", {"ok": 1}), ("b", None), ("c", None), ("d", {"ok": 4})]


def test_pages_are_copies_the_caller_may_change(store, sid):
    ns = f"pages-{sid}"
    store.save_metadata(ns, "a", {"list": [1]})

    store.metadata_page(ns)[0][1]["list"].append(2)

    assert store.metadata_page(ns) == [("a", {"list": [1]})]
