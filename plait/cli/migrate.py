"""``plait migrate``: create or upgrade plait's tables, or import LangGraph's threads.

``plait migrate DB`` brings the checkpoint tables in DB to this version of plait.
``plait migrate --from-langgraph SRC [--to DST]`` imports the threads LangGraph
(``langgraph-checkpoint-sqlite`` or ``-postgres``) stored in SRC into plait's
tables in DST (default: SRC itself; LangGraph's tables are only read, never
changed). Every imported checkpoint is read back and compared.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from plait.checkpoint._langgraph_import import import_threads, langgraph_tables
from plait.checkpoint._langgraph_source import PostgresSource, Source, SqliteSource
from plait.cli.inspect import is_postgres, open_saver
from plait.errors import SerializationError

__all__ = ["migrate"]

_LANGGRAPH_PG = """SELECT EXISTS(SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
    AND table_name = 'checkpoints' AND column_name = 'checkpoint' AND data_type = 'jsonb')"""


@contextmanager
def _source(src: str) -> Generator[Source, None, None]:
    """LangGraph's tables in SRC, opened for reading."""
    if is_postgres(src):
        import psycopg

        try:
            conn = psycopg.connect(src, connect_timeout=5, autocommit=True)
        except psycopg.Error as exc:
            raise click.ClickException(f"cannot connect to PostgreSQL: {str(exc).strip()}") from None
        with conn:
            row = conn.execute(_LANGGRAPH_PG).fetchone()
            if not (row and row[0]):
                raise click.ClickException(
                    "SRC has no LangGraph checkpoint tables (checkpoints, checkpoint_blobs)"
                )
            yield PostgresSource(conn)
        return
    if not Path(src).is_file():
        raise click.BadParameter(f"no such SQLite file: {src}", param_hint="SRC")
    try:
        lite = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
        names = {r[0] for r in lite.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise click.BadParameter(f"{src} is not a SQLite database ({exc})", param_hint="SRC") from None
    try:
        if not langgraph_tables(names):
            raise click.ClickException(f"{src} has no LangGraph checkpoint tables (checkpoints, writes)")
        yield SqliteSource(lite)
    finally:
        lite.close()


def _import(src: str, given: str | None, thread_ids: tuple[str, ...]) -> None:
    with _source(src) as source:
        if given is None and not is_postgres(src):
            # plait's SQLite tables keep seed 002's names (checkpoints, checkpoint_writes), which
            # LangGraph's SQLite saver uses too: its threads go to another file
            raise click.UsageError(
                f"a LangGraph SQLite file cannot also hold plait's tables; give a new file: "
                f"--to {src}.plait.sqlite"
            )
        _import_into(source, given or src, thread_ids)


def _import_into(source: Source, dst: str, thread_ids: tuple[str, ...]) -> None:
    with open_saver(dst, create=True) as saver:
        getattr(saver, "setup", lambda: None)()
        done: list[str] = []

        def progress(thread_id: str, count: int) -> None:
            done.append(thread_id)
            click.echo(f"imported thread {thread_id!r}: {count} checkpoint(s), verified")

        try:
            result = import_threads(source, saver, threads=list(thread_ids) or None, progress=progress)
        except SerializationError as exc:
            kept = f" (threads imported before it stay: {', '.join(done)})" if done else ""
            raise click.ClickException(f"import stopped: {exc}{kept}") from None
    for thread_id in result.skipped:
        click.echo(f"skipped thread {thread_id!r}: the destination already has it")
    click.echo(
        f"{len(result.threads)} thread(s), {result.checkpoints} checkpoint(s) and {result.writes} task write(s) "
        "imported; every checkpoint was read back and matches"
    )


@click.command()
@click.argument("db", required=False)
@click.option("--from-langgraph", "src", metavar="SRC", help="Import LangGraph's threads from SRC.")
@click.option("--to", "dst", metavar="DST", help="Where to import them (default: SRC).")
@click.option(
    "--thread", "thread_ids", multiple=True, metavar="ID", help="Import only this thread (repeatable)."
)
def migrate(db: str | None, src: str | None, dst: str | None, thread_ids: tuple[str, ...]) -> None:
    """Create or upgrade plait's tables in DB, or import LangGraph's threads.

    DB, SRC and DST are SQLite files or PostgreSQL DSNs (postgresql://user@host/db, or
    'host=... dbname=...'). With --from-langgraph, LangGraph's tables in SRC are only read;
    plait's tables are created in DST (default for PostgreSQL: SRC, beside LangGraph's; a
    SQLite SRC needs --to, since both libraries name a SQLite table `checkpoints`). Threads DST
    already has are skipped. Stored values are decoded without pickle; classes other than
    langchain-core messages and documents must be allowed by name (plait.checkpoint.serde.allow).
    """
    if src is None:
        if db is None or dst is not None or thread_ids:
            raise click.UsageError("give DB, or --from-langgraph SRC [--to DST]")
        _setup(db)
        return
    if db is not None:
        raise click.UsageError(f"with --from-langgraph, say where to write with --to {db}")
    _import(src, dst, thread_ids)


def _setup(db: str) -> None:
    with open_saver(db, create=True) as saver:
        setup: Any = getattr(saver, "setup", None)
        if setup is None:
            raise click.ClickException(f"{type(saver).__name__} has no tables to migrate")
        setup()
        click.echo("checkpoint tables are up to date")
