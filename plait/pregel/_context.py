"""The context a running node sees: config, store, stream writer, interrupts.

Set through one context variable per task, read by ``get_config()``,
``get_store()``, ``get_stream_writer()``, ``get_runtime()`` and ``interrupt()``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from plait._context import TASK_CONTEXT, PendingTask, RunningTask
from plait._context import running_task as any_task
from plait._internal._constants import CONFIG_KEY_RUNTIME
from plait.checkpoint._task_ids import interrupt_key
from plait.errors import GraphInterrupt
from plait.pregel._answers import ResponseSchema
from plait.pregel._task import Task
from plait.pregel._timeout import Progress
from plait.runtime import ExecutionInfo, Runtime
from plait.types import Interrupt

__all__ = ["TaskContext", "current_task", "running_task", "task_scope"]


# the dataclasses' default factories are the builtins; typed here with their element types
if TYPE_CHECKING:
    from plait.checkpoint.base import BaseCheckpointSaver

    def _resumes() -> list[object]: ...
    def _pairs() -> list[tuple[str, object]]: ...

else:
    _resumes = _pairs = list


def _drop(_: object) -> None:
    return None


@dataclass(slots=True)
class TaskContext:
    """What one task may reach while it runs.

    What is the same for every task of a run (saver, durability…) is read from ``loop.settings``
    (the stream from ``loop``), so a task's context is cheap to make.

    Attributes:
        config: The run config (``configurable`` included).
        store: The long-term store given to ``compile()``, if any.
        context: The run's ``context`` object (``context_schema``).
        loop: The run (:class:`~plait.pregel._loop.Loop`) this task belongs to: functional-API
            tasks and node caching read its saved writes, resume values and cache.
        node: Name of the running node.
        resume: Answers for this task's ``interrupt()`` calls, in call order.
        lc_config: LangChain child config (callbacks, metadata) for runnables the node invokes.
        calls: Functional-API tasks called from this task (:mod:`plait.pregel._func_tasks`), if any.
    """

    config: dict[str, Any]
    store: object = None
    context: object = None
    loop: Any = None
    node: str = ""
    task_id: str = ""
    # the factory is cast once, here, to its element type (it stays the builtin list)
    resume: list[object] = field(default_factory=_resumes)
    lc_config: dict[str, Any] | None = None
    paused: bool = False
    """The task paused before (an interrupt or a subgraph breakpoint): subgraphs inside continue."""
    first_attempt_time: float | None = None
    """``time.time()`` when the node's first attempt started."""
    node_error: Any = None
    """The failure an error handler task handles (:class:`~plait.errors.NodeError`), else ``None``."""
    calls: Any = None
    subgraph_calls: int = 0
    attempt: int = 1
    """Which attempt of the node this is (retry policies run it again)."""
    pushed: list[tuple[str, object]] = field(default_factory=_pairs)
    """Writes the node made while running (``push_message``): they come before its result's."""
    task: Task | None = None
    """The running task (its node's config names it), if any."""
    progress: Progress | None = None
    """The attempt's progress clock, when its node has a ``timeout`` (:mod:`plait.pregel._timeout`)."""
    _calls: int = 0

    @property
    def node_config(self) -> dict[str, object]:
        """The config the node receives (a ``config`` parameter, ``get_config()``): the run's, its
        ``metadata`` with LangGraph's keys of the task (``langgraph_node``, ``langgraph_step``…), and
        the task's :class:`~plait.runtime.Runtime` under ``configurable["__pregel_runtime"]``, where
        code written on LangGraph reads it."""
        if self.task is None or self.loop is None:
            return self.config
        keys = self.loop.sink.task_keys(self.task, self.loop.run.step, self.task_id)
        configurable: dict[str, object] = {
            **(self.config.get("configurable") or {}),
            CONFIG_KEY_RUNTIME: self.runtime(),
        }
        metadata: dict[str, object] = {**(self.config.get("metadata") or {}), **keys}
        return {**self.config, "configurable": configurable, "metadata": metadata}

    @property
    def writer(self) -> Callable[[object], None]:
        """Emits ``custom`` stream events."""
        writer = _drop if self.loop is None else self.loop.sink.custom
        return writer if self.progress is None else self.progress.guard(writer)

    @property
    def saver(self) -> BaseCheckpointSaver | None:
        """The run's checkpointer (subgraphs save into it), or ``None``."""
        return None if self.loop is None else self.loop.settings.saver

    @property
    def checkpoint_ns(self) -> str:
        """The namespace of the running graph within the thread."""
        thread = None if self.loop is None else self.loop.settings.thread
        return "" if thread is None else thread.checkpoint_ns

    @property
    def held(self) -> frozenset[Hashable]:
        """Thread leases held by this task's run and the runs it is nested in
        (see :meth:`~plait.checkpoint.base.BaseCheckpointSaver.lease_id`)."""
        return frozenset() if self.loop is None else self.loop.held

    @property
    def stream(self) -> Any:
        """The run's event sink when subgraphs stream into it (``subgraphs=True``), else ``None``."""
        sink = None if self.loop is None else self.loop.sink
        return sink if sink is not None and sink.subgraphs else None

    @property
    def durability(self) -> str:
        """The run's durability mode; subgraphs inherit it."""
        return "sync" if self.loop is None else self.loop.settings.durability

    @property
    def control(self) -> Any:
        """The run's :class:`~plait.runtime.RunControl`."""
        return None if self.loop is None else self.loop.settings.control

    @property
    def server_info(self) -> Any:
        """The run's :class:`~plait.runtime.ServerInfo`, or ``None``."""
        return None if self.loop is None else self.loop.settings.server_info

    def begin_attempt(self, attempt: int) -> None:
        """A (re)try of the node starts: its ``interrupt()`` calls take the answers from the first."""
        self.attempt = attempt
        self._calls = 0
        self.subgraph_calls = 0
        self.pushed.clear()

    def interrupt(self, value: object, *, response_schema: object = None) -> Any:
        """Return the resume value for this call, or stop the node with an ``Interrupt``.

        Raises:
            GraphInterrupt: no answer yet.
            pydantic.ValidationError: the answer does not match ``response_schema``.
        """
        index = self._calls
        self._calls += 1
        schema = ResponseSchema.of(response_schema)
        if index < len(self.resume):
            return schema.validate(self.resume[index])
        took, answer = self.loop.spare.take() if getattr(self.loop, "spare", None) else (False, None)
        if took:  # the run's resume value, which no task waited for: kept as this task's answer
            self.resume.append(answer)
            self.loop.resumes.setdefault(self.task_id, []).append(answer)
            return schema.validate(answer)
        raise GraphInterrupt(
            (
                Interrupt(
                    value=value,
                    id=interrupt_key(self.namespace, self.task_id, len(self.resume)),
                    response_schema=schema.shown,
                ),
            )
        )

    @property
    def namespace(self) -> str:
        """The task's own namespace: ``node:task_id``, under the graph's (``|``-separated)."""
        own = f"{self.node}:{self.task_id}"
        return f"{self.checkpoint_ns}|{own}" if self.checkpoint_ns else own

    def execution_info(self) -> ExecutionInfo:
        """Where this task runs (``runtime.execution_info``)."""
        configurable: dict[str, Any] = self.config.get("configurable") or {}
        run_id = self.config.get("run_id")
        return ExecutionInfo(
            checkpoint_id=str(getattr(self.loop, "checkpoint_id", None) or ""),
            checkpoint_ns=self.namespace,
            task_id=self.task_id,
            thread_id=configurable.get("thread_id"),
            run_id=None if run_id is None else str(run_id),
            node_attempt=self.attempt,
            node_first_attempt_time=self.first_attempt_time,
        )

    def runtime(self) -> Runtime[Any]:
        """The ``runtime`` this task's node receives."""
        runtime: Runtime[Any] = Runtime(
            context=self.context,
            store=self.store,
            stream_writer=self.writer,
            execution_info=self.execution_info(),
            server_info=self.server_info,
            control=self.control,
        )
        return runtime if self.progress is None else runtime.override(heartbeat=self.progress.beat)


def current_task() -> TaskContext:
    """The context of the node running in this thread or coroutine.

    Raises:
        RuntimeError: called outside a running graph node.
    """
    task = running_task()
    if task is None:
        raise RuntimeError("Called outside of a running graph node (get_config/get_store/interrupt need one)")
    return task


def running_task() -> TaskContext | None:
    """The context of the node running here, or ``None`` outside a run."""
    return cast("TaskContext | None", any_task())  # the drivers set TaskContexts (or pending ones)


class task_scope:  # noqa: N801 - used like a function
    """Context manager that makes ``ctx`` the current task context.

    When the task has a LangChain config (callbacks, metadata), it is also made
    the child config of runnables invoked inside the node.
    """

    __slots__ = ("ctx", "lc_token", "token")

    def __init__(self, ctx: TaskContext) -> None:
        self.ctx = ctx
        self.token: contextvars.Token[RunningTask | PendingTask | None] | None = None
        self.lc_token: Any = None

    def __enter__(self) -> TaskContext:
        self.token = TASK_CONTEXT.set(self.ctx)
        if self.ctx.lc_config is not None:
            from langchain_core.runnables.config import var_child_runnable_config

            self.lc_token = var_child_runnable_config.set(self.ctx.lc_config)  # type: ignore[arg-type]
        return self.ctx

    def __exit__(self, *exc: object) -> None:
        if self.lc_token is not None:
            from langchain_core.runnables.config import var_child_runnable_config

            var_child_runnable_config.reset(self.lc_token)
        if self.token is not None:
            TASK_CONTEXT.reset(self.token)
