"""A batch's puts of one thread as one call of ``plait_put_many``.

A chat turn's batch holds three puts of one thread (input, first step, last step) and the
task's writes between them. Each ``plait_put`` runs seven statements on the server (lock,
head, checks, rows); ``plait_put_many`` takes the lock and reads the head once, checks every
put as its own call would, given the puts before it, and stores all their value rows and all
their checkpoint rows with one statement each (keyframe rows to rewrite: one update each, as
before).

A later put joins an earlier one's call only across steps that cannot see it (a task's
writes, another thread's puts), only with a newer checkpoint id (so no value row is written
twice by one statement), and only when no put already in the call rewrites the row its id
names (see :func:`_may_join`). Answers are handed back in the batch's own shape: each put
gets the head it found, as its own statement would have answered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from plait.checkpoint._engine_ops import Step
from plait.checkpoint.postgres._sql import PUT, PUT_TEMP, STRICT, WRITES_STATEMENTS

__all__ = ["merge_puts"]

PUT_MANY = f"SELECT * FROM plait_put_many({', '.join(['%s'] * 25)})"
PUT_MANY_TEMP = PUT_MANY.replace("FROM plait_", "FROM pg_temp.plait_")
_MANY = {STRICT[PUT]: PUT_MANY, STRICT[PUT_TEMP]: PUT_MANY_TEMP}
_PREFIX = 4
"""A strict put's own parameters follow its rule's four (``_sql.strict_params``)."""

Expand = Callable[[list[Any]], list[Any]]


def merge_puts(steps: tuple[Step, ...]) -> tuple[tuple[Step, ...], Expand | None]:
    """``steps`` with each thread's puts joined where they may be; and how to expand the answers
    (``None``: nothing was joined, the answers are the steps' own)."""
    plan: list[list[int]] = []  # each entry: the indices of ``steps`` one statement stands for
    open_calls: dict[tuple[object, ...], int] = {}  # a thread's call that later puts may still join
    for index, item in enumerate(steps):
        if item.sql in _MANY and not item.many:
            own = item.params[_PREFIX:]
            key = (item.sql, own[0], own[1], own[7])  # form, thread, namespace, lock
            at = open_calls.get(key)
            if at is not None and _may_join(own, [steps[i].params[_PREFIX:] for i in plan[at]]):
                plan[at].append(index)
                continue
            open_calls[key] = len(plan)
        elif item.sql not in WRITES_STATEMENTS:
            open_calls.clear()  # a statement a later put must not pass
        plan.append([index])
    if len(plan) == len(steps):
        return steps, None
    merged = tuple(steps[group[0]] if len(group) == 1 else _call([steps[i] for i in group]) for group in plan)

    def expand(answers: list[Any]) -> list[Any]:
        out: list[Any] = [None] * len(steps)
        for group, answer in zip(plan, answers, strict=True):
            if len(group) == 1:
                out[group[0]] = answer
            else:
                for index, row in zip(group, answer, strict=True):
                    out[index] = [row]
        return out

    return merged, expand


def _may_join(own: Sequence[Any], before: Sequence[Sequence[Any]]) -> bool:
    """Whether a put (its own parameters) may join the call of the puts ``before`` it.

    Its id must be newer than theirs (no value row is written twice by one statement), and no
    row they rewrite may be its own: the call rewrites rows after inserting every put's, where
    one-by-one puts would have inserted this one's after the rewrite.
    """
    return own[2] > before[-1][2] and not any(own[2] in put[20] for put in before)


def _call(puts: Sequence[Step]) -> Step:
    """One ``plait_put_many`` statement for ``puts`` (strict puts of one thread, ids increasing)."""
    owns = [item.params[_PREFIX:] for item in puts]
    first = owns[0]
    params: list[Any] = [first[0], first[1], first[7], all(own[8] for own in owns)]
    for column in (2, 3, 4, 5, 6, 9, 10, 11, 12, 13):  # cid ... meta, one array each
        params.append([own[column] for own in owns])
    params.append([n for n, own in enumerate(owns, 1) for _ in own[14]])  # each value row's put
    for column in range(14, 24):  # value rows, then rows to rewrite, in put order
        params.append([value for own in owns for value in own[column]])
    return Step(_MANY[puts[0].sql], params)
