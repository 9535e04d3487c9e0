"""``plait threads|history|show|diff|prune``: a local inspector for stored threads.

``DB`` is a SQLite file path or a PostgreSQL DSN (``postgresql://...`` or the
``host=... dbname=...`` form). Nothing here needs a running application or a
hosted service: it reads the checkpoint tables, and reading never writes.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeGuard, cast

import click
from langchain_core.messages import BaseMessage
from rich.cells import cell_len, set_cell_size
from rich.console import Console
from rich.table import Table

from plait.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from plait.checkpoint.sqlite import SqliteSaver
from plait.errors import SerializationError

__all__ = ["diff", "history", "is_postgres", "open_saver", "prune", "show", "threads"]

_KEYWORDS = re.compile(r"^\s*\w+\s*=")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhdw]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@contextmanager
def open_saver(db: str, *, create: bool = False) -> Generator[BaseCheckpointSaver, None, None]:
    """Open the saver a ``DB`` argument names (SQLite path or PostgreSQL DSN).

    Args:
        db: A SQLite file path or a ``postgresql://`` DSN.
        create: Allow creating the checkpoint tables (``migrate``); the other commands only read.

    Stored rows are decoded by the same serializer as the savers use, so a file from an
    untrusted source can rebuild nothing but data classes; a row that cannot be decoded
    (corrupt, oversized, or naming a class that is not allowed) ends the command with one
    ``Error:`` line instead of a traceback.
    """
    try:
        if is_postgres(db):
            yield from _open_postgres(db, create)
            return
        if db != ":memory:" and not Path(db).exists():
            if not create:
                raise click.BadParameter(f"no such SQLite file: {db}", param_hint="DB")
        else:
            _check_sqlite(db, create)
        with SqliteSaver.from_conn_string(db) as saver:
            yield saver
    except SerializationError as exc:
        raise click.ClickException(f"cannot read a stored row: {exc}") from None


def is_postgres(db: str) -> bool:
    """Whether a ``DB`` argument is a PostgreSQL DSN (a URL or the ``host=... dbname=...`` form)."""
    return db.startswith(("postgres://", "postgresql://")) or bool(_KEYWORDS.match(db))


def _check_sqlite(db: str, create: bool) -> None:
    import sqlite3

    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise click.BadParameter(f"{db} is not a SQLite database ({exc})", param_hint="DB") from None
    if "plait_meta" not in names and "checkpoints" in names and not create:
        raise click.ClickException(_langgraph_only(db))
    if "plait_meta" not in names and not create:
        raise click.ClickException(
            f"{db} has no plait checkpoints yet (run `plait migrate {db}` to create the tables)"
        )


def _langgraph_only(db: str) -> str:
    return (
        f"{db} holds LangGraph's checkpoint tables, not plait's; import its threads with "
        f"`plait migrate --from-langgraph {db}` (add --to DB to write them elsewhere)"
    )


def _open_postgres(db: str, create: bool) -> Iterator[BaseCheckpointSaver]:
    import psycopg

    from plait.checkpoint.postgres import PostgresSaver

    try:
        with psycopg.connect(db, connect_timeout=5, autocommit=True) as conn:
            plait, legacy, langgraph = conn.execute(PostgresSaver.sql.PROBE).fetchone() or (
                False,
                False,
                False,
            )
    except psycopg.Error as exc:
        raise click.ClickException(f"cannot connect to PostgreSQL: {str(exc).strip()}") from None
    if not (plait or legacy or create):
        if langgraph:
            raise click.ClickException(_langgraph_only("this database"))
        raise click.ClickException(
            "this database has no plait checkpoints yet (`plait migrate DB` creates the tables)"
        )
    with PostgresSaver.from_conn_string(db) as saver:
        yield saver


def _seconds(text: str) -> float:
    match = _DURATION.match(text.strip())
    if match is None:
        raise click.BadParameter(
            f"{text!r} is not a duration; use e.g. 90s, 30m, 12h, 7d", param_hint="--older-than"
        )
    return float(match.group(1)) * _UNITS[match.group(2)]


def _config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, object]:
    conf: dict[str, object] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def _short(value: object, width: int = 70) -> str:
    text = str(value).replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


@click.command()
@click.argument("db")
def threads(db: str) -> None:
    """List the threads stored in DB.

    DB is a SQLite file or a PostgreSQL DSN (postgresql://user@host/db, or 'host=... dbname=...').
    """
    with open_saver(db) as saver:
        table = Table("thread", "checkpoints", "step", "updated")
        for info in sorted(saver.threads(), key=lambda i: i.updated_at, reverse=True):
            table.add_row(info.thread_id, str(info.checkpoints), str(info.step), info.updated_at)
        Console().print(table)


@click.command()
@click.argument("db")
@click.argument("thread_id")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="How many checkpoints, newest first.",
)
def history(db: str, thread_id: str, limit: int) -> None:
    """Show the checkpoints of THREAD_ID: step, source, what changed, what runs next, its parent.

    A checkpoint whose parent is not the row below it starts a fork (marked "fork of").
    A table when the terminal is wide enough, else two or three lines per checkpoint.
    DB is a SQLite file or a PostgreSQL DSN (postgresql://user@host/db, or 'host=... dbname=...').
    """
    with open_saver(db) as saver:
        items = list(saver.list(_config(thread_id), limit=limit))
        if not items:
            raise click.ClickException(f"thread {thread_id!r} has no checkpoints")
        rows = [
            _history_row(item, items[i + 1] if i + 1 < len(items) else None) for i, item in enumerate(items)
        ]
        console = Console()
        table = Table("step", "source", "changed", "next", "created", "checkpoint", "parent")
        for row in rows:
            table.add_row(*row)
        if console.measure(table, options=console.options.update_width(10_000)).maximum <= console.width:
            console.print(table)
            return
        for step, source, changed, nxt, created, checkpoint, parent in rows:  # a narrow terminal
            head = f"{step:>4}  {source:<6}  {created}"
            fits = cell_len(f"{head}  {checkpoint}") <= console.width
            click.echo(
                f"{head}  {checkpoint}" if fits else f"{_fit(head, console.width)}\n      {checkpoint}"
            )
            click.echo(_fit(f"      changed {changed or '-'}; next {nxt or '-'}", console.width))
            if parent.startswith("fork of "):
                click.echo(_fit(f"      {parent}", console.width))


def _history_row(item: CheckpointTuple, below: CheckpointTuple | None) -> tuple[str, ...]:
    """One checkpoint: step, source, changed, next, created, id, parent (or "fork of <parent>")."""
    cp, meta = item.checkpoint, item.metadata
    parent = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id") or ""
    under = below.config["configurable"]["checkpoint_id"] if below is not None else parent
    return (
        str(meta.get("step")),
        str(meta.get("source")),
        ", ".join(cp.get("updated_channels") or ()),
        ", ".join(cp.get("next") or ()),
        str(cp.get("ts", ""))[:19].replace("T", " "),
        item.config["configurable"]["checkpoint_id"],
        parent if parent == under else f"fork of {parent}",
    )


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal cells (wide characters count twice), ending in "…" if cut."""
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, width - 1) + "…"


def _is_messages(value: object) -> TypeGuard[list[BaseMessage]]:
    """``value`` is a non-empty list of messages."""
    if not isinstance(value, list) or not value:
        return False
    items = cast("list[object]", value)  # isinstance leaves the item type unknown
    return all(isinstance(m, BaseMessage) for m in items)


def _print_values(values: dict[str, object]) -> None:
    width = Console().width
    for key, value in values.items():
        if _is_messages(value):
            click.echo(f"{key}: {len(value)} messages")
            for i, message in enumerate(value):
                click.echo(
                    _fit(f"  [{i}] {message.type:<6} {_short(message.content)}  id={message.id}", width)
                )
        else:
            click.echo(_fit(f"{key}: {_short(repr(value), 110)}", width))


@click.command()
@click.argument("db")
@click.argument("thread_id")
@click.option("--checkpoint", "checkpoint_id", default=None, help="A checkpoint id (default: the newest).")
def show(db: str, thread_id: str, checkpoint_id: str | None) -> None:
    """Print the state of THREAD_ID at a checkpoint.

    DB is a SQLite file or a PostgreSQL DSN (postgresql://user@host/db, or 'host=... dbname=...').
    """
    with open_saver(db) as saver:
        item = saver.get_tuple(_config(thread_id, checkpoint_id))
        if item is None:
            if checkpoint_id:
                raise click.ClickException(f"thread {thread_id!r} has no checkpoint {checkpoint_id}")
            raise click.ClickException(f"thread {thread_id!r} has no checkpoints")
        meta = item.metadata
        where = f"checkpoint {item.config['configurable']['checkpoint_id']}"
        what = f"step {meta.get('step')}  source {meta.get('source')}  next {list(item.checkpoint.get('next') or ())}"
        fits = cell_len(f"{where}  {what}") <= Console().width
        click.echo(f"{where}  {what}" if fits else f"{where}\n{what}")
        _print_values(item.checkpoint.get("channel_values") or {})


def _changes(older: CheckpointTuple | None, newer: CheckpointTuple) -> list[str]:
    old = (older.checkpoint.get("channel_values") or {}) if older else {}
    new = newer.checkpoint.get("channel_values") or {}
    lines: list[str] = []
    for key in newer.checkpoint.get("updated_channels") or sorted(set(new) | set(old)):
        before, after = old.get(key), new.get(key)
        if _is_messages(after):
            before_ids = {m.id for m in before or () if isinstance(m, BaseMessage)}
            after_ids = {m.id for m in after}
            added = [m for m in after if m.id not in before_ids]
            removed = len(before_ids - after_ids)
            lines += [f"  + {key}: {m.type} {_short(m.content, 60)}" for m in added]
            if removed:
                lines.append(f"  - {key}: {removed} message(s) removed")
        elif before != after:
            lines.append(f"  ~ {key}: {_short(repr(before), 40)} -> {_short(repr(after), 40)}")
    return lines


@click.command()
@click.argument("db")
@click.argument("thread_id")
@click.option(
    "--limit", type=click.IntRange(min=1), default=20, show_default=True, help="How many steps, newest last."
)
def diff(db: str, thread_id: str, limit: int) -> None:
    """Show what each step of THREAD_ID changed (messages added/removed, values replaced).

    DB is a SQLite file or a PostgreSQL DSN (postgresql://user@host/db, or 'host=... dbname=...').
    """
    with open_saver(db) as saver:
        items = list(saver.list(_config(thread_id), limit=limit + 1))[::-1]
        if not items:
            raise click.ClickException(f"thread {thread_id!r} has no checkpoints")
        width = Console().width
        for older, newer in zip([None, *items[:-1]], items, strict=True):
            if older is None and len(items) > limit:
                continue
            meta = newer.metadata
            nxt = list(newer.checkpoint.get("next") or ())
            click.echo(_fit(f"step {meta.get('step')} ({meta.get('source')}) -> next {nxt}", width))
            for line in _changes(older, newer):
                click.echo(_fit(line, width))


@click.command()
@click.argument("db")
@click.argument("thread_id")
@click.option(
    "--keep-last", type=click.IntRange(min=1), default=None, help="Keep this many newest checkpoints."
)
@click.option("--older-than", default=None, help="Delete checkpoints older than this (90s, 30m, 12h, 7d).")
def prune(db: str, thread_id: str, keep_last: int | None, older_than: str | None) -> None:
    """Delete old checkpoints of THREAD_ID (the newest one is always kept).

    DB is a SQLite file or a PostgreSQL DSN (postgresql://user@host/db, or 'host=... dbname=...').
    """
    if keep_last is None and older_than is None:
        raise click.UsageError("say what to prune: --keep-last N and/or --older-than 7d")
    with open_saver(db) as saver:
        seconds = _seconds(older_than) if older_than else None
        deleted = saver.prune(thread_id, keep_last=keep_last, older_than=seconds)
        click.echo(f"deleted {deleted} checkpoint(s) of thread {thread_id!r}")
