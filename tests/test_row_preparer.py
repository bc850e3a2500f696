"""The multi-threaded applier with its row decoding and writesets done elsewhere in batches (the
shape of the Spark pool), checked with an in-process preparer: same tables, batches cut at DDL."""

from __future__ import annotations

from engine.applier.executor import is_structural
from engine.applier.parallel import ParallelOptions
from engine.generate import generate
from engine.replay import ChannelRun, ChannelSpec, RunSettings
from engine.scheduling.rowkeys import transaction_writeset
from engine.slave.database import Slave

from .test_replay_oracle import assert_tables_equal
from .test_replica_server import transactions_of


class RecordingPreparer:
    """transaction_writeset in batches, remembering each batch and the catalog it saw."""

    def __init__(self) -> None:
        self.batches: list[list] = []  # type: ignore[type-arg]

    def prepare(self, transactions, catalog):  # type: ignore[no-untyped-def]
        self.batches.append([(t, set(catalog.keys())) for t in transactions])
        return [transaction_writeset(t, catalog) for t in transactions]


def test_prepared_in_batches_gives_the_same_tables(tmp_path):
    summary = generate("mixed", 4, tmp_path / "gen", size_mb=1.5)
    everything = transactions_of(summary.index_file)
    for kind in ("writeset", "logical_clock"):
        preparer = RecordingPreparer()
        slave_path = tmp_path / f"{kind}.duckdb"
        slave = Slave(slave_path)
        try:
            run = ChannelRun(
                slave,
                None,
                ChannelSpec("", summary.index_file),
                RunSettings(parallel=ParallelOptions(workers=3, parallel_type=kind), preparer=preparer),
            )
            run.start()
            run.join()
        finally:
            slave.close()
        assert run.outcome.error is None, run.outcome.error
        prepared = [t for batch in preparer.batches for t, _ in batch]
        # every transaction but those that change definitions (they run alone), each once
        assert [t.gtid for t in prepared] == [t.gtid for t in everything if not is_structural(t)]
        assert len(preparer.batches) > 1
        # every table a prepared transaction's rows name existed when it was prepared: batches
        # end before DDL, so no transaction was prepared against an older catalog
        for batch in preparer.batches:
            for txn, tables in batch:
                for images_table in {(m.schema, m.table) for m in _table_maps(txn)}:
                    assert images_table in tables, images_table
        expected = {
            (p.parent.name, p.stem): p for p in sorted((tmp_path / "gen" / "expected").glob("*/*.csv"))
        }
        assert_tables_equal(slave_path, expected)


def _table_maps(txn):  # type: ignore[no-untyped-def]
    from engine.binlog.events import TableMap

    return [e.event for e in txn.events if isinstance(e.event, TableMap)]
