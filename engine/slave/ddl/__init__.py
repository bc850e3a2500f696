"""DDL from a MySQL/MariaDB replication stream -> DuckDB statements plus the slave's new catalog.

Parse -> model -> realize:

1. *Parse.* Statements are tokenized with sqlglot's MySQL tokenizer. sqlglot parses most MySQL DDL
   itself (measured: CREATE/DROP DATABASE, CREATE TABLE with inline keys/FOREIGN KEY/CHECK and the
   common table options, CREATE TABLE ... LIKE / ... SELECT, DROP TABLE, TRUNCATE, CREATE/DROP
   INDEX, and the ALTER TABLE clauses ADD/DROP/MODIFY/CHANGE/RENAME COLUMN, ALTER COLUMN ...
   DEFAULT, ADD/DROP PRIMARY KEY/INDEX/UNIQUE/FOREIGN KEY, RENAME TO, ENGINE=, FORCE,
   ALGORITHM=/LOCK=). Where it cannot, a small named pre-transform rewrites the clause on the
   token level (never a regex over the text) into a form it parses (`pretransforms`,
   `column_rewrites`, `split_alter`). Only RENAME TABLE, which sqlglot keeps as an opaque
   command, is read from tokens entirely.
2. *Model.* The syntax tree updates a copy of the `Catalog` (`model`); ALTER clauses apply in
   order (`apply_alter`) to a draft of the table that also remembers where each column's values
   come from (`draft`).
3. *Realize.* DuckDB statements are derived from the old and new models (`realize`, `values`).

Modules, in the order a statement meets them: `tokens` (dialect, tokens, the error),
`pretransforms`, `column_rewrites`, `split_alter`, `model`, `draft`, `apply_alter`, `values`,
`realize`; `translator` dispatches a statement by its first word to `create`, `drop` (and
TRUNCATE), `alter` or `rename`, functions of the `translation` under way; `plan` holds the result
type and the reasons for ignoring statements. No module imports its way back to itself: the
statement handlers import `translation`, and only `translator` imports them.

Decisions:

- Tables hold MySQL's columns in MySQL's order, nothing else: no PRIMARY KEY/UNIQUE/NOT NULL/
  DEFAULT/CHECK/FOREIGN KEY constraints and no indexes. The source already enforced all of them
  (a replica applies row images the source accepted); DuckDB would check them again on every row
  and its ART indexes make bulk upserts and updates of key columns slow (an UPDATE is a delete plus
  an insert under a unique index). The model keeps every key, which the applier needs to match rows.
- Indexes (CREATE INDEX, KEY, FULLTEXT, SPATIAL) are model-only for the same reason; the applier
  applies row changes in batches with joins, which do not use ART indexes.
- Temporary tables are model-only (plan kind 'temporary', no statements): in ROW format the
  source never logs row events for them, so nothing ever reads them on the slave. They live in the
  catalog apart from base tables and shadow them for DDL, as in MySQL.
- Views, triggers, routines, events, users, grants and maintenance statements change no table
  data on a replica that applies row events: plan kind 'ignored' with the reason (`plan`). View
  names are remembered so that RENAME TABLE and DROP VIEW of them stay consistent; their SQL is
  not translated (MySQL's view SQL is not portable to DuckDB without validation, and nothing on
  the slave needs it).
- Column order changes (FIRST/AFTER), and any ALTER whose column changes DuckDB's in-place
  ALTER TABLE cannot express, rebuild the table in the caller's transaction (`realize`). Other
  ALTERs use DuckDB's ALTER TABLE in place.
- Rows that exist when a column is added get what MySQL gives them (`values`, `realize`).
- CREATE TABLE ... SELECT is translated only when the statement declares every selected column
  (`create`): in ROW format the source logs a plain CREATE TABLE instead.
- Identifiers are always quoted (`quote_ident`); names are data. DuckDB compares identifiers
  case-insensitively, so two MySQL tables (or databases) whose names differ only in case cannot
  both exist on the slave: that raises UntranslatableStatement rather than mixing them up.
- sql_mode ANSI_QUOTES is assumed off ("..." is a string) and versioned comments (/*!50100 ...*/)
  are always executed, as every server that can be a source executes them.
"""

from __future__ import annotations

from ..untranslatable import UntranslatableStatement
from .column_rewrites import canonical_column_definition
from .plan import DdlPlan
from .pretransforms import (
    canonical_create_index,
    canonical_key_definition,
    strip_wait_and_algorithm,
    table_options,
    unwrap_executable_comments,
)
from .split_alter import alter_clauses
from .translator import DdlTranslator

__all__ = [
    "DdlPlan",
    "DdlTranslator",
    "UntranslatableStatement",
    "alter_clauses",
    "canonical_column_definition",
    "canonical_create_index",
    "canonical_key_definition",
    "strip_wait_and_algorithm",
    "table_options",
    "unwrap_executable_comments",
]
