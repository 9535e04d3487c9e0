"""Several saver calls in one transaction and one round trip (backends whose put is one statement).

A run's step usually stores more than one thing: the input checkpoint, the input's writes and the
first step's checkpoint; or its last checkpoint and the release of the thread's lease. Each call is
run as usual, except that its statements are collected instead of sent and each put is answered as
if it had been written; the put's own rule (thread head, parent and base rows) is checked by its
statement, which fails the whole transaction when the rule does not hold. The caller then forgets
what this process assumed and makes the calls one by one, which raises the precise error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from plait.checkpoint._calls import SaveOp
from plait.checkpoint._engine_ops import Batch, Fetch, Ops, Step

__all__ = ["DURABLE", "batched"]

DURABLE = Step("SET LOCAL synchronous_commit TO DEFAULT", [])
"""Undoes a put's ``synchronous_commit = off`` in a transaction whose commit must reach the disk."""


def batched(
    sql: Any,
    call_ops: Callable[[SaveOp], Ops[Any]],
    calls: Sequence[SaveOp],
    tail: tuple[Step, ...],
    done: list[int],
) -> Ops[None]:
    """Run ``calls`` (then the ``tail`` statements) in as few transactions as their reads allow.

    ``sql`` is the dialect module (``STRICT``, ``strict_params``); ``call_ops`` gives a call's
    operation. ``done[0]`` counts the calls committed so far: when a call needs a read first (a
    value evicted from the cache), the statements collected before it are sent and committed.
    With a ``tail``, the last transaction's commit reaches the disk.
    """
    strict_params: Callable[[Sequence[Any]], list[Any]] = sql.strict_params
    strict: Mapping[str, str] = sql.STRICT
    steps: list[Step] = []
    durable = True
    for index, call in enumerate(calls):
        ops = call_ops(call)
        answer: Any = None
        while True:
            try:
                op = ops.send(answer)
            except StopIteration:
                break
            if type(op) is Fetch and op.sql in strict:
                steps.append(Step(strict[op.sql], strict_params(op.params)))
                durable = durable and bool(op.params[8])
                answer = [(op.params[6], True)]  # written, unless the statement fails the transaction
            elif type(op) is Batch:
                steps.extend(op.steps)
                durable = durable and op.durable
                answer = [None] * len(op.steps)
            else:  # a read the rest depends on (or the tables' set-up): commit what came before it
                if steps:
                    yield Batch(tuple(steps), durable)
                    steps, durable = [], True
                    done[0] = index
                answer = yield op
    if tail:
        steps.extend((*tail, DURABLE))
    if steps:
        yield Batch(tuple(steps), durable or bool(tail))
    done[0] = len(calls)
