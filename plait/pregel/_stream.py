"""Stream events of a run: values, updates, custom, messages, tasks and checkpoints.

The loop reports what happens to an :class:`EventSink`; the sink turns it into
``(mode, payload)`` events for the modes being streamed and nothing else, so a
plain ``invoke`` (no modes) pays for none of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cached_property, partial
from typing import Any, TypeVar, cast
from weakref import WeakMethod

from langchain_core.messages import BaseMessage

from plait.checkpoint.base import INTERRUPT, NOT_METADATA, now_iso
from plait.errors import GraphBubbleUp
from plait.pregel._context import running_task
from plait.pregel._message_events import MESSAGE_EVENTS_KEY, MessageEventHandler
from plait.pregel._messages import MessageStreamHandler
from plait.pregel._plan import Plan
from plait.pregel._step import scheduled
from plait.pregel._subgraphs import task_state_config
from plait.pregel._task import Task, task_key, task_path
from plait.pregel._thread import configurable_of
from plait.pregel._tool_events import ToolEventHandler
from plait.types import Interrupt, PregelTask

__all__ = ["STATIC", "EventSink", "next_tasks", "task_result"]

_T = TypeVar("_T")

STATIC = ("before", "after", "drained")
"""Ids of the markers a pause leaves that are no question (breakpoints, a drained subgraph)."""
"""Ids of the markers for static breakpoints (``interrupt_before``/``interrupt_after``)."""

_LIVE = frozenset({"custom", "messages", "tools"})
"""Modes whose events nodes emit while they run: a driver streaming them runs steps apart."""
_PER_TASK = frozenset({"updates", "messages"})
"""Modes with events for each task as it settles (``tasks`` and ``debug`` too)."""

_PROPAGATE = ("thread_id", "checkpoint_id", "checkpoint_ns", "task_id", "run_id", "assistant_id", "graph_id")
"""``configurable`` keys copied into the metadata of "messages" events (as LangGraph does)."""


class _Recast(tuple[str, ...]):
    """The namespace path of an event from (or under) a persistent subgraph: the graphs above it
    show without task ids, as its checkpoint namespace names them."""

    __slots__ = ()


def _weakly(method: Callable[[_T], None]) -> Callable[[_T], None]:
    """``method`` (of an event sink) called through a weak reference: the handlers a sink holds do
    not hold it, so a finished run is freed at once, not by the cyclic garbage collector."""
    weak = WeakMethod(method)

    def call(item: _T) -> None:
        bound = weak()
        if bound is not None:
            bound(item)

    return call


def _update_payload(task: Task) -> object:
    result = task.result
    if isinstance(result, dict) and result:
        # a node's update (isinstance() leaves it dict[Unknown, Unknown]); an empty one shows as None
        return cast("dict[str, object]", result)
    writes = task.writes
    if not writes:
        return None
    update = dict(writes)
    if len(update) < len(writes):  # a key written several times: each write on its own, in order
        return [{key: value} for key, value in writes]
    return update


def triggers(task: Task) -> tuple[str, ...]:
    """What started ``task``, named as LangGraph names its channels."""
    if task.push is not None or task.source is not None:  # a Send's, or an error handler's
        return ("__pregel_push",)
    found: tuple[str, ...] = getattr(task.node, "triggers", ())  # a command's pseudo-task has no node
    return found or (task.name,)


def task_result(writes: Sequence[tuple[str, object]]) -> dict[str, object]:
    """A finished task's writes as ``tasks``/``debug`` events show them: ``{key: value}``, and
    ``{key: {"$writes": [value, ...]}}`` for a key the task wrote several times (as LangGraph)."""
    values: dict[str, list[object]] = {}
    for key, value in writes:
        values.setdefault(key, []).append(value)
    return {key: found[0] if len(found) == 1 else {"$writes": found} for key, found in values.items()}


class EventSink:
    """Collects the events of one run for the requested stream modes.

    Events are ``(mode, payload)``, or ``(mode, payload, namespace)`` for events forwarded from
    subgraphs (``subgraphs=True``). Nodes add events from worker threads while a step runs;
    ``notify`` (set by a driver that streams them live) is called after each such event.

    Args:
        modes: The stream modes requested.
        config: The run config (callbacks, tags, metadata for child runnables).
        subgraphs: Subgraphs stream their events into this run's stream.
    """

    def __init__(self, modes: frozenset[str], config: dict[str, Any], subgraphs: bool = False) -> None:
        self.modes = modes
        self.config = config
        self.subgraphs = subgraphs and bool(modes)
        self.events: list[tuple[Any, ...]] = []
        self.notify: Callable[[], None] | None = None
        self._state: WeakMethod[Callable[[], dict[str, object]]] | None = None
        # events can arrive while a step runs: the driver then streams them as they come
        self.live = self.subgraphs or not modes.isdisjoint(_LIVE)
        self.metadata: dict[str, object] = dict(config.get("metadata") or {})
        configurable = configurable_of(config)
        self.ns: str = configurable.get("checkpoint_ns") or ""
        self._configurable = configurable
        # a graph run inside a node of a run that streams subgraphs: its messages go there too
        self.mirror: Callable[[tuple[object, ...]], None] | None = None
        self.messages: MessageStreamHandler | MessageEventHandler | None = None
        self.tools = ToolEventHandler(_weakly(self.tool)) if "tools" in modes else None
        self.tasks_on = "tasks" in modes or "debug" in modes
        self.per_task = self.tasks_on or not modes.isdisjoint(_PER_TASK)
        if "messages" in modes:
            handler = MessageEventHandler if configurable.get(MESSAGE_EVENTS_KEY) else MessageStreamHandler
            self.messages = handler(_weakly(self._message), self, self.subgraphs)
            parent = running_task()
            if parent is not None and parent.stream is not None:
                self.mirror = partial(parent.stream.forward, segment=f"{parent.node}:{parent.task_id}")
        self.lc_child = self.messages is not None or self.tools is not None or bool(config.get("callbacks"))

    @property
    def state(self) -> Callable[[], dict[str, object]] | None:
        """The run's values (a method of its loop, set by the loop; held weakly: no cycle to collect)."""
        return None if self._state is None else self._state()

    @state.setter
    def state(self, method: Callable[[], dict[str, object]] | None) -> None:
        self._state = None if method is None else WeakMethod(method)

    @cached_property
    def _user_configurable(self) -> dict[str, object]:
        return {k: v for k, v in self._configurable.items() if not k.startswith("__pregel_")}

    def run_config(self, located: Mapping[str, object]) -> dict[str, object]:
        """A checkpoint's config as ``checkpoints`` events show it: the run's ``configurable`` (not
        plait's own keys) with the checkpoint's ``located`` keys (thread, namespace, id)."""
        return {"configurable": {**self._user_configurable, **located}}

    @cached_property
    def lc_metadata(self) -> dict[str, object]:
        """What chat-model callbacks and "messages" events see: user metadata, run ids from configurable."""
        configurable = self._configurable
        return {**{k: configurable[k] for k in _PROPAGATE if configurable.get(k)}, **self.metadata}

    @property
    def mirrors_messages(self) -> bool:
        """This run's messages are also streamed into the run of the node it was started from."""
        return self.mirror is not None

    def nest_in(self, outer: EventSink | None) -> None:
        """This run is a subgraph's, streaming into ``outer``'s run: one ``messages`` stream."""
        self.mirror = None  # its events are forwarded there already
        if self.messages is not None and outer is not None and outer.messages is not None:
            self.messages.share(outer.messages)

    def _message(self, item: tuple[Any, dict[str, object]]) -> None:
        self.events.append(("messages", item))
        if self.mirror is not None:
            self.mirror(("messages", item))
        if self.notify is not None:
            self.notify()

    def tool(self, data: dict[str, object]) -> None:
        """A tool call's progress (``tools`` mode): ``tool-started``, ``tool-output-delta``…"""
        if "tools" in self.modes:
            self.events.append(("tools", data))
            if self.notify is not None:
                self.notify()

    def custom(self, chunk: object) -> None:
        """A node's ``writer`` output (``custom`` mode)."""
        if "custom" in self.modes:
            self.events.append(("custom", chunk))
            if self.notify is not None:
                self.notify()

    def forward(self, event: tuple[Any, ...], segment: str, recast: bool = False) -> None:
        """An event of a subgraph running in one of this run's tasks, under namespace ``segment``.

        ``recast``: the subgraph keeps its state across runs (``checkpointer=True``): its namespace
        names the graphs above it without their task ids, and so does the path of its events.
        """
        mode, payload, below = event[0], event[1], tuple(event[2:3])
        if mode == "messages" and self.messages is not None:  # streamed there: not again from here
            self.messages.seen(payload[0])
        # a namespace's levels (``|``-separated: nested graphs, later calls in one task) each get a place
        path = tuple(segment.split("|"))
        under: tuple[str, ...] = below[0] if below else ()
        if isinstance(under, _Recast):  # under a persistent subgraph: task ids dropped
            path = tuple(part.split(":")[0] for part in path)
        if recast or isinstance(under, _Recast):
            self.events.append((mode, payload, _Recast((*path, *under))))
        else:
            self.events.append((mode, payload, (*path, *under)))
        if self.notify is not None:
            self.notify()

    def task_keys(self, task: Task, step: int, task_id: str) -> dict[str, object]:
        """LangGraph's metadata keys of ``task`` (``langgraph_node``, ``langgraph_step``…), after
        its node's own metadata (``add_node(metadata=...)``)."""
        return {
            **(getattr(task.node, "metadata", None) or {}),
            "langgraph_step": step,
            "langgraph_node": task.name,
            "langgraph_triggers": triggers(task),
            "langgraph_path": task_path(task.name, task.push),
            "langgraph_checkpoint_ns": f"{self.ns}|{task.name}:{task_id}"
            if self.ns
            else f"{task.name}:{task_id}",
        }

    def task_metadata(self, task: Task, step: int, task_id: str) -> dict[str, object]:
        """The metadata of what runs inside ``task`` (chat models, "messages" events)."""
        return {**self.lc_metadata, **self.task_keys(task, step, task_id)}

    def child_config(self, task: Task, step: int, task_id: str = "") -> dict[str, object]:
        """The LangChain config runnables inside ``task`` inherit (callbacks, tags, metadata)."""
        given = self.config.get("callbacks") or ()
        # a list of handlers or a callback manager; isinstance() leaves the handlers Unknown
        callbacks = list(cast("Sequence[object]", given)) if isinstance(given, (list, tuple)) else [given]
        if self.messages is not None:
            callbacks.append(self.messages)
        if self.tools is not None:
            callbacks.append(self.tools)
        metadata = self.task_metadata(task, step, task_id)
        # runnables inside see the run's "checkpoint_ns", or the task's when the run has none (LangGraph)
        metadata.setdefault("checkpoint_ns", metadata["langgraph_checkpoint_ns"])
        return {
            "callbacks": callbacks,
            "metadata": metadata,
            "tags": list(self.config.get("tags") or ()),
            "configurable": dict(configurable_of(self.config)),
        }

    def _emit(self, mode: str, payload: object, step: int, kind: str) -> None:
        if mode in self.modes:
            self.events.append((mode, payload))
        if "debug" in self.modes:
            self.events.append(
                ("debug", {"type": kind, "step": step, "timestamp": now_iso(), "payload": payload})
            )

    def started(self, tasks: Sequence[Task], task_id: Callable[[Task], str], step: int) -> None:
        """Tasks about to run (``tasks``/``debug`` modes); messages in their input are not streamed again."""
        if self.messages is not None:
            for task in tasks:
                self.messages.seen_in(task.input)
        if self.tasks_on:
            for task in tasks:
                payload = {
                    "id": task_id(task),
                    "name": task.name,
                    "input": task.input,
                    "triggers": triggers(task),
                }
                shown = self._shown_metadata(task)
                if shown:
                    payload["metadata"] = shown
                self._emit("tasks", payload, step, "task")

    def _shown_metadata(self, task: Task) -> dict[str, object]:
        """What a task-start event shows of its metadata (LangGraph 1.2): the run's ``metadata``,
        the node's, then the run's ``tags``; never the keys that locate a checkpoint or name a task."""
        node: Mapping[str, object] = getattr(task.node, "metadata", None) or {}
        shown = {k: v for k, v in {**self.metadata, **node}.items() if k not in NOT_METADATA}
        tags = self.config.get("tags")
        if tags:
            shown["tags"] = list(tags)
        return shown

    def settled(self, task: Task, task_id: str, step: int) -> None:
        """``task`` ran to its end, maybe while others of its step still run: its update, its
        questions (or its error, in ``tasks`` mode) are streamed now, in the order the tasks finish
        (as LangGraph does)."""
        if task.interrupts:
            self.asked(task.interrupts)
            self._interrupted_result(task, task_id, step)
            task.reported = True
            if self.notify is not None:
                self.notify()
            return
        if not self.per_task:
            return
        if task.error is not None:
            if self.tasks_on and not isinstance(task.error, GraphBubbleUp):
                result: dict[str, object] = {
                    "id": task_id,
                    "name": task.name,
                    "error": task.error,
                    "result": {},
                    "interrupts": [],
                }
                self._emit("tasks", result, step, "task_result")
            task.reported = True
            return
        if task.done:
            self.finished((task,), lambda _: task_id, step)
            task.reported = True
        if self.notify is not None:
            self.notify()

    def _interrupted_result(self, task: Task, task_id: str, step: int) -> None:
        """The result of a task stopped by ``interrupt()`` questions (``tasks``/``debug`` modes): no
        writes, the questions as dicts (LangGraph's); a pause with no question shows none."""
        real = [i for i in task.interrupts if i.id not in STATIC]
        if self.tasks_on and real:
            asked = [
                {"value": i.value, "id": i.id, "response_schema": getattr(i, "response_schema", None)}
                for i in real
            ]
            result: dict[str, object] = {"id": task_id, "name": task.name, "error": None, "result": {}}
            result["interrupts"] = asked
            self._emit("tasks", result, step, "task_result")

    def finished(self, tasks: Sequence[Task], task_id: Callable[[Task], str], step: int) -> None:
        """Tasks that completed a step (``updates``, ``tasks``, ``messages`` modes); those
        :meth:`settled` reported already are skipped."""
        modes = self.modes
        if any(t.reported for t in tasks):
            tasks = [t for t in tasks if not t.reported]
        if self.messages is not None:  # a node's messages come before the step's updates
            for t in tasks:
                meta = self.task_metadata(t, step, task_id(t))
                for _, value in t.writes:
                    items = cast("Sequence[object]", value) if isinstance(value, list) else [value]
                    self.messages.emit_written([m for m in items if isinstance(m, BaseMessage)], meta)
        for t in tasks:
            if "updates" in modes:
                update = {t.name: _update_payload(t)}
                if t.cached:  # replayed from the node cache: the node did not run
                    update["__metadata__"] = {"cached": True}
                self.events.append(("updates", update))
            if self.tasks_on and not t.cached:
                self._emit(
                    "tasks",
                    {
                        "id": task_id(t),
                        "name": t.name,
                        "error": None,
                        "result": task_result(t.writes),
                        "interrupts": [],
                    },
                    step,
                    "task_result",
                )

    def asked(self, interrupts: Sequence[Interrupt]) -> None:
        """A task stopped on ``interrupt()`` questions: ``updates`` and ``values`` modes show them
        (the latter with the state the step started from); breakpoint markers are no questions."""
        real = tuple(i for i in interrupts if i.id not in STATIC)
        if not real:
            return
        if "updates" in self.modes:
            self.events.append(("updates", {INTERRUPT: real}))
        state = self.state
        if "values" in self.modes and state is not None:
            self.events.append(("values", {**state(), INTERRUPT: real}))

    def interrupted(self, interrupts: Sequence[Interrupt]) -> None:
        """The run paused (``updates`` mode reports it). A subgraph's breakpoint is reported by
        the top-level run only: the subgraph stops with no question of its own to show."""
        if "updates" in self.modes:
            real = tuple(i for i in interrupts if i.id not in STATIC)
            if real or not self.ns:
                self.events.append(("updates", {INTERRUPT: real}))

    def values(self, output: Callable[[], dict[str, object]]) -> None:
        """The state after the input or a step (``values`` mode)."""
        if "values" in self.modes:
            self.events.append(("values", output()))

    def checkpoint(self, payload: Callable[[], dict[str, object]], step: int) -> None:
        """A checkpoint was queued (``checkpoints``/``debug`` modes)."""
        if "checkpoints" in self.modes or "debug" in self.modes:
            self._emit("checkpoints", payload(), step, "checkpoint")


def next_tasks(
    cid: str,
    pulls: Sequence[str],
    sends: Sequence[tuple[str, object]],
    plan: Plan | None = None,
    located: Mapping[str, object] | None = None,
) -> list[dict[str, object]]:
    """The tasks a checkpoint schedules, as ``debug``/``checkpoints`` events describe them; with the
    ``plan`` and the checkpoint's ``located`` keys, a subgraph task's ``state`` is the config of
    where its subgraph keeps its state (as its snapshot's)."""
    out: list[dict[str, object]] = []
    for name, index in scheduled(pulls, sends):
        tid = task_key(cid, name, index)
        state = (
            None
            if plan is None or located is None
            else task_state_config(plan, PregelTask(tid, name), located)
        )
        out.append({"id": tid, "name": name, "interrupts": (), "state": state})
    return out
