"""Run the server: one process, or several worker processes forked after loading, on one socket.

The parent binds the socket, then forks the workers (imports are done once, so a worker is up
in milliseconds); each worker runs its own uvicorn server and run queue on the shared socket. A
worker that dies (a crash, ``kill -9``) is replaced; SIGTERM/SIGINT stop all of them, each one
draining its runs first. Several workers need PostgreSQL: they share runs, streams and leases
through it.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from types import FrameType

import uvicorn

from plait.server._app import create_app
from plait.server._config import Settings

__all__ = ["serve"]


def _config(settings: Settings, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        create_app(settings),
        host=host,
        port=port,
        log_level="warning",
        timeout_keep_alive=75,  # longer than clients keep idle connections: no reuse of a closed one
        timeout_graceful_shutdown=int(settings.lease_ttl) + 5,
    )


def _worker(settings: Settings, sock: socket.socket) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    uvicorn.Server(_config(settings, "", 0)).run(sockets=[sock])


def _fork(settings: Settings, sock: socket.socket) -> int:
    pid = os.fork()
    if pid == 0:  # the worker
        code = 0
        try:
            _worker(settings, sock)
        except BaseException as exc:  # noqa: BLE001 - report and leave; the parent starts another
            code = 1
            sys.excepthook(type(exc), exc, exc.__traceback__)
        finally:
            os._exit(code)
    return pid


def serve(settings: Settings, host: str, port: int, workers: int = 1) -> None:
    """Serve ``settings`` on ``host:port`` with ``workers`` processes (more than one needs PostgreSQL)."""
    if workers == 1:
        uvicorn.Server(_config(settings, host, port)).run()
        return
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    children = {_fork(settings, sock) for _ in range(workers)}
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while children:
        try:
            pid, _ = os.wait()
        except ChildProcessError:
            break
        children.discard(pid)
        if not stopping:
            children.add(_fork(settings, sock))
    sock.close()
