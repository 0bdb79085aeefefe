"""The history's location in every form it takes (docs/spec.md#history-store): one redactor for all of them,
libpq keyword strings read as PostgreSQL (never a SQLite file), malformed URLs refused with exit 2;
on a real PostgreSQL server (``pg_server``), through the real command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from fakes.history_db import pg_admin_url as pg_admin_url  # the fixture
from fakes.suites import echo_cases, write_suite

from evals.common.errors import EXIT_PASS, EXIT_USAGE
from evals.history.engine import sqlite_path
from evals.history.url import redact_text, redact_url

SECRET = "s3cret-Pw"


@pytest.mark.parametrize(
    ("url", "redacted", "secret"),
    [
        ("postgresql://u:s3cret-Pw@h:5/d", "postgresql://u:***@h:5/d", "s3cret-Pw"),
        ("postgresql://u@h/db?password=s3cret-Pw", "postgresql://u@h/db?password=***", "s3cret-Pw"),
        (
            "postgres://u@h/db?sslmode=require&sslpassword=s3cret-Pw&application_name=app",
            "postgres://u@h/db?sslmode=require&sslpassword=***&application_name=app",
            "s3cret-Pw",
        ),
        ("postgresql://u:s3cret #Pw@h/db", "postgresql://u:***@h/db", "s3cret #Pw"),  # libpq reads to the "/"
        ("postgresql://u:s3cret@#?Pw@h/db", "postgresql://u:***@h/db", "s3cret@#?Pw"),
        ("postgresql://u:s3cret%23Pw@h/db", "postgresql://u:***@h/db", "s3cret#Pw"),  # as libpq decodes it
        ("postgresql://u:s3cret-Pw@[::1/db", "postgresql://u:***@[::1/db", "s3cret-Pw"),  # no parser accepts it
        ("host=db port=5432 password=s3cret-Pw dbname=h", "host=db port=5432 password=*** dbname=h", "s3cret-Pw"),
        ("host=db password = 's3cret \\'Pw' user=u", "host=db password = *** user=u", "s3cret 'Pw"),
        ("host=db password s3cret-Pw", "host=db password ***", "s3cret-Pw"),  # malformed: libpq quotes the words
        ("host=db pasword=s3cret-Pw", "host=db pasword=***", "s3cret-Pw"),  # misspelt: no known plain parameter
        ("postgresql://u@h/db", "postgresql://u@h/db", None),
        (".evalgate/history.sqlite", ".evalgate/history.sqlite", None),
    ],
)
def test_one_redactor_for_every_form_of_the_history_url(url: str, redacted: str, secret: str | None) -> None:
    assert redact_url(url) == redacted
    if secret is not None:  # libpq's errors quote the location, or the part of it they stumbled on
        assert "s3cret" not in redact_text(f'invalid URI: "{url}"; unexpected spaces found in "{secret}"', url)


def test_a_keyword_string_is_postgresql_never_a_sqlite_file() -> None:
    assert sqlite_path("host=db dbname=h password=x") is None
    assert sqlite_path("sqlite:///host=db.sqlite") == Path("host=db.sqlite")


def evalgate(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("EVALGATE_", "GITHUB_"))}
    return subprocess.run(
        [sys.executable, "-m", "evals", *args],
        cwd=cwd,
        env={**environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _keywords(admin_url: str, **extra: str) -> str:
    parts = urlsplit(admin_url)
    fields = {"host": parts.hostname, "port": str(parts.port), "user": parts.username, "dbname": "postgres"}
    return " ".join(f"{k}={v}" for k, v in {**fields, **extra}.items())


def test_a_keyword_string_connects_to_postgresql_and_prints_no_password(pg_admin_url: str, tmp_path: Path) -> None:
    """The server trusts 127.0.0.1, so the password is sent and ignored: the command connects,
    applies the schema, and neither prints the password nor leaves a file named after it."""
    url = _keywords(pg_admin_url, password=f"'{SECRET}'")
    done = evalgate("history", "init", "--url", url, cwd=tmp_path)
    assert done.returncode == EXIT_PASS, done.stderr
    assert "applied 0001_" in done.stdout and "password=***" in done.stdout
    assert SECRET not in done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []  # no SQLite file named "host=... password=..."
    again = evalgate("history", "init", "--url", url, cwd=tmp_path)  # the same database, found again
    assert again.returncode == EXIT_PASS and "up to date" in again.stdout and SECRET not in again.stdout


def test_a_keyword_string_libpq_refuses_is_exit_2(pg_admin_url: str, tmp_path: Path) -> None:
    url = _keywords(pg_admin_url, pasword=SECRET)  # the keyword misspelt
    done = evalgate("history", "init", "--url", url, cwd=tmp_path)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert 'invalid connection option "pasword"' in done.stderr and "Traceback" not in done.stderr
    assert SECRET not in done.stdout + done.stderr and list(tmp_path.iterdir()) == []


def test_history_urls_print_and_log_without_their_password(pg_admin_url: str, tmp_path: Path) -> None:
    """A password in the query string or with an unencoded "#" connects (the server trusts us) and
    is never printed; one with an unencoded space, or a malformed IPv6 host, is exit 2 naming what
    is wrong without the password; recording into it from `run` is a warning without it."""
    parts = urlsplit(pg_admin_url)
    where = f"{parts.hostname}:{parts.port}/postgres"
    for url in (f"postgresql://postgres@{where}?password={SECRET}", f"postgresql://postgres:{SECRET}#x@{where}"):
        done = evalgate("history", "init", "--url", url, cwd=tmp_path)
        assert done.returncode == EXIT_PASS, done.stderr
        assert "schema version" in done.stdout and SECRET not in done.stdout + done.stderr
    refused = {
        f"postgresql://postgres:{SECRET} x@{where}": "unexpected spaces found",
        f"postgresql://postgres:{SECRET}@[::1/postgres": "IPv6 host address",
    }
    for url, problem in refused.items():
        done = evalgate("history", "init", "--url", url, cwd=tmp_path)
        assert done.returncode == EXIT_USAGE, done.stderr
        assert problem in done.stderr and "percent-encode" in done.stderr and "Traceback" not in done.stderr
        assert SECRET not in done.stdout + done.stderr
    (tmp_path / "echo.py").write_text("def answer(x):\n    return x\n")
    write_suite(tmp_path, echo_cases(1), target={"python": "echo:answer"})
    url = f"postgresql://postgres:{SECRET}@[::1/postgres"
    run = evalgate("run", "-o", "r.json", cwd=tmp_path, env={"EVALGATE_HISTORY_URL": url})
    assert run.returncode == EXIT_PASS, run.stderr  # the history never breaks a command
    assert "warning: history postgresql://" in run.stderr and "IPv6" in run.stderr
    assert SECRET not in run.stdout + run.stderr
