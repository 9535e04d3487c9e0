"""Start ``plait serve`` as a real process on a free port, and stop it."""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from _pg import private_schema

APP = pathlib.Path(__file__).parent / "app"
ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAIT = pathlib.Path(sys.executable).parent / "plait"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]
    log: pathlib.Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def start(
    db: str,
    tmp: pathlib.Path,
    *args: str,
    env: dict[str, str] | None = None,
    token: str | None = None,
    app: pathlib.Path = APP,
    config: str = "plait.json",
) -> Server:
    """``plait serve`` on ``db`` with the graphs of ``app`` (a directory with a ``plait.json``, or ``config``)."""
    port = free_port()
    log = tmp / f"server-{port}.log"
    cmd = [str(PLAIT), "serve", "--config", str(app / config), "--port", str(port), "--db", db, *args]
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    full_env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    if token:
        full_env["PLAIT_AUTH_TOKEN"] = token
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=full_env, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # (a loaded machine imports slowly; only so a broken start fails)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"plait serve exited with {proc.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(url + "/ok", timeout=1).status_code == 200:
                return Server(url, proc, log)
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    stop(Server(url, proc, log))
    raise RuntimeError(f"plait serve did not answer on {url}:\n{log.read_text()}")


def stop(server: Server, sig: int = signal.SIGTERM) -> None:
    if server.proc.poll() is None:
        os.killpg(server.proc.pid, sig)
        try:
            server.proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait()


@contextmanager
def running(db: str, tmp: pathlib.Path, *args: str, **kwargs: object) -> Iterator[Server]:
    server = start(db, tmp, *args, **kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        stop(server)


@contextmanager
def running_on(
    database: str,
    tmp: pathlib.Path,
    *args: str,
    env: dict[str, str] | None = None,
    app: pathlib.Path = APP,
    prefix: str = "plait_api",
) -> Iterator[Server]:
    """``plait serve ARGS`` on a SQLite file in ``tmp`` (``"sqlite"``) or on a private PostgreSQL schema."""
    if database == "sqlite":
        with running(str(tmp / "server.sqlite"), tmp, *args, env=env, app=app) as srv:
            yield srv
        return
    with private_schema(prefix) as dsn, running(dsn, tmp, *args, env=env, app=app) as srv:
        yield srv


def wait_for_file(path: pathlib.Path, within: float = 120) -> None:
    """Wait until a server's node wrote ``path`` (``within`` seconds at most: then the test fails)."""
    deadline = time.monotonic() + within
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.02)


class Gate:
    """A node of the test app given the message ``gate.text`` runs until the test opens the gate."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path

    @property
    def text(self) -> str:
        return f"gate:{self.path}"

    def input(self) -> dict[str, list[dict[str, str]]]:
        """The run input whose node waits at this gate."""
        return {"messages": [{"role": "user", "content": self.text}]}

    def started(self) -> None:
        """Wait until the node is at the gate."""
        wait_for_file(self.path.with_suffix(".started"))

    def open(self) -> None:
        self.path.touch()
