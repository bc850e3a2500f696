"""The engine's one door: every name the console and the `relaydeck` command line may use.

console/ imports from the engine only through this module (tests/test_import_graph.py keeps it
so), and no engine module imports it: the engine's layers stay free to move behind it. What it
offers, by who asks for it:

- the console: a ReplicaHandle (a ReplicaServer in its process, or the control socket of a running
  `relaydeck serve`), the values it returns (Result, Snapshot and its views, the recovery picture,
  a rows event's images), the statements and their errors, and what completion offers;
- the command line: one entry per subcommand (replay, events, generate, recovery, clone, receive,
  analyze) with the options they take.

Names load on first use (PEP 562): `relaydeck events` imports the relay-log listing alone in
0.1 s, where importing every home at once (DuckDB, the server, the appliers) took 0.8 s.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
_HOMES: dict[str, str] = {
    # errors a caller catches and shows in one line
    "RelaydeckError": "engine.errors",
    "CommandError": "engine.replica.errors",
    "Warning_": "engine.replica.errors",
    "already_running": "engine.replica.errors",
    "channel_does_not_exist": "engine.replica.errors",
    # the console's handle on a replica and what it returns
    "ReplicaHandle": "engine.replica.views",
    "Result": "engine.replica.views",
    "Snapshot": "engine.replica.views",
    "ChannelView": "engine.replica.views",
    "ReceiverView": "engine.replica.views",
    "WorkerView": "engine.replica.views",
    "PoolView": "engine.replica.views",
    "PoolSlotView": "engine.replica.views",
    "EventRows": "engine.replica.views",
    "event_rows": "engine.replica.monitor",
    "RecoveryPicture": "engine.applier.recovery",
    "GroupAfterLwm": "engine.applier.recovery",
    "WorkerCheckpointRow": "engine.applier.recovery",
    "inspect_recovery": "engine.applier.recovery",
    # running a replica: the server, its configuration, its control socket, its repository
    "ReplicaServer": "engine.replica.server",
    "check_channels": "engine.replica.server",
    "ServeConfig": "engine.replica.config",
    "apply_config": "engine.replica.config",
    "load_config": "engine.replica.config",
    "bundled_example": "engine.replica.config",
    "ControlSocket": "engine.replica.control",
    "connect": "engine.replica.control",
    "FEED_SECONDS": "engine.replica.example",
    "TRICKLE_SECONDS": "engine.replica.example",
    "example_repository": "engine.replica.example",
    "prepare_example": "engine.replica.example",
    "Repository": "engine.repository",
    # statements: parsing, the ones the console builds, and what completion offers
    "parse_statement": "engine.replica.commands",
    "ShowRelaylogEvents": "engine.replica.commands",
    "ShowReplicaStatus": "engine.replica.commands",
    "StartReplica": "engine.replica.commands",
    "CHANGE_OPTIONS": "engine.replica.server",
    "VARIABLES": "engine.replica.variables",
    # `relaydeck replay`
    "Replay": "engine.replay",
    "ChannelSpec": "engine.replay",
    "ParallelOptions": "engine.applier.vocabulary",
    "StartControls": "engine.applier.controls",
    "Until": "engine.applier.vocabulary",
    "BatchLimits": "engine.applier.vocabulary",
    "gtid_set_text": "engine.applier.vocabulary",
    "relax_garbage_collector": "engine.gc_tuning",
    # `relaydeck events` and the relay-log index files every subcommand names
    "ListingOptions": "engine.listing",
    "list_events": "engine.listing",
    "resolve_inputs": "engine.relaylog.index",
    "read_index": "engine.relaylog.index",
    "validate_channel_name": "engine.relaylog.index",
    "visible": "engine.render",
    "json_visible": "engine.render",
    # `relaydeck generate`
    "WORKLOADS": "engine.generate",
    "generate": "engine.generate",
    # `relaydeck clone` and `relaydeck receive`
    "clone_channel": "engine.clone",
    "SourceAccount": "engine.receiver.connection",
    "SourceTls": "engine.receiver.connection",
    "ReceiverSettings": "engine.receiver.receiver",
    "receive": "engine.receiver.receiver",
    "SourcePosition": "engine.receiver.stream",
    "GtidSet": "engine.gtids",
    "maria_gtid_list": "engine.gtids",
    # `relaydeck analyze`
    "analyze": "engine.spark.analyze",
    "spark_session": "engine.spark.session",
    "DEFAULT_HISTORY_SIZE": "engine.scheduling",
    "Slave": "engine.slave.database",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # looked up in its home each time, not kept here: the home's name stays the one truth (a test
    # replacing it there replaces it for the console too)
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # the same names, for type checkers (tests/test_import_graph.py compares them)
    from engine.applier.controls import StartControls
    from engine.applier.recovery import GroupAfterLwm, RecoveryPicture, WorkerCheckpointRow, inspect_recovery
    from engine.applier.vocabulary import BatchLimits, ParallelOptions, Until, gtid_set_text
    from engine.clone import clone_channel
    from engine.errors import RelaydeckError
    from engine.gc_tuning import relax_garbage_collector
    from engine.generate import WORKLOADS, generate
    from engine.gtids import GtidSet, maria_gtid_list
    from engine.listing import ListingOptions, list_events
    from engine.receiver.connection import SourceAccount, SourceTls
    from engine.receiver.receiver import ReceiverSettings, receive
    from engine.receiver.stream import SourcePosition
    from engine.relaylog.index import read_index, resolve_inputs, validate_channel_name
    from engine.render import json_visible, visible
    from engine.replay import ChannelSpec, Replay
    from engine.replica.commands import ShowRelaylogEvents, ShowReplicaStatus, StartReplica, parse_statement
    from engine.replica.config import ServeConfig, apply_config, bundled_example, load_config
    from engine.replica.control import ControlSocket, connect
    from engine.replica.errors import CommandError, Warning_, already_running, channel_does_not_exist
    from engine.replica.example import FEED_SECONDS, TRICKLE_SECONDS, example_repository, prepare_example
    from engine.replica.monitor import event_rows
    from engine.replica.server import CHANGE_OPTIONS, ReplicaServer, check_channels
    from engine.replica.variables import VARIABLES
    from engine.replica.views import (
        ChannelView,
        EventRows,
        PoolSlotView,
        PoolView,
        ReceiverView,
        ReplicaHandle,
        Result,
        Snapshot,
        WorkerView,
    )
    from engine.repository import Repository
    from engine.scheduling import DEFAULT_HISTORY_SIZE
    from engine.slave.database import Slave
    from engine.spark.analyze import analyze
    from engine.spark.session import spark_session
