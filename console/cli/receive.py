"""`relaydeck receive`: fetch a source's binary log over the replication protocol into relay logs."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from engine.api import RelaydeckError, visible

PASSWORD_ENVIRONMENT = "RELAYDECK_SOURCE_PASSWORD"
DEFAULT_MAX_RELAY_LOG_SIZE = 1 << 30  # max_relay_log_size 0 means max_binlog_size: 1 GiB


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "receive",
        help="receive a MariaDB source's binary log into relay logs (a replica's IO thread)",
        description="Connects to the source as a replica (COM_REGISTER_SLAVE, COM_BINLOG_DUMP) and writes "
        "what it sends into DIR/relay-bin-<channel>.000001 … with their index, as a MariaDB replica writes "
        "its relay logs; `relaydeck replay --channel NAME=DIR/relay-bin-<channel>.index` applies them. "
        "Without --from-file it goes on after the relay logs already in DIR, or starts at the source's "
        "first binary log.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3306)
    parser.add_argument("--user", required=True)
    parser.add_argument(
        "--password",
        default=None,
        help=f"the source account's password (better: the environment variable {PASSWORD_ENVIRONMENT})",
    )
    parser.add_argument("--channel", required=True, metavar="NAME")
    parser.add_argument("--relay-dir", required=True, type=Path, metavar="DIR")
    parser.add_argument("--from-file", default=None, metavar="BINLOG", help="the source binlog to start in")
    parser.add_argument("--from-pos", type=int, default=4, metavar="N", help="with --from-file (default 4)")
    parser.add_argument(
        "--from-gtid",
        default=None,
        metavar="GTIDS",
        help="MariaDB GTID positioning: start after these GTIDs ('domain-server-seq,…'; '' for the start)",
    )
    parser.add_argument(
        "--auto-position",
        default=None,
        metavar="GTIDS",
        help="MySQL GTID positioning (SOURCE_AUTO_POSITION = 1): what follows this GTID set, united with "
        "what the relay logs or the repository hold ('uuid:1-5,…'; '' for everything)",
    )
    tls = parser.add_argument_group("TLS (CHANGE REPLICATION SOURCE TO's SOURCE_SSL options)")
    tls.add_argument(
        "--source-ssl",
        type=int,
        choices=(0, 1),
        default=None,
        help="1: TLS required (error 2026 without); 0: never; not given: TLS when the source offers it, unchecked",
    )
    tls.add_argument("--source-ssl-ca", default="", metavar="FILE")
    tls.add_argument("--source-ssl-capath", default="", metavar="DIR")
    tls.add_argument("--source-ssl-cert", default="", metavar="FILE")
    tls.add_argument("--source-ssl-key", default="", metavar="FILE")
    tls.add_argument("--source-ssl-cipher", default="", metavar="LIST")
    tls.add_argument(
        "--source-ssl-verify-server-cert",
        type=int,
        choices=(0, 1),
        default=0,
        help="1: check the source's certificate against the CA and its host name",
    )
    parser.add_argument(
        "--repository",
        type=Path,
        default=None,
        metavar="REPO",
        help="record the position received in REPO's master_info (resumed from there), Replica_IO_Running "
        "and Last_IO_Errno/Last_IO_Error for `relaydeck status`",
    )
    parser.add_argument("--server-id", type=int, default=2, help="this replica's server id (default 2)")
    parser.add_argument("--max-relay-log-size", type=int, default=DEFAULT_MAX_RELAY_LOG_SIZE, metavar="BYTES")
    parser.add_argument(
        "--connect-retry",
        type=float,
        default=60.0,
        metavar="S",
        help="SOURCE_CONNECT_RETRY: seconds between connection attempts (default 60)",
    )
    parser.add_argument(
        "--retry-count",
        type=int,
        default=86400,
        metavar="N",
        help="SOURCE_RETRY_COUNT: connection attempts in a row before giving up (default 86400; 0: no limit)",
    )
    parser.add_argument(
        "--heartbeat-period",
        type=float,
        default=30.0,
        metavar="S",
        help="SOURCE_HEARTBEAT_PERIOD: silence for twice this long is a dead connection (default 30; 0: 60 s)",
    )
    until = parser.add_mutually_exclusive_group()
    until.add_argument(
        "--until-caught-up",
        action="store_true",
        help="stop once the source has sent all its binary logs hold (the default)",
    )
    until.add_argument(
        "--stop-after-seconds", type=float, default=None, metavar="S", help="keep receiving for S seconds"
    )
    parser.set_defaults(func=cmd_receive)
    return parser


def cmd_receive(args: argparse.Namespace, out: TextIO) -> int:
    # imported here: the other commands need neither the receiver nor PyMySQL
    from engine.api import (
        GtidSet,
        ReceiverSettings,
        SourceAccount,
        SourcePosition,
        SourceTls,
        maria_gtid_list,
        receive,
        validate_channel_name,
    )

    validate_channel_name(args.channel)  # ERROR 3076, printed as every RelaydeckError
    if args.max_relay_log_size < 4096:
        raise RelaydeckError("--max-relay-log-size is at least 4096 bytes")
    password = args.password if args.password is not None else os.environ.get(PASSWORD_ENVIRONMENT, "")
    if sum((bool(args.from_file), args.from_gtid is not None, args.auto_position is not None)) > 1:
        raise RelaydeckError("give one of --from-file, --from-gtid and --auto-position")
    auto_position = None
    if args.auto_position is not None:
        try:
            auto_position = GtidSet.parse(args.auto_position).one_line()
        except ValueError:
            raise RelaydeckError(
                f"--auto-position: {visible(args.auto_position)!r} is not a MySQL GTID set (uuid:1-5,…)"
            ) from None
    ssl_options = (args.source_ssl_ca, args.source_ssl_capath, args.source_ssl_cert, args.source_ssl_key)
    if args.source_ssl is None and (
        any(ssl_options) or args.source_ssl_cipher or args.source_ssl_verify_server_cert
    ):
        raise RelaydeckError("the --source-ssl-… options go with --source-ssl 1")
    tls = None
    if args.source_ssl is not None:
        tls = SourceTls(
            bool(args.source_ssl),
            *(str(Path(p).resolve()) if p else "" for p in ssl_options),
            cipher=args.source_ssl_cipher,
            verify_server_cert=bool(args.source_ssl_verify_server_cert),
        )
    gtid_start = None
    if args.from_gtid is not None:
        try:
            gtid_start = maria_gtid_list(args.from_gtid)
        except ValueError:
            raise RelaydeckError(
                f"--from-gtid: {visible(args.from_gtid)!r} is not a MariaDB GTID list (domain-server-seq,…)"
            ) from None
    if args.connect_retry < 0 or args.retry_count < 0 or args.heartbeat_period < 0:
        raise RelaydeckError("--connect-retry, --retry-count and --heartbeat-period are not negative")
    start = SourcePosition(args.from_file, args.from_pos) if args.from_file else None
    repository = None
    if args.repository is not None:
        from engine.api import Repository

        args.repository.parent.mkdir(parents=True, exist_ok=True)
        repository = Repository(args.repository)
    try:
        result = receive(
            SourceAccount(args.host, args.port, args.user, password, tls),
            ReceiverSettings(
                args.channel,
                args.relay_dir,
                args.server_id,
                args.max_relay_log_size,
                heartbeat_period=args.heartbeat_period,
                connect_retry=args.connect_retry,
                retry_count=args.retry_count,
            ),
            start=start,
            gtid_start=gtid_start,
            auto_position=auto_position,
            until_caught_up=args.stop_after_seconds is None,
            stop_after=args.stop_after_seconds,
            repository=repository,
            on_retry=lambda error, wait: _report_retry(args.channel, error, wait),
        )
    finally:
        if repository is not None:
            repository.close()
    where = f"up to {visible(str(result.transactions_at))}" if result.transactions_at else "nothing yet"
    files = result.relay_files
    span = f"{files[0].name} … {files[-1].name}" if len(files) > 1 else (files[0].name if files else "none")
    out.write(
        f"channel '{visible(args.channel)}': {result.events} events received, {where}"
        f"{' (caught up)' if result.caught_up else ''}; relay logs {span}, index {result.index_file}"
        f"{f'; reconnected {result.reconnects} times' if result.reconnects else ''}\n"
    )
    return 0


def _report_retry(channel: str, error: Exception, wait: float) -> None:
    sys.stderr.write(
        f"relaydeck receive: channel '{visible(channel)}': {error}; trying again in {wait:g} s\n"
    )
    sys.stderr.flush()
