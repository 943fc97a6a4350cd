"""Open the results database safely for many writers at once.

SQLite (the default, one file, no server): write-ahead logging so readers never block
the writer (https://www.sqlite.org/wal.html), a busy timeout so a writer waits for the
lock instead of failing (https://www.sqlite.org/c3ref/busy_timeout.html), every write
transaction taken with BEGIN IMMEDIATE (the lock is taken at the start, so two writers
never deadlock upgrading a read lock: https://www.sqlite.org/lang_transaction.html),
and a few retries when the lock still times out.  PostgreSQL: each write is one
transaction; a duplicate document is caught by the unique content hash.
"""

import os
import time
from typing import Callable, Optional, TypeVar

import sqlalchemy as sa
from sqlalchemy import event

from eb_torchperf.store import schema
from eb_torchperf.store.location import StoreError, shown

#: Seconds a writer waits for the SQLite lock (busy timeout), and connect timeout.
BUSY_TIMEOUT_S = 30
CONNECT_TIMEOUT_S = 5
#: Attempts of one transaction when the database stays locked or the connection drops.
ATTEMPTS = 5

#: Execution option of a read transaction (SQLite: a plain BEGIN, so a read-only file
#: can still be read).
READ_ONLY_OPTION = "eb_torchperf_read"

T = TypeVar("T")


def _sqlite_setup(engine: sa.engine.Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout = %d" % (BUSY_TIMEOUT_S * 1000))
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        reading = conn.get_execution_options().get(READ_ONLY_OPTION)
        conn.exec_driver_sql("BEGIN" if reading else "BEGIN IMMEDIATE")


def _sqlite_folder(url: sa.engine.URL) -> None:
    if url.database and url.database != ":memory:":
        folder = os.path.dirname(os.path.abspath(url.database))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            why = ("it is not a folder" if os.path.exists(folder) and not os.path.isdir(folder)
                   else exc.strerror or exc)
            raise StoreError("cannot use %s for the database: %s" % (folder, why)) from None


def create(url: str) -> sa.engine.Engine:
    """An engine for `url` (see location.database_url), nothing connected yet.

    Raises:
        StoreError: a malformed URL, a database driver that is not installed, or an
            SQLite folder that cannot be created.
    """
    try:
        parsed = sa.engine.make_url(url)
        if parsed.get_backend_name() == "sqlite":
            _sqlite_folder(parsed)
            engine = sa.create_engine(parsed, connect_args={"timeout": BUSY_TIMEOUT_S},
                                      poolclass=sa.pool.NullPool)
            _sqlite_setup(engine)
            return engine
        args = ({"connect_timeout": CONNECT_TIMEOUT_S}
                if parsed.get_backend_name() == "postgresql" else {})
        return sa.create_engine(parsed, connect_args=args, poolclass=sa.pool.NullPool)
    except (sa.exc.ArgumentError, ImportError) as exc:
        raise StoreError("cannot use the database %s: %s" % (shown(url), exc)) from None


#: The first 16 bytes of an SQLite 3 database file (https://www.sqlite.org/fileformat.html).
SQLITE_HEADER = b"SQLite format 3\x00"


def check(url: str) -> None:
    """Refuse a database that cannot be used, before anything is measured: a malformed
    URL or a driver that does not load, an SQLite file whose folder cannot be made (as
    `create`), or an existing SQLite path that is not a file or not an SQLite database
    (an empty file is fine: SQLite makes it one).  Nothing is connected: a server is
    first asked when the audit is stored.

    Raises:
        StoreError: the message names the database and why.
    """
    engine = create(url)
    path = engine.url.database if engine.url.get_backend_name() == "sqlite" else None
    engine.dispose()
    if not path or path == ":memory:" or not os.path.exists(path):
        return
    if not os.path.isfile(path):
        raise StoreError("cannot use %s for the database: it is not a file" % path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise StoreError("cannot use %s for the database: %s" % (path, exc.strerror)) from None
    if head and head != SQLITE_HEADER:
        raise StoreError("cannot use %s for the database: it is not an SQLite database"
                         % path)


def _transient(exc: sa.exc.DBAPIError) -> bool:
    text = str(exc.orig).lower()
    return exc.connection_invalidated or "locked" in text or "busy" in text or (
        "deadlock" in text or "could not serialize" in text)


def _run(engine: sa.engine.Engine, work, read: bool):
    with engine.connect() as conn:
        if read:
            conn = conn.execution_options(**{READ_ONLY_OPTION: True})
        with conn.begin():
            return work(conn)


def transaction(engine: sa.engine.Engine, work: Callable[[sa.engine.Connection], T],
                attempts: int = ATTEMPTS, read: bool = False) -> T:
    """`work(connection)` inside one transaction, retried while the database is locked
    (`read`: a transaction that writes nothing).

    Raises:
        StoreError: the database cannot be reached or written (read-only file, no
            server, refused login, a schema newer than this version); the message
            names the database.
    """
    where = shown(engine.url.render_as_string(hide_password=False))
    for attempt in range(attempts):
        try:
            return _run(engine, work, read)
        except sa.exc.DBAPIError as exc:
            if attempt + 1 < attempts and _transient(exc):
                time.sleep(0.05 * 2 ** attempt)
                continue
            message = " ".join(str(exc.orig if exc.orig else exc).split())
            raise StoreError("database %s: %s" % (where, message)) from None
        except ValueError as exc:
            raise StoreError("database %s: %s" % (where, exc)) from None
    raise AssertionError("unreachable")


def opened(url: str, migrate: bool = True) -> sa.engine.Engine:
    """An engine for `url` whose database is at the current schema version (created or
    upgraded here when `migrate`).

    Raises:
        StoreError: see `create` and `transaction`.
    """
    engine = create(url)
    if migrate and transaction(engine, schema.current_version, read=True) != (
            schema.SCHEMA_VERSION):
        transaction(engine, schema.migrate)
    return engine


def open_url(value: Optional[str] = None) -> Optional[sa.engine.Engine]:
    """The engine of the configured database (location.database_url), None when off."""
    from eb_torchperf.store.location import database_url
    url = database_url(value)
    return opened(url) if url else None
