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

from plait.checkpoint._langgraph_import import (
    COMPLETE,
    IMPORTED,
    KEPT,
    Outcome,
    import_threads,
    langgraph_tables,
)
from plait.checkpoint._langgraph_source import PostgresSource, Source, SqliteSource
from plait.checkpoint.serde import Serializer
from plait.cli.inspect import is_postgres, open_saver

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


def _import(src: str, given: str | None, thread_ids: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    with _source(src) as source:
        if given is None and not is_postgres(src):
            # plait's SQLite tables keep seed 002's names (checkpoints, checkpoint_writes), which
            # LangGraph's SQLite saver uses too: its threads go to another file
            raise click.UsageError(
                f"a LangGraph SQLite file cannot also hold plait's tables; give a new file: "
                f"--to {src}.plait.sqlite"
            )
        _import_into(source, given or src, thread_ids, allowed)


def _say(outcome: Outcome) -> None:
    name = repr(outcome.thread_id)
    if outcome.status == IMPORTED:
        note = f" ({outcome.detail})" if outcome.detail else ""
        click.echo(f"imported thread {name}: {outcome.checkpoints} checkpoint(s), verified{note}")
    elif outcome.status == KEPT:
        click.echo(f"kept thread {name} as the destination has it: {outcome.detail}")
    elif outcome.status == COMPLETE:
        click.echo(
            f"thread {name} is already complete in the destination ({outcome.checkpoints} checkpoint(s))"
        )
    else:
        click.echo(f"failed thread {name}: {outcome.detail}; nothing of it was written")


def _import_into(source: Source, dst: str, thread_ids: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    with open_saver(dst, create=True) as saver:
        getattr(saver, "setup", lambda: None)()
        serde = getattr(saver, "serde", None)
        if allowed and isinstance(serde, Serializer):
            serde.allow(*allowed)
        result = import_threads(source, saver, threads=list(thread_ids) or None, progress=_say)
    click.echo(
        f"{len(result.threads)} thread(s), {result.checkpoints} checkpoint(s) and {result.writes} task write(s) "
        f"imported, every checkpoint read back and matching; {len(result.skipped)} left alone"
    )
    if result.failed:
        raise click.ClickException(
            f"{len(result.failed)} thread(s) failed: {', '.join(map(repr, result.failed))}; fix what each "
            "says (a class of yours: --allow module.Class) and migrate again: complete threads are left alone"
        )


@click.command()
@click.argument("db", required=False)
@click.option("--from-langgraph", "src", metavar="SRC", help="Import LangGraph's threads from SRC.")
@click.option("--to", "dst", metavar="DST", help="Where to import them (default: SRC).")
@click.option(
    "--thread", "thread_ids", multiple=True, metavar="ID", help="Import only this thread (repeatable)."
)
@click.option(
    "--allow",
    "allowed",
    multiple=True,
    metavar="NAME",
    help="Also rebuild this class (module.Class) or the data classes of this module (repeatable).",
)
def migrate(
    db: str | None, src: str | None, dst: str | None, thread_ids: tuple[str, ...], allowed: tuple[str, ...]
) -> None:
    """Create or upgrade plait's tables in DB, or import LangGraph's threads.

    DB, SRC and DST are SQLite files or PostgreSQL DSNs (postgresql://user@host/db, or
    'host=... dbname=...'). With --from-langgraph, LangGraph's tables in SRC are only read;
    plait's tables are created in DST (default for PostgreSQL: SRC, beside LangGraph's; a
    SQLite SRC needs --to, since both libraries name a SQLite table `checkpoints`). Each thread
    is imported whole or not at all; threads DST has every checkpoint of are left alone, and a
    thread it has only part of is imported again. Stored values are decoded without pickle;
    classes other than langchain-core messages and documents must be allowed by name (--allow).
    """
    if src is None:
        if db is None or dst is not None or thread_ids or allowed:
            raise click.UsageError("give DB, or --from-langgraph SRC [--to DST]")
        _setup(db)
        return
    if db is not None:
        raise click.UsageError(f"with --from-langgraph, say where to write with --to {db}")
    _import(src, dst, thread_ids, allowed)


def _setup(db: str) -> None:
    with open_saver(db, create=True) as saver:
        setup: Any = getattr(saver, "setup", None)
        if setup is None:
            raise click.ClickException(f"{type(saver).__name__} has no tables to migrate")
        setup()
        click.echo("checkpoint tables are up to date")
