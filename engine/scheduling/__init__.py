"""Scheduling logic shared by the source simulation and the applier: pure functions, no I/O."""

# binlog_transaction_dependency_history_size's default. Here, not in writeset.py, so that the
# command line shows it in `relaydeck analyze --help` without loading the hashing.
DEFAULT_HISTORY_SIZE = 25000
