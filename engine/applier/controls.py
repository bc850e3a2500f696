"""What START REPLICA takes besides UNTIL: the skip counter and SQL_Delay (SOURCE_DELAY).

sql_replica_skip_counter skips N events; a transaction it reaches into is skipped whole (MySQL
finishes the group). Skipped transactions still move the channel's position and are recorded as
applied, so a restart does not apply them. Only the events of transactions count: relaydeck
does not replay the coordinator's own events (format descriptions, rotates…) one by one. A
discontinuity in the relay logs (events, transactions or files missing) counts as one event: the
counter lets it past, and the channel goes on from the first transaction after it.

SQL_Delay holds a transaction back until that many seconds after the source committed it (the
original commit timestamp where logged, else the event's timestamp); what was applied before it
is committed first, so the slave trails the source by the delay.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from ..transactions import Transaction


@dataclass(slots=True)
class StartControls:
    skip_counter: int = 0
    sql_delay: int = 0  # seconds

    def __post_init__(self) -> None:
        if self.skip_counter < 0:
            raise ValueError("the skip counter cannot be negative")
        if not 0 <= self.sql_delay < 2**31:
            raise ValueError("SQL_Delay is 0 to 2147483647 seconds")

    def take_skip(self, txn: Transaction) -> bool:
        """True when the transaction is to be skipped (and counts its events off the counter)."""
        if self.skip_counter <= 0:
            return False
        self.skip_counter = max(0, self.skip_counter - len(txn.events))
        return True

    def take_gap(self) -> bool:
        """A discontinuity in the relay log (a relay log read failure) counts as one event: with
        the counter set, the DBA accepts the gap and the channel goes on after it."""
        if self.skip_counter <= 0:
            return False
        self.skip_counter -= 1
        return True

    def due(self, txn: Transaction) -> float | None:
        """When the transaction may be applied (epoch seconds), or None when it may be now."""
        if self.sql_delay <= 0:
            return None
        if txn.original_commit_timestamp:
            committed = txn.original_commit_timestamp / 1e6
        else:
            committed = float(txn.timestamp)
        due = committed + self.sql_delay
        return due if due > time.time() else None

    @staticmethod
    def wait_until(due: float, stop: threading.Event) -> bool:
        """Wait for `due` or stop; True when the time came, False when stopped."""
        while True:
            remaining = due - time.time()
            if remaining <= 0:
                return True
            if stop.wait(min(remaining, 0.5)):
                return False
