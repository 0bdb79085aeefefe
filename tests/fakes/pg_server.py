"""A throwaway PostgreSQL server for tests and benchmarks: initdb into a temporary folder, a free
port on 127.0.0.1, the unix socket in that folder, stopped (and the folder removed) on exit.

initdb refuses to run as root, so as root the server runs as the ``postgres`` user (which must
exist, as the Debian packages create it). ``available()`` says why a server cannot be had, so
tests skip with that message rather than silently. A session killed before it could stop its
server leaves it running: the next ``server()`` stops and removes such orphans (their folder names
the pid that started them, and it is gone)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

BINARIES = ("initdb", "pg_ctl", "postgres")


def available() -> str | None:
    """None when a server can be started here; otherwise why not."""
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        return f"no PostgreSQL binaries on PATH ({', '.join(missing)} missing)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run initdb as"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[dev]')"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_owner(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


PREFIX = "evalgate-pg-"
OWNER = "owner.pid"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_orphans() -> list[Path]:
    """Stop and remove the servers of earlier sessions that were killed before they could stop
    their server (a SIGKILLed pytest, a timed-out job): folders whose owner process is gone.
    Folders without an owner file are left alone."""
    swept = []
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            owner = int((folder / OWNER).read_text())
        except (OSError, ValueError):
            continue
        if _alive(owner):
            continue
        if (folder / "data" / "postmaster.pid").exists():
            subprocess.run(
                _as_owner(["pg_ctl", "-D", str(folder / "data"), "-m", "immediate", "-w", "stop"]), capture_output=True
            )
        shutil.rmtree(folder, ignore_errors=True)
        swept.append(folder)
    return swept


@contextlib.contextmanager
def server() -> Iterator[str]:
    """Start a server; yields the URL of its ``postgres`` database (user ``postgres``, trust auth)."""
    sweep_orphans()
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    (folder / OWNER).write_text(str(os.getpid()))
    data = folder / "data"
    if os.geteuid() == 0:
        os.chmod(folder, 0o755)
        shutil.chown(folder, "postgres", "postgres")
    port = _free_port()
    log = folder / "server.log"
    started = False
    try:
        subprocess.run(
            _as_owner(["initdb", "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"]),
            check=True,
            capture_output=True,
        )
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        subprocess.run(
            _as_owner(["pg_ctl", "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"]),
            check=True,
            capture_output=True,
        )
        started = True
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or b"").decode(errors="replace") + (log.read_text() if log.exists() else "")
        raise RuntimeError(f"could not start PostgreSQL: {detail.strip()[-2000:]}") from None
    finally:
        if started:
            subprocess.run(_as_owner(["pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop"]), capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def fresh_database(admin_url: str, name: str) -> str:
    """Create (or re-create) database ``name`` on the server; returns its URL."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin_url.rsplit("/", 1)[0] + f"/{name}"
