"""A PostgreSQL cluster owned by one test session (or one bench run).

Debian's `postgresql` package brings initdb and pg_ctl; the cluster lives in a
temporary directory, listens on a private port on 127.0.0.1 and a private
socket directory, and is stopped and removed afterwards. The server refuses to
run as root, so it runs as the `postgres` system user the package creates.
TCP logins need a password (scram-sha-256): the wrong-password test is real.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

USER = "fslab"
PASSWORD = "fslab-test-password"


def pg_bindir() -> Path | None:
    """The newest installed PostgreSQL server's bin directory (Debian layout)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_major)
    return Path(found[-1]).parent if found else None


def _major(path: str) -> int:
    return int(Path(path).parent.parent.name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Cluster:
    port: int
    socket_dir: Path
    bindir: Path
    fsync: bool = False  # tests need no durability; the store bench does

    def url(self, dbname: str, *, password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{dbname}"

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        """Run SQL as the superuser over the socket (no password)."""
        proc = _as_postgres(
            [
                str(self.bindir / "psql"),
                "-X",
                "-q",
                "-At",
                "-h",
                str(self.socket_dir),
                "-p",
                str(self.port),
                "-d",
                dbname,
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ]
        )
        return proc.stdout

    def create_database(self, dbname: str) -> str:
        """A fresh empty database owned by the test user; returns its URL."""
        self.psql(f'CREATE DATABASE "{dbname}" OWNER {USER}')
        return self.url(dbname)

    def stop(self, data_dir: Path) -> None:
        _as_postgres(
            [str(self.bindir / "pg_ctl"), "-D", str(data_dir), "-m", "fast", "-w", "stop"],
            check=False,
        )

    def start(self, data_dir: Path) -> None:
        _as_postgres(
            [
                str(self.bindir / "pg_ctl"),
                "-D",
                str(data_dir),
                "-l",
                str(data_dir / "server.log"),
                "-w",
                "-o",
                f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1"
                f" -c fsync={'on' if self.fsync else 'off'} -c max_connections=100",
                "start",
            ]
        )


def _as_postgres(argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        argv = ["runuser", "-u", "postgres", "--", *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, cwd="/")
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


@contextmanager
def running_cluster(
    *, parent: str = "/dev/shm", fsync: bool = False
) -> Iterator[tuple[Cluster, Path]]:
    """initdb + pg_ctl start on a private port; stopped and removed on exit.

    Tests keep it in RAM without fsync; a bench that measures commits asks for
    a durable one on disk (parent on the disk, fsync=True), as a real server runs."""
    bindir = pg_bindir()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed (Debian package postgresql)")
    root = Path(tempfile.mkdtemp(prefix="fslab-pg-", dir=parent))
    data_dir, socket_dir = root / "data", root / "socket"
    data_dir.mkdir()
    socket_dir.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        shutil.chown(data_dir, "postgres", "postgres")
        shutil.chown(socket_dir, "postgres", "postgres")
    pwfile = root / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if os.geteuid() == 0:
        shutil.chown(pwfile, "postgres", "postgres")
    cluster = Cluster(port=free_port(), socket_dir=socket_dir, bindir=bindir, fsync=fsync)
    try:
        _as_postgres(
            [
                str(bindir / "initdb"),
                "-D",
                str(data_dir),
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                f"--pwfile={pwfile}",
                "-E",
                "UTF8",
                "--locale=C",
            ]
        )
        cluster.start(data_dir)
        cluster.psql(f"CREATE ROLE {USER} LOGIN PASSWORD '{PASSWORD}' CREATEDB")
        yield cluster, data_dir
    finally:
        cluster.stop(data_dir)
        shutil.rmtree(root, ignore_errors=True)
