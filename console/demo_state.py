"""A made-up replica frozen in one interesting moment, for the screenshots and the snapshot tests.

Six channels (one lagging badly, one stopped by an error with gaps to recover, two that receive from
their source themselves, one of them refused by it), fixed numbers, a fixed clock and two minutes
of history, so that every view renders the same on every machine.
The relay-log browser reads real events: SHOW RELAYLOG EVENTS for channel m2 goes to a real
ReplicaServer over the bundled MariaDB capture (it applies nothing).
"""

from __future__ import annotations

import calendar
import math
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from engine.api import (
    ChannelView,
    GroupAfterLwm,
    PoolSlotView,
    PoolView,
    ReceiverView,
    RecoveryPicture,
    ReplicaServer,
    Result,
    ShowRelaylogEvents,
    ShowReplicaStatus,
    Snapshot,
    StartReplica,
    WorkerCheckpointRow,
    WorkerView,
    already_running,
    channel_does_not_exist,
    parse_statement,
)

from .cli.events import BUNDLED_RELAY_LOG

SOURCE = "demo: a frozen, made-up state"
TAKEN_AT = float(calendar.timegm((2025, 6, 2, 9, 41, 0)))
HISTORY_STEP_S = 0.5
HISTORY_SAMPLES = 240  # two minutes
M2_INDEX = BUNDLED_RELAY_LOG / "relay-bin-m2.index"
OLTP_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
BANK_UUID = "8a94f357-aab4-11df-86ab-c80aa9429562"

CHANNELS = (
    ChannelView(
        "bank",
        "error",
        "10.0.1.12:3306",
        "relay-bin.000007:812344",
        "relay-bin.000006:1048211",
        f"{BANK_UUID}:1-5512",
        5512,
        0.0,
        95.0,
        0,
        2,
        0.0,
        "Error 1062: Duplicate entry '17' for key 'accounts.PRIMARY' "
        f"(transaction {BANK_UUID}:5513 at relay-bin.000006:1048211)",
        "binlog.000003:7712311",
        "2025-06-02 09:39:25.121877",
    ),
    ChannelView(
        "m1", "running", "127.0.0.1:3407", "relay-bin-m1.000014:388802", "relay-bin-m1.000014:388802",
        "0-1-2145", 2145, 0.0, 0.0, 0, 0, 0.0, "", "master-bin.000004:2291840",
    ),
    ChannelView(
        "m2", "running", "127.0.0.1:3408", "relay-bin-m2.000002:269875", "relay-bin-m2.000002:17419",
        "0-2-28", 28, 18.5, 12.4, 0, 0, 0.0, "", "master-bin.000001:30151",
    ),
    ChannelView(
        "oltp", "running", "10.0.1.11:3306", "relay-bin.000019:655360", "relay-bin.000019:402011",
        f"{OLTP_UUID}:1-48213", 48213, 412.7, 2.3, 3, 4, 0.42, "", "binlog.000011:6120433",
    ),
    # received: relaydeck is the replica, its receiver a little ahead of its applier
    ChannelView(
        "shop", "running", "10.0.2.20:3306", "relay-bin-shop.000003:524288", "relay-bin-shop.000003:517044",
        "0-20-88209", 88209, 121.4, 0.2, 0, 0, 0.0, "", "source-bin.000042:91540211", "",
        ReceiverView("running", "Waiting for source to send event", "source-bin.000042:91547455",
                     "0-20-88214", "", ""),
    ),
    # received, until its source refused the replication user: applied all it got, retrying
    ChannelView(
        "web", "waiting", "10.0.2.21:3306", "relay-bin-web.000001:1843200", "relay-bin-web.000001:1843200",
        "0-21-9120", 9120, 0.0, 0.0, 0, 0, 0.0, "", "source-bin.000007:1843012", "",
        ReceiverView("connecting", "Connecting to source", "source-bin.000007:1843012", "0-21-9120",
                     "Error 1045: error reconnecting to source 'repl@10.0.2.21:3306' - retry-time: 60 "
                     "retries: 4 message: Access denied for user 'repl'@'10.0.2.5' (using password: YES)",
                     "2025-06-02 09:40:31.207514"),
    ),
)  # fmt: skip

WORKERS = {
    "oltp": (
        WorkerView("oltp", 1, "applying", f"{OLTP_UUID}:48217", 31, 187_392, 12_204, 104.2,
                   f"{OLTP_UUID}:48213", "2025-06-02 09:40:59.804113", 409, ""),
        WorkerView("oltp", 2, "waiting for a dependency", f"{OLTP_UUID}:48215", 12, 70_144, 12_011, 101.9,
                   f"{OLTP_UUID}:48209", "2025-06-02 09:40:59.771006", 405, ""),
        WorkerView("oltp", 3, "waiting for commit order", f"{OLTP_UUID}:48216", 9, 52_736, 11_987, 103.0,
                   f"{OLTP_UUID}:48212", "2025-06-02 09:40:59.798311", 408, ""),
        WorkerView("oltp", 4, "idle", "", 0, 0, 12_011, 103.6,
                   f"{OLTP_UUID}:48211", "2025-06-02 09:40:59.790452", 407, ""),
    ),
    "bank": (
        WorkerView("bank", 1, "error", "", 0, 0, 2_790, 0.0, f"{BANK_UUID}:5515",
                   "2025-06-02 09:39:25.118020", 40,
                   "Error 1062: Duplicate entry '17' for key 'accounts.PRIMARY'"),
        WorkerView("bank", 2, "stopped", "", 0, 0, 2_722, 0.0, f"{BANK_UUID}:5520",
                   "2025-06-02 09:39:25.120544", 37, ""),
    ),
    "m1": (),
    "m2": (),
    "shop": (),
    "web": (),
}  # fmt: skip

# oltp's 4 workers are fed by 2 local processes (one per core); bank's in-process pool stopped
# with it; the others run the single applier, which has none.
POOLS = {
    "oltp": PoolView("oltp", "processes", 2, 37, 912, 3, (
        PoolSlotView("process 1", "preparing", "relay-bin.000019:4194821"),
        PoolSlotView("process 2", "preparing", "relay-bin.000020:389"),
    )),
    "bank": PoolView("bank", "threads", 1, 6, 118, 0, (PoolSlotView("in-process", "stopped", ""),)),
}  # fmt: skip

_GAPS = {5513, 5517, 5518}
BANK_RECOVERY = RecoveryPicture(
    "bank",
    5512,
    "relay-bin.000006:1048211",
    "binlog.000003:7712311",
    9,
    tuple(
        GroupAfterLwm(
            ordinal,
            f"{BANK_UUID}:{ordinal}",
            f"relay-bin.000006:{1048211 + (ordinal - 5513) * 812}",
            f"relay-bin.000006:{1048211 + (ordinal - 5512) * 812}",
            None if ordinal in _GAPS else 1 + ordinal % 2,
        )
        for ordinal in range(5513, 5525)
    ),
    (
        WorkerCheckpointRow(
            1, "relay-bin.000006:1056331", "relay-bin.000006:1015731", 40, 64, "1" * 36 + "0101"
        ),
        WorkerCheckpointRow(
            2, "relay-bin.000006:1057143", "relay-bin.000006:1017355", 37, 64, "1" * 33 + "0011"
        ),
    ),
    None,
    (
        "read from the low-water mark relay-bin.000006:1048211; skip the 9 transactions committed after it",
        f"apply gap #5513 ({BANK_UUID}:5513, relay log relay-bin.000006:1048211) alone",
        f"apply gap #5517 ({BANK_UUID}:5517, relay log relay-bin.000006:1051459) alone",
        f"apply gap #5518 ({BANK_UUID}:5518, relay log relay-bin.000006:1052271) alone",
        "move the low-water mark to #5524 (relay-bin.000006:1058019), then resume in parallel",
    ),
)

STATUS_COLUMNS = (
    "Channel_Name", "Source_Host", "Source_Port", "Relay_Log_File", "Relay_Log_Pos", "Replica_SQL_Running",
    "Seconds_Behind_Source", "Last_SQL_Errno", "Last_SQL_Error", "Executed_Gtid_Set", "SQL_Delay",
    "Replica_IO_Running", "Replica_IO_State", "Source_Log_File", "Read_Source_Log_Pos", "Retrieved_Gtid_Set",
    "Last_IO_Errno", "Last_IO_Error",
)  # fmt: skip
_IO_RUNNING = {"running": "Yes", "connecting": "Connecting"}


def recent_snapshots() -> list[Snapshot]:
    """Two minutes of snapshots ending with the frozen one: throughput and lag that move."""
    snapshots = []
    for step in range(HISTORY_SAMPLES):
        age = (HISTORY_SAMPLES - 1 - step) * HISTORY_STEP_S
        wave = math.sin(step / 9.0)
        channels = []
        for channel in CHANNELS:
            if channel.name == "oltp":
                channel = replace(
                    channel,
                    trx_per_s=round(380 + 60 * wave + step * 0.3, 1),
                    lag_s=round(1.5 + abs(wave) * 2, 1),
                )
            elif channel.name == "m2":
                channel = replace(
                    channel, trx_per_s=round(20 + 5 * wave, 1), lag_s=round(step / 20.0 + 0.4, 1)
                )
            elif channel.name == "shop":
                channel = replace(channel, trx_per_s=round(120 + 15 * wave, 1))
            elif channel.name == "bank" and age > 95:
                channel = replace(
                    channel, state="running", trx_per_s=round(90 + 10 * wave, 1), lag_s=0.4, last_error=""
                )
            channels.append(channel)
        snapshots.append(Snapshot(TAKEN_AT - age, tuple(channels), dict(WORKERS), dict(POOLS)))
    snapshots[-1] = snapshot()
    return snapshots


def snapshot() -> Snapshot:
    return Snapshot(TAKEN_AT, CHANNELS, dict(WORKERS), dict(POOLS))


class DemoReplica:
    """A ReplicaHandle over the frozen state (statements that change things change nothing)."""

    def __init__(self) -> None:
        self.executed: list[str] = []
        self._history = recent_snapshots()
        self._folder = Path(tempfile.mkdtemp(prefix="relaydeck-demo-"))
        self._relay = ReplicaServer(
            self._folder / "slave.duckdb", self._folder / "repository.sqlite", follow=False
        )
        self._relay.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M2_INDEX}' FOR CHANNEL 'm2'")

    def execute(self, statement: str) -> Result:
        command = parse_statement(statement)
        channel = getattr(command, "channel", None)
        names = [c.name for c in CHANNELS]
        if channel is not None and channel not in names:
            raise channel_does_not_exist(channel)
        self.executed.append(statement)
        if isinstance(command, ShowRelaylogEvents):
            return self._relay.execute(statement)
        if isinstance(command, ShowReplicaStatus):
            return Result(STATUS_COLUMNS, [_status_row(c) for c in CHANNELS if channel in (None, c.name)])
        if isinstance(command, StartReplica):
            running = [c.name for c in CHANNELS if _running(c, command.threads) and channel in (None, c.name)]
            return Result(warnings=[already_running(name) for name in running])
        return Result()

    def snapshot(self) -> Snapshot:
        """The next snapshot of the two minutes (the frozen one once they are over)."""
        return self._history.pop(0) if self._history else snapshot()

    def rest_of_history(self) -> list[Snapshot]:
        """What snapshot() would still return before the frozen one: fed to a console that does not poll."""
        rest, self._history = self._history, []
        return rest

    def recovery(self, channel: str) -> RecoveryPicture:
        if channel == "bank":
            return BANK_RECOVERY
        view = next(c for c in CHANNELS if c.name == channel)
        position = view.relay_applied
        return RecoveryPicture(
            channel, view.transactions, position, None, 0, (), (), None,
            (f"no gaps: resume from the low-water mark ({position})",),
        )  # fmt: skip

    def kill(self, channel: str | None = None) -> None:
        self.executed.append(f"kill {channel}")

    def relay_log_index(self, channel: str) -> str:
        return self._relay.relay_log_index(channel)

    def close(self) -> None:
        self._relay.close()
        shutil.rmtree(self._folder, ignore_errors=True)


def _running(c: ChannelView, threads: tuple[str, ...]) -> bool:
    """Whether the threads a START names (none: both) run already: each that the channel has."""
    io = c.receiver is not None and c.receiver.state in _IO_RUNNING
    sql = c.state in ("running", "waiting")
    if threads == ("IO_THREAD",):
        return io
    if threads == ("SQL_THREAD",):
        return sql
    return sql and (io or c.receiver is None)


def _status_row(c: ChannelView) -> tuple[object, ...]:
    file, _, pos = c.relay_applied.rpartition(":")
    host, _, port = c.source.rpartition(":")
    io = c.receiver
    read_file, _, read_pos = io.read.rpartition(":") if io else ("", "", "4")
    return (
        c.name, host, int(port), file, int(pos), "Yes" if c.state in ("running", "waiting") else "No",
        None if c.lag_s is None or c.state != "running" else int(c.lag_s), *_errno_error(c.last_error),
        c.executed_gtids, 0, _IO_RUNNING.get(io.state, "No") if io else "No", io.io_state if io else "",
        read_file, int(read_pos), io.retrieved_gtids if io else "", *_errno_error(io.last_error if io else ""),
    )  # fmt: skip


def _errno_error(error: str) -> tuple[int, str]:
    """ "Error N: message" as SHOW REPLICA STATUS's two columns."""
    if not error:
        return 0, ""
    errno, _, message = error.partition(": ")
    return int(errno.removeprefix("Error ")), message
