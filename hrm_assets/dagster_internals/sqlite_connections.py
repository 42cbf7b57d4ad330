"""SQLite connections of the pooled storages: synced at checkpoints, and grouped commits.

Its commits are synced at WAL checkpoints, not one by one (``synchronous=NORMAL``): a commit
survives any crash of a process, and a power cut may lose the last ones but never corrupts the
database. A step that records thousands of events can group them (:class:`CommitGroup`): its
writes then share one transaction per database, committed every ``GROUP_SECONDS`` and when the
group ends; a crash loses the group's uncommitted records, never an output (the next run records
it again).
"""

from __future__ import annotations

import contextlib
import time

from sqlalchemy.engine import Connection, Engine

# A group of writes is committed at least this often: what a crash can lose of a step's records
# (never its outputs), and the longest another process waits to write to the same database.
GROUP_SECONDS = 0.5


def commit_without_fsync(dbapi_connection, _record) -> None:
    # The databases are in WAL mode, where synchronous=NORMAL syncs at checkpoints only: a commit
    # survives any crash of a process (kill -9 included) and the database is never corrupted;
    # a power cut can lose the last commits. The default (FULL) syncs every commit, about three
    # fsyncs per event: 10.7 ms an event against 3.8 ms here.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class CommitGroup:
    """The open transaction of each database a group of writes went to."""

    def __init__(self) -> None:
        self.open: dict[str, Connection] = {}
        self.started = time.monotonic()

    def connection(self, shard: str, engine: Engine) -> Connection:
        connection = self.open.get(shard)
        if connection is None:
            connection = engine.connect()
            # pysqlite begins transactions itself, and not before a SAVEPOINT: SQLAlchemy's
            # recipe for savepoints on SQLite is to switch that off and BEGIN explicitly. Only
            # for this connection: elsewhere Dagster's DDL must not run inside a transaction.
            connection.connection.driver_connection.isolation_level = None
            connection.exec_driver_sql("BEGIN")
            self.open[shard] = connection
        return connection

    def due(self) -> bool:
        return time.monotonic() - self.started >= GROUP_SECONDS

    def commit_if_due(self) -> None:
        if self.due():
            self.commit()

    def commit(self) -> None:
        # Release every connection even if a commit fails; the first error is raised.
        connections, self.open = self.open, {}
        self.started = time.monotonic()
        with contextlib.ExitStack() as closing:
            for connection in connections.values():
                closing.callback(connection.close)
                closing.callback(_restore_default_transactions, connection)
                closing.callback(connection.commit)


def _restore_default_transactions(connection: Connection) -> None:
    connection.connection.driver_connection.isolation_level = ""
