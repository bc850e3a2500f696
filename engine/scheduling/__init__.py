"""Scheduling logic shared by the source simulation and the applier: pure functions, no I/O."""

from engine.scheduling.writeset import WritesetHistory, writeset_hash

__all__ = ["WritesetHistory", "writeset_hash"]
