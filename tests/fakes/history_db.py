"""History databases for tests: ``history_url`` is parametrised over SQLite (a file in the
test's tmp folder) and PostgreSQL (a fresh database on one throwaway server per session,
``pg_server``). Where PostgreSQL cannot be had, its cases skip saying why.

Use it from a test module::

    from fakes.history_db import history_url, pg_admin_url  # noqa: F401  (registers the fixtures)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes import pg_server

ENGINES = ("sqlite", "postgresql")
_names = itertools.count()


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    why = pg_server.available()
    if why:
        pytest.skip(f"PostgreSQL history tests skipped: {why}")
    with pg_server.server() as url:
        yield url


def new_url(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if engine == "sqlite":
        return str(tmp_path / f"history-{next(_names)}.sqlite")
    admin = request.getfixturevalue("pg_admin_url")
    return pg_server.fresh_database(admin, f"evalgate_{next(_names)}")


@pytest.fixture(params=ENGINES)
def history_url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh, empty history database; also set as EVALGATE_HISTORY_URL (history switched on)."""
    url = new_url(request.param, tmp_path, request)
    monkeypatch.delenv("EVALGATE_HISTORY", raising=False)
    monkeypatch.setenv("EVALGATE_HISTORY_URL", url)
    return url
