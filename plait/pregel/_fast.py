"""The fast path: a plain run, one node at a time, with none of the loop's machinery.

Most runs of a small graph are a chain of one-task steps. When the plan allows it
(:class:`~plait.pregel._plan.FastTables`: plain sync nodes, plain routers, no joins…) and the run
has no saver, stream, callbacks or options, ``invoke`` runs here: each node's dict merges into the
values through the same :func:`~plait.pregel._writes.apply_writes`, control follows the plan's
successor tables and routers are called inline, with the loop's step numbers, recursion limit and
errors. No task, effect, event sink or task context is made.

Whatever this does not handle is handed over to the loop (:func:`~plait.pregel._run.go_on`) at the
point it arises, and the loop goes on from these values as if it had run the steps so far: a step
of several tasks or ``Send`` tasks (before it runs), a node that returns something other than a
dict or ``None``, raises an interrupt or a ``Command`` for its parent, or reaches its task context
(``get_config()``, ``interrupt()``, a subgraph…) — the context is made then, on the loop the run
hands over to (:class:`~plait._context.PendingTask`).
"""

from __future__ import annotations

import asyncio
import threading
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from plait._context import TASK_CONTEXT, PendingTask
from plait._schema import MISSING
from plait.constants import END, START
from plait.errors import GraphBubbleUp
from plait.pregel._callable import run_coroutine
from plait.pregel._control import coerce_context, usual_configurable
from plait.pregel._input import input_writes
from plait.pregel._limits import DEFAULT_RECURSION_LIMIT, recursion_error
from plait.pregel._loop import Loop
from plait.pregel._plan import Branch, FastTables, NodeSpec, Plan
from plait.pregel._run import go_on, make_context
from plait.pregel._run_state import RunState
from plait.pregel._step import branch_state, read_state, route
from plait.pregel._task import Task, note_task
from plait.pregel._writes import apply_writes
from plait.types import Overwrite

if TYPE_CHECKING:
    from collections.abc import Callable

    from plait.pregel._context import TaskContext

__all__ = ["SLOW", "Handed", "run_fast"]

SLOW = object()
"""What :func:`run_fast` returns when the run must take the loop from its start."""
_T = TypeVar("_T")


class Handed:
    """What :func:`run_fast` returns when the loop took the run over: the loop, run to its end."""

    __slots__ = ("loop",)

    def __init__(self, loop: Loop) -> None:
        self.loop = loop


class _Run:
    """One fast run: what a hand-over or a node's task context needs of it."""

    __slots__ = ("config", "context", "graph", "loop", "run", "store")

    def __init__(
        self, graph: Any, config: dict[str, object], run: RunState, store: object, context: object
    ) -> None:
        self.graph, self.config, self.run, self.store, self.context = graph, config, run, store, context
        self.loop: Loop | None = None

    def handed(self) -> Loop:
        """The loop that takes the run over (or makes a node's task context), made once, on these
        values and steps."""
        loop = self.loop
        if loop is None:
            self.loop = loop = self.graph._loop(self.config, frozenset(), {})  # noqa: SLF001 - its own graph
            loop.run = self.run
            loop.start_step = 0
        return loop


_new = object.__new__
_RESOLVING = threading.Lock()
"""Held while a task context is made: two threads of one node never make two."""


class _Call(PendingTask):
    """One node call of a fast run: its task context, made when the node (or a thread it started,
    even after it returned) asks for it; made while it runs, the run goes on in the loop."""

    __slots__ = ("ctx", "fast", "input", "name")
    # set by _steps on an instance made without __init__ (one per node call: the hot loop)
    fast: _Run
    name: str
    input: object
    ctx: TaskContext | None

    def resolve(self) -> TaskContext:
        """This call's task context, made once, on the loop the run is handed over to."""
        ctx = self.ctx
        if ctx is None:
            with _RESOLVING:
                ctx = self.ctx
                if ctx is None:
                    fast = self.fast
                    task = Task(self.name, fast.graph.plan.nodes[self.name], self.input)
                    self.ctx = ctx = make_context(fast.handed(), task, fast.store, fast.context)
        return ctx


def run_fast(graph: Any, tables: FastTables, input: object, config: dict[str, Any], context: object) -> Any:  # noqa: A002
    """Run ``graph`` to its end on the fast path (``config``: checked by ``run_config``): its output,
    :class:`Handed` when the loop took over, or :data:`SLOW` when the config asks for more than this
    handles (callbacks, a runtime or server keys)."""
    configurable = config.get("configurable")
    if config.get("callbacks") or (configurable and not usual_configurable(config)):
        return SLOW
    plan: Plan = graph.plan
    if context is not None:
        context = coerce_context(getattr(graph, "context_schema", None), context)
    limit = config.get("recursion_limit")
    limit = DEFAULT_RECURSION_LIMIT if limit is None else int(limit)
    keys = plan.input_keys
    given: dict[str, object]
    if type(input) is dict:  # input_writes' common case
        given = {k: v for k, v in input.items() if k in keys}  # pyright: ignore[reportUnknownVariableType]
    else:
        given = dict(input_writes(plan, input))
    values: dict[str, object] = {}
    for key, channel in tables.initial:
        value = channel.initial()
        if value is not MISSING:
            values[key] = value
    run = RunState(values=values)
    _merge(plan, run, tables.plain, START, given)
    after = tables.start
    if tables.start_branches:
        after = _routed(plan, tables, START, after, tables.start_branches, run, (0, limit))
    run.step = 1
    try:
        return _steps(_Run(graph, config, run, graph.store, context), tables, after, limit)
    except StopIteration as exc:  # what the loop's generators make of it (PEP 479)
        raise RuntimeError("generator raised StopIteration") from exc


def _steps(fast: _Run, tables: FastTables, after: tuple[str, ...], limit: int) -> Any:  # noqa: C901, PLR0915 - the hot loop, inline
    """The run's steps, from the first: see :func:`run_fast`."""
    plan, run = fast.graph.plan, fast.run
    values, nodes, plain = run.values, tables.nodes, tables.plain
    step = 1
    while True:
        if run.sends or len(after) > 1:  # a step of several tasks: the loop runs it
            run.next = list(after)
            return _handed(fast, None, None)
        if step > limit or not after:  # the limit first: a run that ends just past it fails (LangGraph's)
            if step <= limit:
                return {k: values[k] for k in plan.output_keys if k in values}
            run.next = list(after)
            raise recursion_error(run, limit)
        name = after[0]
        node = nodes[name]
        if node.shaped:
            task_input = _shaped(node.spec, values)
        else:
            task_input = {k: values[k] for k in node.reads if k in values}
        call = _new(_Call)  # _Call's fields, set here: no __init__ call per node
        call.fast = fast
        call.name = name
        call.input = task_input
        call.ctx = None
        out: Any = None
        failed: BaseException | None = None
        token = TASK_CONTEXT.set(call)
        try:
            out = node.fn(task_input)
        except (GraphBubbleUp, asyncio.CancelledError) as exc:  # interrupts, Command(graph=PARENT)…
            failed = exc
        except Exception as exc:
            if call.ctx is None:  # a plain failure ends the run with it, as the loop's does without a saver
                TASK_CONTEXT.reset(token)
                _note(exc, call)
                raise
            failed = exc
        except BaseException:
            TASK_CONTEXT.reset(token)
            raise
        if failed is not None:  # handed over outside the except clause: nothing chains to it
            TASK_CONTEXT.reset(token)
            return _handed(fast, call, partial(_raise, failed))
        if call.ctx is not None or (out is not None and type(out) is not dict):
            TASK_CONTEXT.reset(token)
            return _handed(fast, call, partial(_value, out))
        try:  # the task's context stays set for its routers (get_config() in a router)
            if out:
                written: dict[str, object] = out  # pyright: ignore[reportUnknownVariableType]  # a node's dict
                if written.keys() <= plain:  # _merge, inline (every node of every step)
                    for value in written.values():
                        if type(value) is dict or isinstance(value, Overwrite):
                            apply_writes(plan, run, ((name, tuple(written.items())),))
                            break
                    else:
                        values.update(written)
                else:
                    apply_writes(plan, run, ((name, tuple(written.items())),))
            after = node.after
            if node.branches:
                try:
                    after = _routed(plan, tables, name, after, node.branches, run, (step, limit))
                except Exception as exc:
                    _note(exc, call)
                    raise
        finally:
            TASK_CONTEXT.reset(token)
        run.step = step = step + 1


def _note(exc: BaseException, call: _Call) -> None:
    """Name the task ``exc`` came from, as the loop does (its id needs the task's context: made
    here, for the error only); the error goes on unchanged if the context cannot be made."""
    try:
        task_id = call.resolve().task_id
    except Exception:  # noqa: BLE001 - the node's own error is the one to report
        return
    note_task(exc, call.name, task_id)


def _merge(plan: Plan, run: RunState, plain: frozenset[str], name: str, written: dict[str, object]) -> None:
    """Merge a node's dict into the values, as :func:`~plait.pregel._writes.apply_writes` does; inline
    when every key keeps its last value and no value asks for more (an ``Overwrite``, or a dict,
    which may be one's wire form)."""
    if written.keys() <= plain:
        for value in written.values():
            if type(value) is dict or isinstance(value, Overwrite):
                break
        else:
            run.values.update(written)
            return
    apply_writes(plan, run, ((name, tuple(written.items())),))


def _shaped(spec: NodeSpec, values: dict[str, object]) -> object:
    """A node's input with its defaults, as its state class when it has one."""
    state = read_state(values, spec.reads, spec.defaults)
    return state if spec.make_input is None else spec.make_input(state)


def _routed(  # noqa: PLR0913 - the step, and where it routes from
    plan: Plan,
    tables: FastTables,
    name: str,
    after: tuple[str, ...],
    branches: tuple[Branch, ...],
    run: RunState,
    steps: tuple[int, int],
) -> tuple[str, ...]:
    """The next step's nodes after ``name``: its static successors, then its routers' answers on
    the state (``steps``: the step and the run's last, as ``branch_state`` takes them); ``Send``
    answers go to ``run.sends``."""
    values = run.values
    if tables.plain_state:
        state: object = {k: values[k] for k in plan.state_keys if k in values}
    else:
        state = branch_state(plan, values, *steps)
    if len(branches) == 1 and not after:  # the common router: one node's name, or END
        branch = branches[0]
        answer = branch.path(state)
        if type(answer) is str:
            known = branch.path_map
            target = answer if known is None else known.get(answer)
            if target is not None and target in tables.nodes:
                return (target,)
            if target == END:
                return ()
        answers = [run_coroutine(answer)]
    else:
        answers = [run_coroutine(branch.path(state)) for branch in branches]
    pulls = dict.fromkeys(after)
    for branch, answer in zip(branches, answers, strict=True):
        route(plan, name, answer, pulls, run.sends, branch.path_map)
    return tuple(sorted(pulls)) if len(pulls) > 1 else tuple(pulls)


def _handed(fast: _Run, call: _Call | None, first: Callable[[], object] | None) -> Handed:
    """Hand the run over to the loop: at the step it reached, or after ``call``, whose node was
    called already (``first``: its outcome, returned or raised again)."""
    loop = fast.handed()
    if call is None:
        go_on(loop, None, fast.store, fast.context)
    else:
        fast.run.next = [call.name]
        ctx = call.resolve()
        assert ctx.task is not None and first is not None  # noqa: PT018, S101 - resolve() makes its task; a called node has an outcome
        go_on(loop, (ctx.task, ctx, first), fast.store, fast.context)
    return Handed(loop)


def _raise(exc: BaseException) -> NoReturn:
    raise exc


def _value(value: _T) -> _T:
    return value
