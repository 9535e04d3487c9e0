"""Database operations of the SQL savers as data, and the loops that perform them.

The saver engine is written once, as generators that *yield* what they need
from the database and receive the answer (the model of the runtime's effects):

* :class:`Fetch`: one read statement, outside any transaction; answer: the rows;
* :class:`Batch`: statements run in one transaction, sent together (PostgreSQL:
  pipeline mode, so one network round trip); answer: each statement's rows, or
  its row count when it returns none;
* :class:`Session`: a transaction whose statements depend on earlier answers
  (pruning, migrations): the body generator yields :class:`Step` objects;
* :class:`Item`: not an operation: one result of a listing, handed to the caller.

A sync backend performs them with :func:`drive` / :func:`iterate`, an async one
with :func:`adrive` / :func:`aiterate`; the sync drivers are generated from the
async ones (``tools/unasync_gen.py``), so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any, NamedTuple, TypeVar

__all__ = [
    "Batch",
    "Fetch",
    "Item",
    "Op",
    "Ops",
    "Session",
    "Setup",
    "Step",
    "adrive",
    "aiterate",
    "arun_session",
    "drive",
    "iterate",
    "run_session",
]

_T = TypeVar("_T")


class Step(NamedTuple):
    """One statement of a transaction; ``many``: ``params`` is a list of parameter sets."""

    sql: str
    params: Any
    many: bool = False


class Fetch(NamedTuple):
    """A read outside any transaction; answered with the rows."""

    sql: str
    params: Any


class Batch(NamedTuple):
    """Statements in one transaction, sent at once; answered with a list of rows or row counts.

    ``durable=False`` lets PostgreSQL acknowledge the commit before it reaches the disk
    (``synchronous_commit = off`` for this transaction; a later durable commit flushes it).
    """

    steps: tuple[Step, ...]
    durable: bool = True


class Session(NamedTuple):
    """A transaction driven by ``body``: each :class:`Step` it yields is answered; its return value answers the op."""

    body: Generator[Step, object, object]
    durable: bool = True
    immediate: bool = True


class Setup(NamedTuple):
    """Create or migrate the tables (``write``), or for a read only report whether they exist; answered with a bool."""

    write: bool


class Item(NamedTuple):
    """One result of a listing (not an operation)."""

    value: Any


Op = Fetch | Batch | Session | Setup
Ops = Generator[Op | Item, Any, _T]
"""An engine operation: yields ops (and listing items), returns its result."""


# >>> async source
async def adrive(ops: Ops[_T], perform: Callable[[Op], Awaitable[Any]]) -> _T:
    """Run ``ops`` to completion, performing each op with ``perform``."""
    answer: Any = None
    while True:
        try:
            op = ops.send(answer)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the generator's declared return type
        answer = None if isinstance(op, Item) else await perform(op)


async def aiterate(ops: Ops[None], perform: Callable[[Op], Awaitable[object]]) -> AsyncIterator[object]:
    """The items of a listing, performing its ops with ``perform`` as they come."""
    answer: Any = None
    try:
        while True:
            try:
                op = ops.send(answer)
            except StopIteration:
                return
            if isinstance(op, Item):
                answer = None
                yield op.value
            else:
                answer = await perform(op)
    finally:
        ops.close()


async def arun_session(body: Generator[Step, object, _T], execute: Callable[[Step], Awaitable[object]]) -> _T:
    """Drive a :class:`Session` body with ``execute`` (one statement, inside the open transaction)."""
    answer: Any = None
    while True:
        try:
            step = body.send(answer)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the generator's declared return type
        answer = await execute(step)


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def drive(ops: Ops[_T], perform: Callable[[Op], Any]) -> _T:
    """Run ``ops`` to completion, performing each op with ``perform``."""
    answer: Any = None
    while True:
        try:
            op = ops.send(answer)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the generator's declared return type
        answer = None if isinstance(op, Item) else perform(op)


def iterate(ops: Ops[None], perform: Callable[[Op], object]) -> Iterator[object]:
    """The items of a listing, performing its ops with ``perform`` as they come."""
    answer: Any = None
    try:
        while True:
            try:
                op = ops.send(answer)
            except StopIteration:
                return
            if isinstance(op, Item):
                answer = None
                yield op.value
            else:
                answer = perform(op)
    finally:
        ops.close()


def run_session(body: Generator[Step, object, _T], execute: Callable[[Step], object]) -> _T:
    """Drive a :class:`Session` body with ``execute`` (one statement, inside the open transaction)."""
    answer: Any = None
    while True:
        try:
            step = body.send(answer)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the generator's declared return type
        answer = execute(step)


# <<< generated sync
