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
names. Answers are handed back in the batch's own shape: each put
gets the head it found, as its own statement would have answered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from plait.checkpoint._engine_ops import Batch, Step
from plait.checkpoint.postgres._sql import (
    ASYNC_BY_ITSELF,
    ASYNC_COMMIT,
    PUT,
    PUT_TEMP,
    STRICT,
    WRITES_STATEMENTS,
)

__all__ = ["batch_statements", "merge_puts"]

PUT_MANY = f"SELECT * FROM plait_put_many({', '.join(['%s'] * 25)})"
PUT_MANY_TEMP = PUT_MANY.replace("FROM plait_", "FROM pg_temp.plait_")
_MANY = {STRICT[PUT]: PUT_MANY, STRICT[PUT_TEMP]: PUT_MANY_TEMP}
_PREFIX = 4
"""A strict put's own parameters follow its rule's four (``_sql.strict_params``)."""
# where a put's own parameters are (``_sql.put_ops``)
_CID, _LOCK, _DURABLE, _VALUE_CHANNELS, _REWRITE_IDS = 2, 7, 8, 14, 20

Expand = Callable[[list[object]], list[object]]


def batch_statements(op: Batch) -> tuple[tuple[Step, ...], Expand]:
    """The statements to send for ``op``, and how their answers become those of ``op``'s steps.

    Its puts are joined (:func:`merge_puts`); ``ASYNC_COMMIT`` goes first when its commit need not
    reach the disk and no statement turns ``synchronous_commit`` off itself.
    """
    merged, expand = merge_puts(op.steps)
    durable = op.durable or any(item.sql in ASYNC_BY_ITSELF for item in merged)
    steps = merged if durable else (Step(ASYNC_COMMIT, []), *merged)
    skip = len(steps) - len(merged)

    def answers(got: list[object]) -> list[object]:
        return got[skip:] if expand is None else expand(got[skip:])

    return steps, answers


def merge_puts(steps: tuple[Step, ...]) -> tuple[tuple[Step, ...], Expand | None]:
    """``steps`` with each thread's puts joined where they may be; and how to expand the answers
    (``None``: nothing was joined, the answers are the steps' own)."""
    plan: list[list[int]] = []  # each entry: the indices of ``steps`` one statement stands for
    # a thread's call that later puts may still join: its entry in ``plan``, its newest id, the
    # rows its puts rewrite
    open_calls: dict[tuple[object, ...], tuple[int, str, set[str]]] = {}
    for index, item in enumerate(steps):
        if item.sql in _MANY and not item.many:
            own = item.params[_PREFIX:]
            key = (item.sql, own[0], own[1], own[_LOCK])  # form, thread, namespace, lock
            call = open_calls.get(key)
            # a newer id (no value row written twice by one statement), and not a row an earlier
            # put rewrites (the call rewrites after every insert, one-by-one puts before this one's)
            if call is not None and own[_CID] > call[1] and own[_CID] not in call[2]:
                plan[call[0]].append(index)
                call[2].update(own[_REWRITE_IDS])
                open_calls[key] = (call[0], own[_CID], call[2])
                continue
            open_calls[key] = (len(plan), own[_CID], set(own[_REWRITE_IDS]))
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


def _call(puts: Sequence[Step]) -> Step:
    """One ``plait_put_many`` statement for ``puts`` (strict puts of one thread, ids increasing)."""
    owns = [item.params[_PREFIX:] for item in puts]
    first = owns[0]
    params: list[Any] = [first[0], first[1], first[_LOCK], all(own[_DURABLE] for own in owns)]
    for column in (2, 3, 4, 5, 6, 9, 10, 11, 12, 13):  # cid ... meta, one array each
        params.append([own[column] for own in owns])
    params.append([n for n, own in enumerate(owns, 1) for _ in own[_VALUE_CHANNELS]])  # each value row's put
    for column in range(
        _VALUE_CHANNELS, _VALUE_CHANNELS + 10
    ):  # value rows, then rows to rewrite, in put order
        params.append([value for own in owns for value in own[column]])
    return Step(_MANY[puts[0].sql], params)
