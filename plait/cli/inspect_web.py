"""``plait inspect DB [--web]``: the threads of a checkpoint database, or its web inspector.

``--web`` serves the read-only inspector page for ``DB`` (a SQLite file or a PostgreSQL DSN
written by any plait program): no config file and no graphs needed. Without ``--web`` the
command lists the threads, like ``plait threads DB``.
"""

from __future__ import annotations

import re

import click

from plait.cli.inspect import is_postgres, open_saver, threads

__all__ = ["inspect", "label"]

_missing: ImportError | None = None
try:
    from plait.server import _inspect as served
except ImportError as _exc:  # the 'serve' extra is missing: `--web` says so, the listing works
    served = None  # type: ignore[assignment]  # mypy types the name as the module; None: no extra
    _missing = _exc


_URL_PASSWORD = re.compile(r"^(\w+://[^:/@]*):[^@]*@")
_KEYWORD_PASSWORD = re.compile(r"\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S*)")


def label(db: str) -> str:
    """``db`` as shown to users: a DSN without its password."""
    if not is_postgres(db):
        return db
    return _KEYWORD_PASSWORD.sub("password=***", _URL_PASSWORD.sub(r"\1@", db))


@click.command()
@click.argument("db")
@click.option("--web", is_flag=True, help="Serve the web inspector for DB (needs the 'serve' extra).")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Interface to bind (0.0.0.0 exposes the data)."
)
@click.option(
    "--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free port)."
)
@click.option("--no-browser", is_flag=True, help="Do not open a browser on the page.")
@click.pass_context
def inspect(ctx: click.Context, db: str, web: bool, host: str, port: int, no_browser: bool) -> None:
    """Browse the checkpoints of DB: threads, timelines, states, diffs (read-only).

    With --web, serve the inspector page (http://127.0.0.1:PORT/ui) until Ctrl+C. Drawing the
    graph, fork, edit and resume need the graph itself: use `plait serve --db DB` for those.

    DB is a SQLite file or a PostgreSQL DSN (postgresql://user@host/db, or 'host=... dbname=...').
    """
    if not web:
        ctx.invoke(threads, db=db)
        click.echo(f"Browse them with: plait inspect {label(db)} --web")
        return
    if served is None:
        raise click.ClickException(
            f"plait inspect --web needs the 'serve' extra ({_missing}): pip install 'plait[serve]'"
        )
    with open_saver(db) as saver:
        try:
            sock = served.bind(host, port)
        except OSError as exc:
            raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        shown = label(db)
        click.echo(f"plait inspect: {served.inspector_url(sock)} (db: {shown}, read-only; Ctrl+C stops)")
        if host not in ("127.0.0.1", "localhost", "::1"):
            click.echo(f"warning: {host} lets other machines read this database (no token)", err=True)
        try:
            served.run_inspector(saver, shown, sock, open_browser=not no_browser)
        finally:
            sock.close()
