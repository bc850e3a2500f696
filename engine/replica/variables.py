"""The applier's system variables (SET GLOBAL) and the per-channel options that override them.

Ranges, units and defaults are MySQL 8.0.27's (replica_preserve_commit_order ON, …) but two:
- replica_parallel_workers defaults to 0, the single applier, where MySQL 8.0.27 has 4. These
  variables govern START REPLICA, which under `relaydeck serve` follows a live source: there the
  single applier lags less, measured side by side under sysbench (benchmarks/live_sysbench.py:
  p50 / p99 40 / 91 ms against 50 / 112 at 200 trx/s, 100 / 491 against 577 / 1,351 at 1,000),
  because following, the 4 workers' coordinator reads in its own thread as the single applier
  does, and only adds the hand-over to the workers. Replaying relay logs to their end, where the
  preparing stage feeds the workers, `relaydeck replay` defaults to 4 workers instead (about 2.4
  times the single applier's speed).
- replica_parallel_type also takes WRITESET, its default, which relaydeck computes itself from
  the row images, so it need not rely on what the source logged (MariaDB logs no writesets).

As in MySQL, a change takes effect at the next START REPLICA of a channel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..applier.vocabulary import PARALLEL_TYPES, ParallelOptions
from .errors import (
    ER_GLOBAL_VARIABLE,
    ER_UNKNOWN_SYSTEM_VARIABLE,
    ER_WRONG_TYPE_FOR_VAR,
    ER_WRONG_VALUE_FOR_VAR,
    CommandError,
)


@dataclass(frozen=True, slots=True)
class Variable:
    name: str
    kind: str  # "int", "bool" or "enum"
    default: Any
    minimum: int = 0
    maximum: int = 2**63 - 1
    block: int = 1  # MySQL rounds down to a multiple (with a warning); relaydeck does the same
    choices: tuple[str, ...] = ()
    per_channel: bool = True  # also a CHANGE REPLICATION SOURCE TO option


VARIABLES: dict[str, Variable] = {
    v.name: v
    for v in (
        Variable("replica_parallel_workers", "int", 0, 0, 1024),
        Variable(
            "replica_parallel_type",
            "enum",
            "WRITESET",
            choices=tuple(t.upper() for t in PARALLEL_TYPES),
        ),
        Variable("replica_preserve_commit_order", "bool", True),
        Variable("replica_pending_jobs_size_max", "int", 128 * 1024 * 1024, 1024, 2**63 - 1, 1024),
        Variable("replica_checkpoint_group", "int", 512, 32, 524280, 8),
        Variable("replica_checkpoint_period", "int", 300, 1, 4294967295),
        Variable("sql_replica_skip_counter", "int", 0, 0, 4294967295, per_channel=False),
        # the receiver deletes relay files the applier is done with (channels relaydeck receives)
        Variable("relay_log_purge", "bool", True, per_channel=False),
        # the id the receivers register with: a source ends the dump of an earlier replica that
        # registers the same id again, so two replicas sharing one would take turns disconnecting
        # each other. 2 by default: not the id of a source left at MySQL's and MariaDB's default
        # of 1. 0 (MySQL's "not a replica") is refused here rather than at every START.
        Variable("server_id", "int", 2, 1, 4294967295, per_channel=False),
    )
}

_TRUE = {"ON", "TRUE", "1"}
_FALSE = {"OFF", "FALSE", "0"}


def variable(name: str) -> Variable:
    found = VARIABLES.get(name.lower())
    if found is None:
        raise CommandError(ER_UNKNOWN_SYSTEM_VARIABLE, f"Unknown system variable '{name}'")
    return found


def check_scope(name: str, scope: str) -> None:
    """Every applier variable is GLOBAL-only, as in MySQL."""
    if scope == "SESSION":
        raise CommandError(
            ER_GLOBAL_VARIABLE, f"Variable '{name}' is a GLOBAL variable and should be set with SET GLOBAL"
        )


def convert(var: Variable, kind: str, text: str) -> Any:
    """A statement's value (kind "int", "string" or "word") as the variable's Python value."""
    if var.kind == "int":
        if kind != "int":
            raise CommandError(ER_WRONG_TYPE_FOR_VAR, f"Incorrect argument type to variable '{var.name}'")
        value = int(text)
        if value < var.minimum or value > var.maximum:
            raise CommandError(
                ER_WRONG_VALUE_FOR_VAR, f"Variable '{var.name}' can't be set to the value of '{text}'"
            )
        return value - value % var.block
    word = text.upper()
    if var.kind == "bool":
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    elif word in var.choices:
        return word
    raise CommandError(ER_WRONG_VALUE_FOR_VAR, f"Variable '{var.name}' can't be set to the value of '{text}'")


def to_text(var: Variable, value: Any) -> str:
    """How the repository stores a value (and SHOW VARIABLES prints it)."""
    if var.kind == "bool":
        return "ON" if value else "OFF"
    return str(value)


def from_text(var: Variable, text: str) -> Any:
    if var.kind == "int":
        return int(text)
    if var.kind == "bool":
        return text.upper() in _TRUE
    return text.upper()


@dataclass(frozen=True, slots=True)
class ApplierSettings:
    """What one START of one channel runs with: globals, overridden by the channel's options."""

    workers: int
    parallel_type: str
    preserve_commit_order: bool
    pending_jobs_size_max: int
    checkpoint_group: int
    checkpoint_period_ms: int

    def parallel_options(self) -> ParallelOptions | None:
        """None for the single applier (replica_parallel_workers = 0)."""
        if self.workers == 0:
            return None
        return ParallelOptions(
            workers=self.workers,
            parallel_type=self.parallel_type.lower(),
            preserve_commit_order=self.preserve_commit_order,
            pending_jobs_size_max=self.pending_jobs_size_max,
            checkpoint_group=self.checkpoint_group,
            checkpoint_period_ms=self.checkpoint_period_ms,
        )


def global_value(global_texts: dict[str, str], name: str) -> Any:  # noqa: ANN401
    """A SET GLOBAL variable's value (global_texts: the repository's), its default when never set."""
    var = VARIABLES[name]
    text = global_texts.get(name)
    return var.default if text is None else from_text(var, text)


def effective_settings(global_texts: dict[str, str], channel_options: dict[str, Any]) -> ApplierSettings:
    def value(name: str) -> Any:
        if channel_options.get(name) is not None:
            raw = channel_options[name]
            return bool(raw) if VARIABLES[name].kind == "bool" else raw
        return global_value(global_texts, name)

    return ApplierSettings(
        workers=value("replica_parallel_workers"),
        parallel_type=value("replica_parallel_type"),
        preserve_commit_order=value("replica_preserve_commit_order"),
        pending_jobs_size_max=value("replica_pending_jobs_size_max"),
        checkpoint_group=value("replica_checkpoint_group"),
        checkpoint_period_ms=value("replica_checkpoint_period"),
    )
