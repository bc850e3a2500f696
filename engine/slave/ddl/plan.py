"""What a translation returns (`DdlPlan`), and the statements and objects a slave ignores, with why.

Views, triggers, routines, events, users, grants and maintenance statements (ANALYZE, OPTIMIZE,
REPAIR, FLUSH, ...) change no table data on a replica that applies row events: plan kind
'ignored' with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Catalog, TableKey


@dataclass(frozen=True)
class DdlPlan:
    """DuckDB statements to run in order (in the caller's transaction) and the catalog after them.

    kind: create_database, alter_database, drop_database, create_table, drop_table, rename_table,
    alter_table, truncate_table, create_index, drop_index, temporary (temporary tables: model
    only) or ignored (nothing to do; `reason` says why). `tables` lists the (database, table) keys
    whose model changed, old and new names both, so the caller can drop what it cached about them.
    """

    statements: list[str]
    catalog: Catalog
    kind: str
    reason: str | None = None
    tables: tuple[TableKey, ...] = ()


# Objects whose DDL changes no table data on a replica applying row events.
IGNORED_OBJECTS: dict[str, str] = {
    "VIEW": "views hold no data; the slave stores base tables only",
    "TRIGGER": "triggers run on the source; their effects arrive as row events",
    "PROCEDURE": "stored routines run on the source; their effects arrive as row events",
    "FUNCTION": "stored routines run on the source; their effects arrive as row events",
    "PACKAGE": "stored routines run on the source; their effects arrive as row events",
    "EVENT": "scheduled events run on the source; their effects arrive as row events",
    "USER": "accounts do not exist on the slave",
    "ROLE": "accounts do not exist on the slave",
    "SERVER": "federated server definitions do not exist on the slave",
    "TABLESPACE": "tablespaces do not exist on the slave",
    "LOGFILE": "NDB log file groups do not exist on the slave",
    "SPATIAL": "spatial reference systems do not exist on the slave",
    "RESOURCE": "resource groups do not exist on the slave",
    "INSTANCE": "instance administration changes no table data",
    "SYNONYM": "synonyms hold no data",
}
IGNORED_STATEMENTS: dict[str, str] = {
    "GRANT": "privileges do not exist on the slave",
    "REVOKE": "privileges do not exist on the slave",
    "FLUSH": "FLUSH changes no table data",
    "ANALYZE": "ANALYZE TABLE changes no table data",
    "OPTIMIZE": "OPTIMIZE TABLE changes no table data",
    "REPAIR": "REPAIR TABLE changes no table data",
    "CHECK": "CHECK TABLE changes no table data",
    "CHECKSUM": "CHECKSUM TABLE changes no table data",
    "SET": "SET (passwords, roles, variables) changes no table data",
    "INSTALL": "plugins and components do not exist on the slave",
    "UNINSTALL": "plugins and components do not exist on the slave",
    "RESET": "RESET changes no table data",
    "PURGE": "PURGE changes no table data",
    "CACHE": "key caches do not exist on the slave",
    "DO": "DO changes no table data",
    "USE": "USE only sets the default database, which the event carries",
    "LOCK": "table locks are the source's business",
    "UNLOCK": "table locks are the source's business",
    "SHOW": "SHOW changes nothing",
    "DEALLOCATE": "prepared statements are the source's business",
    "PREPARE": "prepared statements are the source's business",
    "HELP": "HELP changes nothing",
    "KILL": "KILL changes no table data",
    "SHUTDOWN": "SHUTDOWN changes no table data",
    "BINLOG": "BINLOG statements replay row events, which the applier reads itself",
}
