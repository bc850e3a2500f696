"""Replica_IO_State: what the receiver is doing, in the words MySQL's IO thread shows."""

from __future__ import annotations

CONNECTING = "Connecting to source"
REGISTERING = "Registering replica on source"
REQUESTING_DUMP = "Requesting binlog dump"
WAITING_FOR_EVENT = "Waiting for source to send event"
STOPPED = ""

# After a failure in each phase: waiting SOURCE_CONNECT_RETRY seconds, then reconnecting
WAITING_TO_RECONNECT = {
    "registration": "Waiting to reconnect after a failed registration on source",
    "dump": "Waiting to reconnect after a failed binlog dump request",
    "read": "Waiting to reconnect after a failed source event read",
}
RECONNECTING = {
    "registration": "Reconnecting after a failed registration on source",
    "dump": "Reconnecting after a failed binlog dump request",
    "read": "Reconnecting after a failed source event read",
}
