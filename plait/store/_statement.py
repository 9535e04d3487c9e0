"""SQL statements as values: what the store engine yields and the drivers execute."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any, NamedTuple

__all__ = ["Rows", "Sql", "Step", "adrive", "drive", "ns_text", "prefix_condition"]

Rows = list[tuple[Any, ...]]


class Sql(NamedTuple):
    """One statement to execute; ``many`` runs it once per parameter tuple."""

    text: str
    params: Sequence[Any] = ()
    many: bool = False


Step = Generator[Sql, Rows, Any]
"""A piece of store logic: yields statements, receives their rows, returns a result."""


def ns_text(namespace: tuple[str, ...]) -> str:
    """A namespace as stored: labels joined by dots (labels cannot contain dots)."""
    return ".".join(namespace)


def prefix_condition(p: str, prefix: tuple[str, ...]) -> tuple[str, list[object]]:
    """``s.prefix`` equals ``prefix`` or lies under it (a range scan: ``'/'`` follows ``'.'``).

    Args:
        p: The placeholder.
        prefix: The namespace prefix (``()``: everything).

    Returns:
        The condition and its parameters.
    """
    if not prefix:
        return "1=1", []
    text = ns_text(prefix)
    return f"(s.prefix = {p} OR (s.prefix >= {p} AND s.prefix < {p}))", [text, text + ".", text + "/"]


# >>> async source
async def adrive(step: Step, execute: Callable[[Sql], Awaitable[Rows]]) -> Any:
    """Run a step generator to its result, executing each statement with ``execute``.

    Args:
        step: The generator.
        execute: Runs one statement and returns its rows.

    Returns:
        The generator's result.
    """
    answer: Rows | None = None
    error: Exception | None = None
    while True:
        try:
            sql = step.send(answer) if error is None else step.throw(error)  # type: ignore[arg-type]  # first send: None
        except StopIteration as stop:
            return stop.value
        answer, error = None, None
        try:
            answer = await execute(sql)
        except Exception as exc:  # noqa: BLE001 - handed to the step, which may recover (savepoints) or re-raise
            error = exc


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def drive(step: Step, execute: Callable[[Sql], Rows]) -> Any:
    """Run a step generator to its result, executing each statement with ``execute``.

    Args:
        step: The generator.
        execute: Runs one statement and returns its rows.

    Returns:
        The generator's result.
    """
    answer: Rows | None = None
    error: Exception | None = None
    while True:
        try:
            sql = step.send(answer) if error is None else step.throw(error)  # type: ignore[arg-type]  # first send: None
        except StopIteration as stop:
            return stop.value
        answer, error = None, None
        try:
            answer = execute(sql)
        except Exception as exc:  # noqa: BLE001 - handed to the step, which may recover (savepoints) or re-raise
            error = exc


# <<< generated sync
