"""A throwaway PostgreSQL server for tests and the fault harness, from the machine's binaries.

``initdb`` into a temporary directory, ``pg_ctl start`` on a free TCP port of 127.0.0.1 with
trust authentication (nothing listens beyond this machine), ``pg_ctl stop -m immediate`` at the
end. The server binaries are found on PATH or under Debian's ``/usr/lib/postgresql/*/bin``
(``make test`` installs Debian's ``postgresql`` when neither has them).

PostgreSQL refuses to run as root: when the tests run as root the server runs as an
unprivileged user (``postgres`` if the machine has one, else ``nobody``), which owns the data
directory; the tests connect over TCP, so the socket's owner does not matter.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PostgresServer", "postgres_binaries", "throwaway_postgres"]


def postgres_binaries() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl", path=str(Path(found).parent)):
        return Path(found).parent
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _server_user() -> pwd.struct_passwd | None:
    """Who runs the server: None (this user) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists")


@dataclass(frozen=True)
class PostgresServer:
    """A running server: ``url(database)`` names a database on it (create it first)."""

    port: int
    user: str
    data: Path

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create database ``name`` and return its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@contextmanager
def throwaway_postgres() -> Iterator[PostgresServer]:
    """Start a fresh server, yield it, and stop it (its files are removed)."""
    binaries = postgres_binaries()
    if binaries is None:
        raise RuntimeError(
            "PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or under "
            "/usr/lib/postgresql/*/bin: `make test` installs Debian's postgresql"
        )
    owner = _server_user()
    root = Path(tempfile.mkdtemp(prefix="dp-postgres-"))
    data = root / "data"
    data.mkdir()
    if owner is not None:
        os.chmod(root, 0o755)
        os.chown(data, owner.pw_uid, owner.pw_gid)

    def as_owner() -> None:  # runs in the child before exec
        if owner is not None:
            os.setgid(owner.pw_gid)
            os.setuid(owner.pw_uid)

    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    env.pop("PGDATA", None)
    run = dict(env=env, preexec_fn=as_owner, cwd=str(root), check=True, capture_output=True)
    user = "dp_test"
    subprocess.run(
        [str(binaries / "initdb"), "-D", str(data), "-U", user, "-A", "trust", "-E", "UTF8"],
        **run,
    )
    port = _free_port()
    options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories='' -F"
    log = data / "server.log"
    subprocess.run(
        [str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start"],
        **run,
    )
    try:
        yield PostgresServer(port=port, user=user, data=data)
    finally:
        subprocess.run(
            [str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
            env=env,
            preexec_fn=as_owner,
            cwd=str(root),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)
