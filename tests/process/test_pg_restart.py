"""A PostgreSQL server restart between two turns: the next turn succeeds on the same saver and pool.

The test never touches the machine's shared cluster: it creates its OWN
private PostgreSQL instance (``initdb`` into a temporary directory, trust
authentication, a free port on 127.0.0.1, its socket in that directory),
restarts that one with ``pg_ctl``, and stops it by its pid afterwards.

The server binaries are looked up in ``$PLAIT_PG_BINDIR``, else in
``/usr/lib/postgresql/*/bin`` (newest version first), else on ``PATH``. As
root, ``initdb`` and the server run as the ``postgres`` OS user (through
``runuser``, else ``su``). Without binaries the test is skipped (it fails
instead when ``PLAIT_REQUIRE_PG`` is set).
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _procs import child_module, open_saver
from langchain_core.messages import HumanMessage

DATABASE = "plait_restart"
TOOLS = ("initdb", "pg_ctl", "postgres")


def _unavailable(reason: str) -> None:
    if os.environ.get("PLAIT_REQUIRE_PG"):
        pytest.fail(reason + " and PLAIT_REQUIRE_PG is set")
    pytest.skip(reason)


def _bindir() -> Path | None:
    """A directory holding initdb, pg_ctl and postgres."""
    explicit = os.environ.get("PLAIT_PG_BINDIR")
    candidates = [explicit] if explicit else []

    def version(path: str) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", path)) or (0,)

    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).parent))
    for found in candidates:
        if all(os.access(Path(found, tool), os.X_OK) for tool in TOOLS):
            return Path(found)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie left for a non-reaping init counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rpartition(")")[2].split()[0] != "Z"


class PrivatePostgres:
    """A throw-away PostgreSQL instance in a temporary directory, on its own port."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.owner: str | None = None  # the OS user running the server when we are root
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            import pwd

            try:
                account = pwd.getpwnam("postgres")
            except KeyError:
                _unavailable("running as root, and there is no 'postgres' OS user to run initdb as")
            if not (shutil.which("runuser") or shutil.which("su")):
                _unavailable("running as root, and neither runuser nor su can switch to the 'postgres' user")
            self.owner = "postgres"
        self.root = Path(tempfile.mkdtemp(prefix="plait-pg-"))  # in /tmp: the server's user can reach it
        if self.owner is not None:
            os.chown(self.root, account.pw_uid, account.pw_gid)
        self.data, self.sockets, self.log = self.root / "data", self.root / "sock", self.root / "server.log"
        self.port = 0
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        self.env.update(LC_ALL="C", LANG="C")

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *cmd: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run a server tool as the instance's owner; on failure, fail with its output and the log."""
        args = [str(self.bindir / cmd[0]), *cmd[1:]]
        if self.owner is not None:
            if shutil.which("runuser"):
                args = ["runuser", "-u", self.owner, "--", *args]
            else:
                args = ["su", "-s", "/bin/sh", self.owner, "-c", shlex.join(args)]
        done = subprocess.run(
            args, cwd=self.root, env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{shlex.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n"
                f"server log:\n{log}"
            )
        return done

    def init(self) -> None:
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        self._mkdir(self.sockets)

    def _mkdir(self, path: Path) -> None:
        path.mkdir(mode=0o700)
        if self.owner is not None:
            shutil.chown(path, self.owner, self.owner)

    def start(self) -> None:
        """Start the server (on a new free port the first time) and wait until it accepts connections."""
        for attempt in range(3):
            port = self.port or _free_port()
            options = shlex.join(
                [
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    f"port={port}",
                    "-k",
                    str(self.sockets),
                    "-c",
                    "fsync=off",
                    "-c",
                    "max_connections=20",
                    "-c",
                    "shared_buffers=16MB",
                ]
            )
            try:
                self._run(
                    "pg_ctl",
                    "start",
                    "-D",
                    str(self.data),
                    "-l",
                    str(self.log),
                    "-w",
                    "-t",
                    "60",
                    "-o",
                    options,
                )
            except RuntimeError:
                if self.port or attempt == 2:  # a restart keeps its port: the saver's pool points at it
                    raise
                continue
            self.port = port
            return

    def stop(self) -> None:
        """A fast shutdown through ``pg_ctl`` (clients are disconnected, the server exits cleanly)."""
        self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w", "-t", "60")

    def pid(self) -> int | None:
        """The postmaster's pid, if one runs on this instance's data directory."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return pid if _alive(pid) else None
        return pid if str(self.data) in cmdline and _alive(pid) else None  # never another cluster's pid

    def create_database(self) -> None:
        import psycopg

        with psycopg.connect(
            f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True, connect_timeout=10
        ) as admin:
            admin.execute(f"CREATE DATABASE {DATABASE}")

    def wait_until_up(self, timeout: float = 120.0) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.dsn, connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def close(self) -> None:
        """Stop the server by its pid (fast shutdown, then immediate, then kill) and remove the directory."""
        pid = self.pid()
        try:
            if pid is not None:
                for sig, wait in ((signal.SIGINT, 30.0), (signal.SIGQUIT, 10.0), (signal.SIGKILL, 10.0)):
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        break
                    deadline = time.monotonic() + wait
                    while _alive(pid) and time.monotonic() < deadline:
                        time.sleep(0.05)
                    if not _alive(pid):
                        break
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def private_pg() -> Iterator[PrivatePostgres]:
    """A private PostgreSQL instance with an empty database, stopped and removed afterwards."""
    pytest.importorskip("psycopg", reason="the PostgreSQL saver needs psycopg")
    bindir = _bindir()
    if bindir is None:
        _unavailable(
            "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in $PLAIT_PG_BINDIR, "
            "/usr/lib/postgresql/*/bin or PATH"
        )
    assert bindir is not None
    server = PrivatePostgres(bindir)
    try:
        server.init()
        server.start()
        server.create_database()
        yield server
    finally:
        server.close()


def test_next_turn_succeeds_after_server_restart(private_pg: PrivatePostgres) -> None:
    config = {"configurable": {"thread_id": "restart"}}
    assert private_pg.port != 5432
    with open_saver("postgres:" + private_pg.dsn) as saver:
        graph = child_module().chat_graph(saver)
        graph.invoke({"messages": [HumanMessage("before", id="before")]}, config)
        first = private_pg.pid()
        try:
            private_pg.stop()
            assert private_pg.pid() is None
        finally:
            private_pg.start()
            private_pg.wait_until_up()
        assert private_pg.pid() not in (None, first)  # a new server process
        out = graph.invoke({"messages": [HumanMessage("after", id="after")]}, config)
        assert [m.id for m in out["messages"]] == ["before", "ai-before", "after", "ai-after"]
        assert saver.get_tuple(config).checkpoint["channel_values"]["messages"][-1].id == "ai-after"
