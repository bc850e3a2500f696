"""Events -> transactions on the real MariaDB multi-source capture, checked against its census."""

from __future__ import annotations

from collections import Counter

import pytest

from engine.binlog.reader import LoggedEvent
from engine.relaylog.index import read_index
from engine.relaylog.stream import stream_events
from engine.transactions import Incomplete, Transaction, TransactionAssembler, assemble

from .conftest import MULTISOURCE


def channel_items(channel: str) -> list[Transaction | LoggedEvent | Incomplete]:
    logs = read_index(MULTISOURCE / "relay" / f"relay-bin-{channel}.index")
    return list(assemble(stream_events(logs)))


@pytest.mark.parametrize(
    ("channel", "transactions", "last_gtid", "standalone"),
    [("m1", 2145, "1-1-2145", 25), ("m2", 303, "2-2-303", 4)],
)
def test_every_gtid_of_a_channel_becomes_one_complete_transaction(
    channel, transactions, last_gtid, standalone
):
    items = channel_items(channel)
    groups = [i for i in items if isinstance(i, Transaction)]
    assert not [i for i in items if isinstance(i, Incomplete)]
    assert len(groups) == transactions
    assert [g.gtid for g in groups] == [
        f"{last_gtid.rsplit('-', 1)[0]}-{n}" for n in range(1, transactions + 1)
    ]
    assert groups[-1].gtid == last_gtid
    assert sum(1 for g in groups if g.is_ddl) == standalone
    # every row event belongs to exactly one transaction
    assert all(g.events[0].type_code == 162 for g in groups)


def test_transactions_know_the_databases_they_change():
    groups = [i for i in channel_items("m2") if isinstance(i, Transaction)]
    dml = [g for g in groups if g.row_events]
    assert dml and all(g.databases == frozenset({"shop"}) for g in dml)
    multi = [
        g for g in channel_items("m1") if isinstance(g, Transaction) and g.databases and len(g.databases) == 3
    ]
    # meta/mid.sql has exactly one ROW transaction over sbtest1+sbtest2+sbtest3
    assert len(multi) == 1
    assert multi[0].databases == frozenset({"sbtest1", "sbtest2", "sbtest3"})


def test_statement_events_stay_with_their_query():
    groups = [i for i in channel_items("m1") if isinstance(i, Transaction)]
    with_vars = [g for g in groups if any(e.type_code in (5, 13, 14) for e in g.events)]
    counts = Counter(e.type_code for g in with_vars for e in g.events if e.type_code in (5, 13, 14))
    assert counts == {5: 5, 13: 1, 14: 7}  # the census of meta/capture_events.json
    for g in with_vars:
        # a variable event is always followed, within its group, by the query that uses it
        codes = [e.type_code for e in g.events]
        last_var = max(i for i, c in enumerate(codes) if c in (5, 13, 14))
        assert 2 in codes[last_var + 1 :]


def test_positions_advance_and_name_the_source_binlog():
    groups = [i for i in channel_items("m2") if isinstance(i, Transaction)]
    assert all(g.source_log_file and g.source_log_file.startswith("master-bin.") for g in groups)
    ends = [(g.end.log_name, g.end.pos) for g in groups]
    assert ends == sorted(ends)
    assert all(g.source_end_pos > 0 for g in groups)


def test_a_transaction_cut_off_by_the_end_of_data_is_incomplete_not_handed_on():
    logs = read_index(MULTISOURCE / "relay" / "relay-bin-m2.index")
    events = list(stream_events(logs))
    # cut inside the last transaction: drop its closing XID
    last_xid = max(i for i, e in enumerate(events) if e.type_code == 16)
    assembler = TransactionAssembler()
    out = []
    for logged in events[:last_xid]:
        out.extend(assembler.feed(logged))
    tail = list(assembler.finish())
    assert len(tail) == 1 and isinstance(tail[0], Incomplete)
    assert sum(isinstance(i, Transaction) for i in out) == 302
    assert tail[0].events[0].type_code == 162


def test_coordinator_events_pass_between_groups():
    items = channel_items("m1")
    passed = Counter(i.event_type for i in items if isinstance(i, LoggedEvent))
    assert passed["Rotate"] == 26 and passed["Format_desc"] == 21 and passed["Gtid_list"] == 7
    assert passed["Binlog_checkpoint"] == 13
