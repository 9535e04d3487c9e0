"""Stream events of a run: values, updates, custom, messages, tasks and checkpoints.

The loop reports what happens to an :class:`EventSink`; the sink turns it into
``(mode, payload)`` events for the modes being streamed and nothing else, so a
plain ``invoke`` (no modes) pays for none of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from langchain_core.messages import BaseMessage

from plait.checkpoint.base import INTERRUPT, now_iso
from plait.pregel._messages import MessageStreamHandler
from plait.pregel._task import Task
from plait.pregel._thread import configurable_of

__all__ = ["EventSink"]


def _update_payload(task: Task) -> Any:
    result = task.result
    if isinstance(result, dict):
        # a node's update (isinstance() leaves it dict[Unknown, Unknown])
        return cast("dict[str, Any]", result)
    return dict(task.writes) if task.writes else None


class EventSink:
    """Collects the events of one run for the requested stream modes.

    Args:
        modes: The stream modes requested.
        config: The run config (callbacks, tags, metadata for child runnables).
    """

    def __init__(self, modes: frozenset[str], config: dict[str, Any]) -> None:
        self.modes = modes
        self.config = config
        self.events: list[tuple[str, Any]] = []
        self.metadata: dict[str, Any] = dict(config.get("metadata") or {})
        self.messages = MessageStreamHandler(self._message) if "messages" in modes else None
        self.lc_child = self.messages is not None or bool(config.get("callbacks"))
        self.tasks_on = "tasks" in modes or "debug" in modes

    def _message(self, item: tuple[Any, dict[str, Any]]) -> None:
        self.events.append(("messages", item))

    def custom(self, chunk: Any) -> None:
        """A node's ``writer`` output (``custom`` mode)."""
        if "custom" in self.modes:
            self.events.append(("custom", chunk))

    def child_config(self, task: Task, step: int) -> dict[str, Any]:
        """The LangChain config runnables inside ``task`` inherit (callbacks, tags, metadata)."""
        given = self.config.get("callbacks") or ()
        # a list of handlers or a callback manager; isinstance() leaves the handlers Unknown
        callbacks = list(cast("Sequence[Any]", given)) if isinstance(given, (list, tuple)) else [given]
        if self.messages is not None:
            callbacks.append(self.messages)
        metadata = {
            **self.metadata,
            "langgraph_node": task.name,
            "langgraph_step": step,
            "langgraph_triggers": (task.name,),
        }
        return {
            "callbacks": callbacks,
            "metadata": metadata,
            "tags": list(self.config.get("tags") or ()),
            "configurable": dict(configurable_of(self.config)),
        }

    def _emit(self, mode: str, payload: Any, step: int, kind: str) -> None:
        if mode in self.modes:
            self.events.append((mode, payload))
        if "debug" in self.modes:
            self.events.append(
                ("debug", {"type": kind, "step": step, "timestamp": now_iso(), "payload": payload})
            )

    def started(self, tasks: Sequence[Task], task_id: Callable[[Task], str], step: int) -> None:
        """Tasks about to run (``tasks``/``debug`` modes)."""
        if self.tasks_on:
            for task in tasks:
                self._emit(
                    "tasks",
                    {"id": task_id(task), "name": task.name, "input": task.input, "triggers": (task.name,)},
                    step,
                    "task",
                )

    def finished(self, tasks: Sequence[Task], task_id: Callable[[Task], str], step: int) -> None:
        """Tasks that completed a step (``updates``, ``tasks``, ``messages`` modes)."""
        modes = self.modes
        for t in tasks:
            if "updates" in modes:
                self.events.append(("updates", {t.name: _update_payload(t)}))
            if self.tasks_on:
                self._emit(
                    "tasks",
                    {"id": task_id(t), "name": t.name, "error": None, "result": t.writes, "interrupts": []},
                    step,
                    "task_result",
                )
            if self.messages is not None:
                meta = {**self.metadata, "langgraph_node": t.name, "langgraph_step": step}
                for _, value in t.writes:
                    items = cast("Sequence[Any]", value) if isinstance(value, list) else [value]
                    self.messages.emit_written([m for m in items if isinstance(m, BaseMessage)], meta)

    def interrupted(self, interrupts: Sequence[Any]) -> None:
        """The run paused on ``interrupt()`` (``updates`` mode reports it)."""
        if "updates" in self.modes:
            self.events.append(("updates", {INTERRUPT: tuple(interrupts)}))

    def values(self, output: Callable[[], dict[str, Any]]) -> None:
        """The state after the input or a step (``values`` mode)."""
        if "values" in self.modes:
            self.events.append(("values", output()))

    def checkpoint(self, payload: Callable[[], dict[str, Any]], step: int) -> None:
        """A checkpoint was queued (``checkpoints``/``debug`` modes)."""
        if "checkpoints" in self.modes or "debug" in self.modes:
            self._emit("checkpoints", payload(), step, "checkpoint")
