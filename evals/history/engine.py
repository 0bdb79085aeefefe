"""The two history engines behind one small interface: SQLite (stdlib ``sqlite3``, a file,
nothing to start) and PostgreSQL (psycopg 3, an optional extra). Queries are written once with
``?`` placeholders in SQL both engines evaluate alike; engines differ only in how they connect,
lock for migrations and bulk-load rows (``executemany`` / ``COPY``).

The schema lives in ``migrations/`` only: ``NNNN_name.sql`` for both engines, or a pair
``NNNN_name.sqlite.sql`` / ``NNNN_name.postgresql.sql``. ``migrate`` applies the ones a database
has not seen, each in its own transaction with its row in ``schema_migrations``; running it again
is a no-op."""

from __future__ import annotations

import re
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from evals.common.errors import InfraError, UsageError
from evals.history.url import is_postgres, redact_text, redact_url

MIGRATION_RE = re.compile(r"^(\d{4})_(\w+?)(?:\.(sqlite|postgresql))?\.sql$")
ENGINES = ("sqlite", "postgresql")
MULTI_ROW_VARIABLES = 960  # bound parameters per multi-row INSERT (SQLite allows 32,766)


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations(engine: str) -> list[Migration]:
    """The engine's migrations in order (shared files, or its own of a pair)."""
    found: dict[int, Migration] = {}
    folder = resources.files("evals.history") / "migrations"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        match = MIGRATION_RE.match(entry.name)
        if not match or match.group(3) not in (None, engine):
            continue
        version = int(match.group(1))
        if version in found:
            raise UsageError(f"history migrations: two files for version {version} ({entry.name})")
        found[version] = Migration(version, match.group(2), entry.read_text(encoding="utf-8"))
    return [found[v] for v in sorted(found)]


class Engine(ABC):
    name: str
    where: str  # for messages; never holds a password

    @abstractmethod
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> int | None:
        """Run one statement; returns the first column of its first row (``RETURNING id``), if any."""

    @abstractmethod
    def insert_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None: ...

    @abstractmethod
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All statements inside commit together (deferred constraints are checked then) or not at all."""

    @abstractmethod
    def _applied(self) -> set[int]: ...

    @abstractmethod
    def _apply(self, migration: Migration) -> bool:
        """False when a concurrent ``init`` applied it first."""

    @abstractmethod
    def close(self) -> None: ...

    def migrate(self) -> list[Migration]:
        """Apply what is missing; returns what was applied (empty: already up to date)."""
        done = self._applied()
        todo = [m for m in migrations(self.name) if m.version not in done]
        applied: list[Migration] = []
        for migration in todo:
            if self._apply(migration):
                applied.append(migration)
        return applied

    def version(self) -> int:
        applied = self._applied()
        return max(applied) if applied else 0


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SQLiteEngine(Engine):
    name = "sqlite"

    def __init__(self, path: Path):
        self.path = Path(path)
        self.where = f"sqlite:{self.path}"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: transactions are ours (BEGIN ... COMMIT), not the module's.
            self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.conn.execute("PRAGMA journal_mode = WAL")
            # WAL + NORMAL: no fsync per commit; a power cut may lose the last record, never the file.
            self.conn.execute("PRAGMA synchronous = NORMAL")
        except (OSError, sqlite3.Error) as exc:
            raise InfraError(f"history {self.where}: cannot open: {exc}") from None

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, params).fetchall()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int | None:
        row = self.conn.execute(sql, params).fetchone()
        return row[0] if row else None

    def insert_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        # Many rows per INSERT: per-statement overhead is most of the cost of a narrow row (measured:
        # 600,000 trace events take 45% less CPU than with one row per statement).
        width = len(columns)
        per = max(1, MULTI_ROW_VARIABLES // width)
        one = "(" + ", ".join("?" * width) + ")"
        head = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
        rest: list[Any] = []

        def batches() -> Iterator[list[Any]]:
            nonlocal rest
            for row in rows:
                rest.extend(row)
                if len(rest) == per * width:
                    yield rest
                    rest = []

        self.conn.executemany(head + ", ".join([one] * per), batches())
        if rest:
            self.conn.execute(head + ", ".join([one] * (len(rest) // width)), rest)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")  # take the write lock now: no upgrade deadlock later
        try:
            yield
            self.conn.execute("COMMIT")  # deferred foreign keys are checked here
        except BaseException:
            if self.conn.in_transaction:  # a refused COMMIT leaves the transaction open
                self.conn.execute("ROLLBACK")
            raise

    def _applied(self) -> set[int]:
        if not self.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"):
            return set()
        return {row[0] for row in self.query("SELECT version FROM schema_migrations")}

    def _apply(self, migration: Migration) -> bool:
        # executescript manages no transaction of ours: the script carries its own, so a failing
        # migration leaves nothing behind, and a concurrent `init` waits on the write lock.
        script = (
            f"BEGIN IMMEDIATE;\n{migration.sql}\n;INSERT INTO schema_migrations (version, name, applied_at) "
            f"VALUES ({migration.version}, '{migration.name}', '{_now()}');\nCOMMIT;"
        )
        try:
            self.conn.executescript(script)
        except sqlite3.Error:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if migration.version in self._applied():  # another process applied it meanwhile
                return False
            raise
        return True

    def close(self) -> None:
        self.conn.close()


class PostgresEngine(Engine):
    name = "postgresql"

    def __init__(self, url: str):
        self.where = redact_url(url)
        try:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict
        except ImportError:
            raise UsageError(
                f"history {self.where}: PostgreSQL needs psycopg 3: pip install 'evalgate-action[postgres]' "
                "(or use the SQLite history: unset EVALGATE_HISTORY_URL / history.url)"
            ) from None
        self._psycopg = psycopg
        # libpq's own reading, before connecting: a location it cannot parse is the user's to fix
        # (exit 2), not an unreachable server.
        try:
            conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise UsageError(
                f"history {self.where}: libpq cannot read it as a PostgreSQL URL or keyword string: "
                f"{redact_text(str(exc).strip(), url)}; in a URL, percent-encode special characters of the "
                "password (space %20, # %23, / %2F, @ %40), or use a libpq keyword string (host, dbname, "
                "user, password; a value in single quotes may hold any character); a SQLite file whose name "
                "has '=' in it is sqlite:///NAME"
            ) from None
        try:
            self.conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise InfraError(f"history {self.where}: cannot connect: {redact_text(str(exc).strip(), url)}") from None
        self._tx_depth = 0

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(self._sql(sql), params or None)
            return cur.fetchall()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int | None:
        with self.conn.cursor() as cur:
            cur.execute(self._sql(sql), params or None)
            row = cur.fetchone() if cur.description else None
            return row[0] if row else None

    def insert_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.conn.transaction():
            yield

    def _applied(self) -> set[int]:
        if self.query("SELECT to_regclass('schema_migrations')")[0][0] is None:
            return set()
        return {row[0] for row in self.query("SELECT version FROM schema_migrations")}

    def _apply(self, migration: Migration) -> bool:
        with self.conn.transaction():
            # One migrator at a time; a second `init` finds the work done.
            self.conn.execute("SELECT pg_advisory_xact_lock(724311)")
            if migration.version in self._applied():
                return False
            self.conn.execute(migration.sql.encode("utf-8"))  # several statements: simple query protocol
            self.conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                (migration.version, migration.name, _now()),
            )
        return True

    def close(self) -> None:
        self.conn.close()


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite history URL (``sqlite:///relative``, ``sqlite:////absolute`` or a plain
    path); None for PostgreSQL (a URL or a libpq keyword string). UsageError for any other scheme."""
    if is_postgres(url):
        return None
    scheme = url.split(":", 1)[0].lower() if "://" in url else ""
    if scheme == "sqlite":
        return Path(url.split("://", 1)[1].removeprefix("/"))
    if scheme:
        raise UsageError(f"history url {redact_url(url)!r}: expected postgresql://... or sqlite:///path")
    return Path(url)


def open_engine(url: str) -> Engine:
    """``postgresql://...`` (or ``postgres://``) or a libpq keyword string → PostgreSQL; otherwise
    SQLite (``sqlite_path``)."""
    path = sqlite_path(url)
    return PostgresEngine(url) if path is None else SQLiteEngine(path)
