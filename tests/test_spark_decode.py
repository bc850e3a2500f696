"""SparkRowDecoder.prepare gives exactly what the coordinator's transaction_writeset gives.

The catalog is the one the logs leave behind (the last version of the analysis's catalog
timeline, i.e. after every DDL of the log). For logs that alter tables mid-way that is not the
catalog each transaction was scheduled with, but both decoders get the same one, and equality of
the two is what is tested here; test_spark_analyze checks the per-transaction catalogs against
the real coordinator.
"""

from __future__ import annotations

import pickle
from dataclasses import replace

from engine.binlog.events import Query, RowsEvent, TableMap
from engine.relaylog.index import read_index
from engine.relaylog.stream import stream_events
from engine.spark.analyze import read_channel
from engine.spark.decode import (
    dumps_for_tasks,
    shipped_events,
    signed_hash,
    unsigned_hash,
)
from engine.transactions import Transaction, assemble

from .spark_fixture import FIXTURE_INDEX, generated_index, spark  # noqa: F401


def _transactions(index) -> list[Transaction]:
    return [t for t in assemble(stream_events(read_index(index))) if isinstance(t, Transaction)]


def _final_catalog(index):
    return read_channel("", index).catalogs[-1]


def _assert_same(spark_result, local_result):
    assert len(spark_result) == len(local_result)
    for ordinal, ((hashes, decoded), (want_hashes, want_decoded)) in enumerate(
        zip(spark_result, local_result, strict=True), start=1
    ):
        assert hashes == want_hashes, f"transaction {ordinal}: hashes differ"
        assert decoded.keys() == want_decoded.keys(), f"transaction {ordinal}: decoded events differ"
        for index, images in decoded.items():
            want = want_decoded[index]
            # field by field, so that a failure says which
            assert (images.kind, images.count) == (want.kind, want.count), (ordinal, index)
            assert images.before == want.before, (ordinal, index)
            assert images.after == want.after, (ordinal, index)
            assert images.columns == want.columns and images.table_map == want.table_map, (ordinal, index)


def test_what_travels_to_the_tasks_pickles_and_comes_back_equal():
    index = FIXTURE_INDEX["m2"]
    transactions = _transactions(index)
    catalog = _final_catalog(index)
    assert pickle.loads(pickle.dumps(catalog)) == catalog
    assert len(catalog) >= 3
    kinds = set()
    for txn in transactions:
        count, kept = shipped_events(txn)
        assert count == len(txn.events)
        arrived = pickle.loads(dumps_for_tasks(kept))
        for (index, event), (arrived_index, arrived_event) in zip(kept, arrived, strict=True):
            assert index == arrived_index
            # a rows event travels without its header (nothing in a task reads it), all else equal
            assert arrived_event == (replace(event, header=None) if isinstance(event, RowsEvent) else event)
        kinds.update(type(event) for _, event in kept)
        # only what transaction_writeset reads travels
        assert all(isinstance(txn.events[i].event, TableMap | RowsEvent | Query) for i, _ in kept)
    assert {TableMap, RowsEvent, Query} <= kinds


def test_hashes_survive_the_int64_round_trip():
    for value in (0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1):
        stored = signed_hash(value)
        assert -(1 << 63) <= stored < (1 << 63)
        assert unsigned_hash(stored) == value
