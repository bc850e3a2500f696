"""The replica as a DBA drives it: channels in the repository, the MySQL replication statements.

A ReplicaServer owns one DuckDB slave and one repository. Channels live in the repository
(created by CHANGE REPLICATION SOURCE TO … FOR CHANNEL, WL#1697); START runs a channel's
coordinator and workers in this process; every statement follows WL#1697's rules on which
channel it acts on and fails with MySQL's error numbers (engine/replica/errors.py).

Differences from MySQL a DBA should know:
- START REPLICA IO_THREAD runs the channel's receiver (engine/replica/receiving.py) from
  SOURCE_HOST/PORT/USER/PASSWORD into RELAY_LOG's relay logs, until caught up (without follow)
  or STOP REPLICA IO_THREAD. START REPLICA starts it too for a channel with SOURCE_HOST and
  SOURCE_USER (without follow, the applier starts once it caught up); a SOURCE_HOST alone is a
  label of relay logs another replica writes. STOP REPLICA stops both.
- RESET REPLICA never deletes relay-log files: they belong to the server that wrote them. It
  makes the channel read them from the start again. Executed GTIDs stay, as gtid_executed does
  on MySQL, so GTID transactions already applied are skipped.
- The applier options (replica_parallel_*, …) may also be set per channel with CHANGE
  REPLICATION SOURCE TO; SET GLOBAL sets them for channels that do not.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..applier.controls import StartControls
from ..applier.recovery import RecoveryPicture, recovery_pictures
from ..applier.vocabulary import POOLS, BatchLimits, CommitCallback, ParallelOptions, Until, gtid_set_text
from ..binlog.reader import BinlogFile, ReaderState
from ..errors import RelaydeckError
from ..relaylog.index import channel_relay_log_names, read_index
from ..replay import STATUS_INTERVAL_S, ChannelRun, ChannelSpec, RunSettings
from ..repository import MAX_CHANNELS, ChannelStatus, Repository
from ..slave.database import Slave
from . import variables as v
from .commands import (
    ChangeSource,
    ResetReplica,
    SetVariables,
    ShowRelaylogEvents,
    ShowReplicaStatus,
    StartReplica,
    StopReplica,
    UntilClause,
    Value,
    parse_statement,
)
from .errors import (
    ER_BAD_SLAVE,
    ER_ERROR_WHEN_EXECUTING_COMMAND,
    ER_MALFORMED_GTID_SET_SPECIFICATION,
    ER_MTS_CHANGE_MASTER_CANT_RUN_WITH_GAPS,
    ER_NOT_SUPPORTED_YET,
    ER_RELAY_LOG_INIT,
    ER_SLAVE_MAX_CHANNELS_EXCEEDED,
    ER_UNKNOWN_TARGET_BINLOG,
    ER_WRONG_ARGUMENTS,
    CommandError,
    Warning_,
    already_running,
    already_stopped,
    channel_does_not_exist,
    checked_channel_name,
    for_channel,
    multiple_channels,
    must_stop,
    parse_error,
    same_host_port,
)
from .monitor import read_snapshot
from .receiving import ReceiverRun, receives_from_source, recover_relay_tail
from .views import Result, Snapshot

# CHANGE REPLICATION SOURCE TO options recorded in master_info (display; no connection is made)
_MASTER_INFO_OPTIONS = {
    "SOURCE_HOST": ("Host", "string"),
    "SOURCE_PORT": ("Port", "port"),
    "SOURCE_USER": ("User_name", "string"),
    "SOURCE_LOG_FILE": ("Master_log_name", "string"),
    "SOURCE_LOG_POS": ("Master_log_pos", "uint"),
    "SOURCE_CONNECT_RETRY": ("Connect_retry", "uint"),
    "SOURCE_RETRY_COUNT": ("Retry_count", "uint"),
    "SOURCE_HEARTBEAT_PERIOD": ("Heartbeat", "period"),
    "SOURCE_USE_GTID": ("Using_gtid", "use_gtid"),  # MariaDB's MASTER_USE_GTID
    "SOURCE_AUTO_POSITION": ("Enabled_auto_position", "bool01"),
    "SOURCE_BIND": ("Bind", "string"),
    "SOURCE_PASSWORD": ("User_password", "string"),  # in the 0600 repository; never shown
    # TLS, as MySQL's replica uses them (engine/receiver/connection.py)
    "SOURCE_SSL": ("Enabled_ssl", "bool01"),
    "SOURCE_SSL_CA": ("Ssl_ca", "path"),
    "SOURCE_SSL_CAPATH": ("Ssl_capath", "path"),
    "SOURCE_SSL_CERT": ("Ssl_cert", "path"),
    "SOURCE_SSL_KEY": ("Ssl_key", "path"),
    "SOURCE_SSL_CIPHER": ("Ssl_cipher", "string"),
    "SOURCE_SSL_VERIFY_SERVER_CERT": ("Ssl_verify_server_cert", "bool01"),
}
# The options that are 0 or 1 (a configuration file may write them true or false)
FLAG_OPTIONS = {option for option, (_, kind) in _MASTER_INFO_OPTIONS.items() if kind == "bool01"}
# The options that name a file or a folder (a configuration file's are relative to it)
PATH_OPTIONS = {option for option, (_, kind) in _MASTER_INFO_OPTIONS.items() if kind == "path"}
# SOURCE_USE_GTID as MariaDB shows it (Using_Gtid); REPLICA_POS is MariaDB 11's word for SLAVE_POS
_USE_GTID = {"SLAVE_POS": "Slave_Pos", "REPLICA_POS": "Slave_Pos", "CURRENT_POS": "Current_Pos", "NO": "No"}
MAX_HEARTBEAT_PERIOD = 4294967  # seconds
ER_SLAVE_HEARTBEAT_VALUE_OUT_OF_RANGE = 1703
ER_BAD_REPLICA_AUTO_POSITION = 1776
_RELAY_OPTIONS = {"RELAY_LOG_INDEX", "RELAY_LOG", "RELAY_LOG_FILE", "RELAY_LOG_POS"}
_APPLIER_OPTIONS = {name.upper() for name, var in v.VARIABLES.items() if var.per_channel}
CHANGE_OPTIONS = set(_MASTER_INFO_OPTIONS) | _RELAY_OPTIONS | _APPLIER_OPTIONS | {"SOURCE_DELAY"}
# What may change while the channel's applier runs: it only reads the rest at START.
_WHILE_RUNNING = set(_MASTER_INFO_OPTIONS)


class ReplicaServer:
    """Channels of one repository applying into one slave, driven by replication statements.

    follow: STARTed channels keep applying as their relay logs grow (a server on a replica host);
    without it a START applies what the relay logs hold and the channel stops at their end.
    """

    def __init__(
        self,
        slave_path: str | Path,
        repository_path: str | Path,
        *,
        follow: bool = True,
        limits: BatchLimits | None = None,
        on_commit: CommitCallback | None = None,
        pool: str = "processes",
        spark_master: str | None = None,
    ) -> None:
        """pool: where the relay log is prepared for channels with replica_parallel_workers > 0
        ("processes", "spark" or "threads", see engine/pool); spark_master: a cluster URL, else
        local mode."""
        if pool not in POOLS:
            raise RelaydeckError(f"the worker pool is one of {', '.join(POOLS)}, not {pool!r}")
        self.pool = pool
        self.spark_master = spark_master
        self.repository = Repository(repository_path)
        self.slave_path = Path(slave_path).resolve()
        self.slave = Slave(self.slave_path)
        self.repository.set_slave_path(str(self.slave_path))
        self.follow = follow
        self.limits = limits
        self.on_commit = on_commit
        self._runs: dict[str, ChannelRun] = {}  # by lower-cased name: names are case-insensitive
        self._receivers: dict[str, ReceiverRun] = {}  # START REPLICA IO_THREAD, by lower-cased name
        self._lock = threading.RLock()  # one statement at a time, as MySQL's channel map lock
        self._closed = threading.Event()
        self._published_last: set[ChannelRun] = set()  # runs that ended and whose last state is out
        for name in self.repository.channels():
            self._mark_stopped(name)  # a previous process that died cannot have left any running
        self._publisher = threading.Thread(target=self._publish_loop, name="status-publisher", daemon=True)
        self._publisher.start()

    # -- the API ---------------------------------------------------------------------------------

    def execute(self, statement: str | object) -> Result:
        """Run one replication statement (text or a parsed command); CommandError when it fails."""
        command = parse_statement(statement) if isinstance(statement, str) else statement
        handlers = {
            ChangeSource: self._change,
            StartReplica: self._start,
            StopReplica: self._stop,
            ResetReplica: self._reset,
            ShowReplicaStatus: self._show_status,
            ShowRelaylogEvents: self._show_relaylog_events,
            SetVariables: self._set,
        }
        handler = handlers.get(type(command))
        if handler is None:
            raise parse_error(str(statement))
        with self._lock:
            if self._closed.is_set():
                raise CommandError(ER_NOT_SUPPORTED_YET, "the replica server is shutting down")
            return handler(command)  # type: ignore[operator]

    def status(self, channel: str | None = None) -> list[ChannelStatus]:
        return self.repository.status(channel)

    def snapshot(self) -> Snapshot:
        """What the console shows (engine/replica/monitor.py)."""
        return read_snapshot(self.repository)

    def recovery(self, channel: str) -> RecoveryPicture:
        """The recovery picture of a channel, from this server's own slave connection."""

        name = self._existing(channel)
        session = self.slave.session()
        try:
            (picture,) = recovery_pictures(session, self.repository, name)
        finally:
            session.close()
        return picture

    def kill(self, channel: str | None = None) -> None:
        """KILL the channel's applier (all channels with None): workers drop what they hold, the
        next START recovers the gaps. For an operator whose STOP would wait too long."""
        with self._lock:
            targets = self._targets(channel)
            runs = [self._runs[n.lower()] for n in targets if self.running(n)]
            for run in runs:
                run.kill.set()
                run.stop.set()
            for run in runs:
                run.join()
                run.publish(self.slave)

    def relay_log_index(self, channel: str) -> str:
        return self._index_of(self._existing(channel))

    def running(self, channel: str) -> bool:
        run = self._runs.get(channel.lower())
        return run is not None and run.is_alive()

    def receiving(self, channel: str) -> bool:
        """Whether START REPLICA IO_THREAD's receiver of the channel runs."""
        receiver = self._receivers.get(channel.lower())
        return receiver is not None and receiver.is_alive()

    def run_of(self, channel: str) -> ChannelRun | None:
        """The channel's current (or last) START in this process, for inspection."""
        return self._runs.get(channel.lower())

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no channel runs (they reached their end or UNTIL, failed, or were stopped)."""
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        for run in [*self._receivers.values(), *self._runs.values()]:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            run.join(left)
        done = not any(r.is_alive() for r in [*self._receivers.values(), *self._runs.values()])
        if done:
            self._publish_once()
        return done

    def close(self) -> None:
        """STOP every channel (as SIGTERM does), publish their final state, close the files."""
        with self._lock:
            for receiver in self._receivers.values():
                receiver.stop.set()
            for receiver in self._receivers.values():
                receiver.join()
            running = [name for name, run in self._runs.items() if run.is_alive()]
            for name in running:
                self._runs[name].stop.set()
            for name in running:
                self._runs[name].join()
            self._closed.set()
        self._publisher.join()
        self._publish_once()
        self.repository.close()
        self.slave.close()

    # -- WL#1697's channel rules ---------------------------------------------------------------

    def _channel_names(self) -> list[str]:
        return self.repository.channels()

    def _existing(self, channel: str) -> str:
        return existing_channel(self.repository, channel)

    def _single(self, channel: str | None) -> str:
        """Statements that act on one channel: without FOR CHANNEL, only while there is one."""
        if channel is None:
            if len(self._channel_names()) > 1:
                raise multiple_channels()
            return ""
        return self._existing(channel)

    def _targets(self, channel: str | None) -> list[str]:
        """Statements that act on every channel without FOR CHANNEL."""
        return self._channel_names() if channel is None else [self._existing(channel)]

    def _index_of(self, name: str) -> str:
        return _relay_log_index(self.repository, name)

    # -- CHANGE REPLICATION SOURCE TO -----------------------------------------------------------

    def _change(self, cmd: ChangeSource) -> Result:
        names = self._channel_names()
        if cmd.channel is None:
            if len(names) > 1:
                raise multiple_channels()
            name = ""
        else:
            name = self.repository.find_channel(checked_channel_name(cmd.channel)) or cmd.channel
        options = dict(cmd.options)
        for option in options:
            if option not in CHANGE_OPTIONS:
                raise parse_error(f"{option} = ...")
        warnings: list[Warning_] = []
        exists = self.repository.find_channel(name) is not None
        if self.running(name) and set(options) - _WHILE_RUNNING:
            raise must_stop(name)
        if self.receiving(name) and set(options) & (
            set(_MASTER_INFO_OPTIONS) | {"RELAY_LOG", "RELAY_LOG_INDEX"}
        ):
            raise must_stop(name)  # the receiver reads them at START REPLICA IO_THREAD
        if not exists and len(names) >= MAX_CHANNELS:
            raise CommandError(
                ER_SLAVE_MAX_CHANNELS_EXCEEDED, "Maximum number of replication channels allowed exceeded."
            )

        master_info: dict[str, Any] = {}
        for option, (column, kind) in _MASTER_INFO_OPTIONS.items():
            if option in options:
                master_info[column] = _option_value(option, options[option], kind)
        if master_info.get("Using_gtid", "No") != "No" and {"SOURCE_LOG_FILE", "SOURCE_LOG_POS"} & set(
            options
        ):
            raise CommandError(
                ER_WRONG_ARGUMENTS, "SOURCE_LOG_FILE/SOURCE_LOG_POS cannot be given with SOURCE_USE_GTID"
            )
        current = (self.repository.master_info(name) or {}) if exists else {}
        auto_position = master_info.get("Enabled_auto_position", current.get("Enabled_auto_position"))
        if auto_position and {"SOURCE_LOG_FILE", "SOURCE_LOG_POS", "RELAY_LOG_FILE", "RELAY_LOG_POS"} & set(
            options
        ):
            raise CommandError(
                ER_BAD_REPLICA_AUTO_POSITION,
                "Parameters SOURCE_LOG_FILE, SOURCE_LOG_POS, RELAY_LOG_FILE and RELAY_LOG_POS cannot be "
                "set when SOURCE_AUTO_POSITION is active.",
            )
        if master_info.get("Enabled_auto_position") and master_info.get("Using_gtid", "No") != "No":
            raise CommandError(
                ER_WRONG_ARGUMENTS,
                "SOURCE_AUTO_POSITION (MySQL's GTIDs) and SOURCE_USE_GTID (MariaDB's) cannot both be given",
            )
        if master_info.get("Enabled_auto_position"):
            master_info["Using_gtid"] = "No"  # one GTID positioning at a time: the last one given
        elif "SOURCE_USE_GTID" in options and master_info["Using_gtid"] != "No":
            master_info["Enabled_auto_position"] = 0
        if {"SOURCE_LOG_FILE", "SOURCE_LOG_POS"} & set(options):
            master_info["Using_gtid"] = "No"  # a file and position given: positioned by them, as MariaDB
        host = master_info.get("Host", current.get("Host"))
        port = master_info.get("Port", current.get("Port", 3306))
        if host and ("Host" in master_info or "Port" in master_info):
            for other in names:
                if other.lower() == name.lower():
                    continue
                mi = self.repository.master_info(other) or {}
                if mi.get("Host") == host and mi.get("Port") == port:
                    raise same_host_port(other)

        relay_log_info: dict[str, Any] = {}
        index = self._index_of(name) if exists else ""
        if "RELAY_LOG_INDEX" in options and "RELAY_LOG" in options:
            raise CommandError(ER_WRONG_ARGUMENTS, "Give RELAY_LOG or RELAY_LOG_INDEX, not both")
        if "RELAY_LOG_INDEX" in options:
            index = str(Path(options["RELAY_LOG_INDEX"].as_text()).expanduser().resolve())
            relay_log_info["Relay_log_index"] = index
        elif "RELAY_LOG" in options:
            index = str(_channel_index(options["RELAY_LOG"].as_text(), name))
            relay_log_info["Relay_log_index"] = index
        if "SOURCE_DELAY" in options:
            relay_log_info["Sql_delay"] = _option_value("SOURCE_DELAY", options["SOURCE_DELAY"], "delay")

        channel_options: dict[str, Any] = {}
        for option in _APPLIER_OPTIONS & set(options):
            var = v.VARIABLES[option.lower()]
            value = options[option]
            if value.kind == "default":
                channel_options[var.name] = None
            else:
                converted = v.convert(var, value.kind, value.text)
                channel_options[var.name] = int(converted) if var.kind == "bool" else converted

        position = None
        if "RELAY_LOG_FILE" in options or "RELAY_LOG_POS" in options:
            position = self._relay_position(name, index, options)

        # Everything checked: now write (a new channel is created by the first write).
        self.repository.ensure_channel(name)
        if master_info:
            self.repository.update_master_info(name, **master_info)
        if "SOURCE_LOG_FILE" in options or "SOURCE_LOG_POS" in options:
            self.repository.forget_received(name)  # the receiver starts there next time
        if relay_log_info:
            self.repository.update_relay_log_info(name, **relay_log_info)
        if channel_options:
            self.repository.set_channel_options(name, **channel_options)
        if position is not None:
            self.slave.set_relay_position(name, *position)
            self.repository.update_relay_log_info(name, Relay_log_name=position[0], Relay_log_pos=position[1])
        return Result(warnings=warnings)

    def _relay_position(self, name: str, index: str, options: dict[str, Value]) -> tuple[str, int]:
        progress = self.slave.progress(name)
        if self.slave.commits_after(name, progress.transactions if progress else 0):
            raise CommandError(
                ER_MTS_CHANGE_MASTER_CANT_RUN_WITH_GAPS,
                "CHANGE MASTER cannot be executed when the slave was stopped with an error or killed in "
                "MTS mode. Consider using RESET SLAVE or START SLAVE UNTIL.",
            )
        if not index:
            raise CommandError(
                ER_RELAY_LOG_INIT,
                "Failed initializing relay log position: the channel has no relay log (give RELAY_LOG_INDEX)",
            )
        try:
            files = read_index(index).files
        except RelaydeckError as exc:
            raise CommandError(
                ER_RELAY_LOG_INIT, f"Failed initializing relay log position: {exc.one_line()}"
            ) from None
        if "RELAY_LOG_FILE" in options:
            file_name = Path(options["RELAY_LOG_FILE"].as_text()).name
        else:
            file_name = (progress.relay_log_file if progress else None) or files[0].name
        path = next((p for p in files if p.name == file_name), None)
        if path is None:
            raise CommandError(
                ER_RELAY_LOG_INIT,
                "Failed initializing relay log position: Could not find target log during relay log "
                f"initialization ({file_name} is not in {index})",
            )
        pos = options["RELAY_LOG_POS"].as_int() if "RELAY_LOG_POS" in options else 4
        size = path.stat().st_size
        if pos < 4 or pos > size:
            raise CommandError(
                ER_RELAY_LOG_INIT,
                f"Failed initializing relay log position: position {pos} is outside {file_name} (4 to {size})",
            )
        if pos > 4 and not _event_starts_at(path, pos):
            raise CommandError(
                ER_RELAY_LOG_INIT,
                f"Failed initializing relay log position: no event starts at {file_name}:{pos}",
            )
        return file_name, pos

    # -- START / STOP ---------------------------------------------------------------------------

    def _start(self, cmd: StartReplica) -> Result:
        warnings: list[Warning_] = []
        targets = start_targets(self.repository, cmd)
        started: list[ReceiverRun] = []
        if "IO_THREAD" in cmd.threads:
            for name in targets:
                if self.receiving(name):
                    warnings.append(already_running(name))
                    continue
                if not (self.repository.master_info(name) or {}).get("Host"):
                    raise _not_configured(name, "CHANGE REPLICATION SOURCE TO SOURCE_HOST")
                started.append(self._start_receiver(name))
            if "SQL_THREAD" not in cmd.threads:
                return Result(warnings=warnings)
        elif not cmd.threads:
            # START REPLICA: both threads of a channel that has a source to connect to
            for name in targets:
                if receives_from_source(self.repository, name) and not self.receiving(name):
                    started.append(self._start_receiver(name))
        if not self.follow:
            for receiver in started:  # without follow, the applier applies what was received
                receiver.join()
        until = _until(cmd.until)
        for name in targets:
            if self.running(name):
                warnings.append(already_running(name))
                continue
            self._start_channel(name, cmd.until, until)
        return Result(warnings=warnings)

    def _start_receiver(self, name: str) -> ReceiverRun:
        progress = self.slave.progress(name)
        executed = progress.executed_gtids if progress is not None else ""
        if not self.running(name):
            # after a crash the last relay file may end inside an event: cut before the applier
            # follows it, never under it (the receiver then goes on after the whole transactions)
            recover_relay_tail(self.repository, name, Path(self._index_of(name)))
        receiver = ReceiverRun(
            self.repository, name, Path(self._index_of(name)), follow=self.follow, executed_gtids=executed
        )
        self._receivers[name.lower()] = receiver
        receiver.start()
        return receiver

    def _start_channel(self, name: str, clause: UntilClause | None, until: Until | None) -> None:
        rli = self.repository.relay_log_info(name) or {}
        globals_ = self.repository.global_variables()
        settings = v.effective_settings(globals_, self.repository.channel_options(name))
        skip = int(globals_.get("sql_replica_skip_counter", "0"))
        if skip:
            self.repository.set_global_variables({"sql_replica_skip_counter": None})  # taken by this START
        run = ChannelRun(
            self.slave,
            self.repository,
            ChannelSpec(name, Path(rli["Relay_log_index"])),
            RunSettings(
                until=until,
                # replica_pending_jobs_size_max bounds the single applier's bytes held too
                limits=replace(self.limits or BatchLimits(), bytes=settings.pending_jobs_size_max),
                parallel=self._with_pool(settings.parallel_options()),
                controls=StartControls(skip_counter=skip, sql_delay=int(rli.get("Sql_delay") or 0)),
                follow=self.follow,
                after_gaps_only=clause is not None and clause.kind == "SQL_AFTER_MTS_GAPS",
                on_commit=self.on_commit,
            ),
        )
        self._runs[name.lower()] = run
        run.start()

    def _with_pool(self, options: ParallelOptions | None) -> ParallelOptions | None:
        if options is None:
            return None
        return replace(options, pool=self.pool, spark_master=self.spark_master)

    def _stop(self, cmd: StopReplica) -> Result:
        warnings: list[Warning_] = []
        if "IO_THREAD" in cmd.threads or not cmd.threads:
            receivers = [self._receivers[n.lower()] for n in self._targets(cmd.channel) if self.receiving(n)]
            for receiver in receivers:
                receiver.stop.set()
            for receiver in receivers:  # it stops between transactions, at the next event or heartbeat
                receiver.join()
            if cmd.threads and "SQL_THREAD" not in cmd.threads:
                return Result(warnings=warnings)
        stopping = []
        for name in self._targets(cmd.channel):
            if not self.running(name):
                warnings.append(already_stopped(name))
                continue
            run = self._runs[name.lower()]
            run.stop.set()
            stopping.append(run)
        for run in stopping:  # STOP returns once the applier has stopped, as in MySQL
            run.join()
            run.publish(self.slave)
        return Result(warnings=warnings)

    # -- RESET, SHOW, SET -----------------------------------------------------------------------

    def _reset(self, cmd: ResetReplica) -> Result:
        targets = self._targets(cmd.channel)
        for name in targets:
            if self.running(name) or self.receiving(name):
                raise must_stop(name)
        for name in targets:
            self._runs.pop(name.lower(), None)
            self.repository.reset_channel(name)
            self.slave.reset_position(name)
            if cmd.all:
                self.repository.delete_channel(name)  # the default channel is emptied, not removed
        return Result()

    def _show_status(self, cmd: ShowReplicaStatus) -> Result:
        rows: list[dict[str, Any]] = []
        for name in self._targets(cmd.channel):
            auto_position = int(bool((self.repository.master_info(name) or {}).get("Enabled_auto_position")))
            for status in self.repository.status(name):
                row = status.show_replica_status()
                # MySQL's Auto_Position, after Executed_Gtid_Set
                rows.append(
                    {
                        **{k: v for k, v in row.items() if k not in ("Channel_Name", "Using_Gtid")},
                        "Auto_Position": auto_position,
                        "Channel_Name": row["Channel_Name"],
                        "Using_Gtid": row["Using_Gtid"],
                    }
                )
        columns = tuple(rows[0]) if rows else ()
        return Result(columns, [tuple(r.values()) for r in rows])

    def _show_relaylog_events(self, cmd: ShowRelaylogEvents) -> Result:
        name = self._single(cmd.channel)
        index = self._index_of(name)
        if not index:
            raise _not_configured(name)
        try:
            files = read_index(index).files
        except RelaydeckError as exc:
            raise CommandError(
                ER_ERROR_WHEN_EXECUTING_COMMAND,
                f"Error when executing command SHOW RELAYLOG EVENTS: {exc.one_line()}",
            ) from None
        if cmd.log_name is None:
            path = files[0]
        else:
            path = next((p for p in files if p.name == Path(cmd.log_name).name), None)
            if path is None:
                raise CommandError(ER_UNKNOWN_TARGET_BINLOG, "Target log not found in binlog index")
        from ..listing.show import EVENT_COLUMNS, event_row_maker

        start = cmd.pos if cmd.pos is not None else 4
        event_row = event_row_maker()
        rows: list[tuple[Any, ...]] = []
        skip = cmd.offset
        try:
            with BinlogFile(path) as binlog:
                first = True
                for logged in binlog.events(ReaderState(), start=start, partial_tail_ok=True):
                    if first and logged.pos != start:
                        raise CommandError(
                            ER_ERROR_WHEN_EXECUTING_COMMAND,
                            "Error when executing command SHOW RELAYLOG EVENTS: Wrong offset or I/O error",
                        )
                    first = False
                    if skip:
                        skip -= 1
                        continue
                    if cmd.limit is not None and len(rows) >= cmd.limit:
                        break
                    rows.append(event_row(logged))
        except RelaydeckError as exc:
            if isinstance(exc, CommandError):
                raise
            raise CommandError(
                ER_ERROR_WHEN_EXECUTING_COMMAND,
                f"Error when executing command SHOW RELAYLOG EVENTS: {exc.one_line()}",
            ) from None
        return Result(EVENT_COLUMNS, rows)

    def _set(self, cmd: SetVariables) -> Result:
        values: dict[str, str | None] = {}
        for assignment in cmd.assignments:
            var = v.variable(assignment.name)
            v.check_scope(var.name, assignment.scope)
            if assignment.value.kind == "default":
                values[var.name] = None
            else:
                values[var.name] = v.to_text(
                    var, v.convert(var, assignment.value.kind, assignment.value.text)
                )
        self.repository.set_global_variables(values)  # all or nothing; read at the next START
        return Result()

    # -- status publishing ----------------------------------------------------------------------

    def _publish_loop(self) -> None:
        reader = self.slave.session()
        try:
            while not self._closed.wait(STATUS_INTERVAL_S):
                self._publish_once(reader)
        finally:
            reader.close()

    def _publish_once(self, reader: Slave | None = None) -> None:
        own = reader is None
        reader = reader or self.slave.session()
        try:
            for run in list(self._runs.values()):
                if run in self._published_last:
                    continue
                # read before publishing: its last state is then in. A run not started yet (START
                # registers it, then starts it) is not finished: taken for one, it would never be
                # published again, and its status would stay as it was before the START.
                finished = run.thread.ident is not None and not run.is_alive()
                try:
                    run.publish(reader)
                except Exception:  # noqa: BLE001 - the publisher must outlive one bad tick
                    # the repository was busy, or a channel's state changed under the reader:
                    # the next tick publishes again (a publisher that died would freeze every
                    # status reader at this moment)
                    continue
                if finished:
                    self._published_last.add(run)
        finally:
            if own:
                reader.close()

    def _mark_stopped(self, name: str) -> None:
        rli = self.repository.relay_log_info(name) or {}
        if rli.get("Applier_state") == "ON":
            self.repository.update_relay_log_info(name, Applier_state="OFF")
        self.repository.publish_status({"CHANNEL_NAME": name, "SERVICE_STATE": "OFF"}, [])


def existing_channel(repository: Repository, channel: str) -> str:
    """A channel a statement names, as stored: a valid name (3076) that exists (3074)."""
    found = repository.find_channel(checked_channel_name(channel))
    if found is None:
        raise channel_does_not_exist(channel)
    return found


def check_channels(repository: Repository, command: object) -> None:
    """WL#1697's channel checks of a statement, which need only the repository: a valid name
    (3076), a channel that exists (3074; CHANGE creates it), and for START a configured one (1200).
    ReplicaServer makes them as it executes; a caller without a slave makes them first, so that
    its answer is the statement's own."""
    if isinstance(command, StartReplica):
        start_targets(repository, command)
        return
    channel = getattr(command, "channel", None)
    if channel is None:
        return
    if isinstance(command, ChangeSource):
        checked_channel_name(channel)
    else:
        existing_channel(repository, channel)


def start_targets(repository: Repository, cmd: StartReplica) -> list[str]:
    """The channels a START acts on: the one named, else every configured one (as MySQL, which
    passes over the others); 3074 / 3079 / 1200 when there is none to start."""
    if cmd.channel is None:
        names = repository.channels()
        if cmd.until is not None and len(names) > 1:
            raise multiple_channels()
        targets = [n for n in names if _relay_log_index(repository, n)]
        if not targets:
            raise _not_configured("")
        return targets
    name = existing_channel(repository, cmd.channel)
    if not _relay_log_index(repository, name):
        raise _not_configured(name)
    return [name]


def _relay_log_index(repository: Repository, name: str) -> str:
    return (repository.relay_log_info(name) or {}).get("Relay_log_index") or ""


def _option_value(option: str, value: Value, kind: str) -> Any:
    if kind == "string":
        return value.as_text()
    if kind == "path":  # the receiver may run from another folder: kept absolute; '' = none
        text = value.as_text()
        return str(Path(text).expanduser().absolute()) if text else ""
    if kind == "use_gtid":
        choice = _USE_GTID.get(value.as_text().upper()) if value.kind in ("word", "string") else None
        if choice is None:
            raise CommandError(
                ER_WRONG_ARGUMENTS, f"{option} is slave_pos, current_pos or no, not '{value.as_text()}'"
            )
        return choice
    if kind == "period":
        try:
            seconds = float(value.as_text()) if value.kind in ("int", "decimal") else None
        except ValueError:
            seconds = None
        if seconds is None or not 0 <= seconds <= MAX_HEARTBEAT_PERIOD:
            raise CommandError(
                ER_SLAVE_HEARTBEAT_VALUE_OUT_OF_RANGE,
                "The requested value for the heartbeat period is either negative or exceeds the maximum "
                f"allowed ({MAX_HEARTBEAT_PERIOD} seconds).",
            )
        return round(seconds, 3)  # MySQL keeps milliseconds
    number = value.as_int()
    limits = {"port": (0, 65535), "uint": (0, 2**32 - 1), "bool01": (0, 1), "delay": (0, 2**31 - 1)}[kind]
    if not limits[0] <= number <= limits[1]:
        raise CommandError(ER_WRONG_ARGUMENTS, f"The value {number} of {option} is out of range")
    return number


def _channel_index(base: str, channel: str) -> Path:
    """WL#1697's `<base>-<channel>.index` beside the base; the name cannot leave that folder."""
    base_path = Path(base).expanduser().resolve()
    index_name, _ = channel_relay_log_names(base_path.name, channel)
    return base_path.parent / index_name


def _event_starts_at(path: Path, pos: int) -> bool:
    try:
        with BinlogFile(path) as binlog:
            for logged in binlog.events(ReaderState(), start=pos, partial_tail_ok=True):
                return logged.pos == pos
    except RelaydeckError:
        return False
    return False


def _not_configured(name: str, fix: str = "CHANGE MASTER TO") -> CommandError:
    """1200: the channel lacks what the START needs (`fix` says which statement gives it)."""
    return CommandError(
        ER_BAD_SLAVE,
        f"The server is not configured as slave; fix in config file or with {fix}{for_channel(name)}",
    )


def _until(clause: UntilClause | None) -> Until | None:
    if clause is None or clause.kind == "SQL_AFTER_MTS_GAPS":
        return None
    if clause.kind in ("SQL_BEFORE_GTIDS", "SQL_AFTER_GTIDS"):
        try:
            gtids = gtid_set_text(clause.gtids or "")
        except ValueError:
            raise CommandError(
                ER_MALFORMED_GTID_SET_SPECIFICATION, f"Malformed GTID set specification '{clause.gtids}'."
            ) from None
        if clause.kind == "SQL_BEFORE_GTIDS":
            return Until(before_gtids=gtids)
        return Until(after_gtids=gtids)
    kind = "relay" if clause.kind == "RELAY_LOG" else "source"
    return Until(log_file=Path(clause.log_file or "").name, log_pos=clause.log_pos, log_kind=kind)
