"""The options of ``invoke``/``stream``: modes, durability, version, and the shape of stream output."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from plait.checkpoint.base import INTERRUPT
from plait.pregel._root import root_payload
from plait.runtime import RunControl, ServerInfo

__all__ = [
    "RunOptions",
    "DURABILITY",
    "MODES",
    "RUN_OPTIONS",
    "UNSUPPORTED",
    "as_set",
    "durability_of",
    "modes_of",
    "run_options",
    "seconds_of",
    "shape",
    "version_of",
]


MODES = frozenset({"values", "updates", "custom", "messages", "debug", "checkpoints", "tasks", "tools"})


def modes_of(stream_mode: str | Sequence[str] | None, default: str) -> tuple[frozenset[str], bool]:
    if stream_mode is None:
        stream_mode = default
    if isinstance(stream_mode, str):
        modes, single = frozenset([stream_mode]), True
    else:
        modes, single = frozenset(stream_mode), False
    unknown = modes - MODES
    if unknown:
        raise ValueError(f"Unknown stream_mode {sorted(unknown)}; choose from {sorted(MODES)}")
    return modes, single


def as_set(nodes: str | Sequence[str] | None) -> frozenset[str] | None:
    if nodes is None:
        return None
    return frozenset(["*"] if nodes == "*" else nodes)


def seconds_of(value: object) -> float | None:
    """A ``lease_timeout``: ``None`` or a non-negative number of seconds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"lease_timeout must be None or a number of seconds >= 0, got {value!r}")
    return None if value >= threading.TIMEOUT_MAX else float(value)  # longer than a lock can wait: no limit


def shape(  # noqa: PLR0913 - the output forms
    event: tuple[Any, ...],
    modes: frozenset[str],
    single: bool,
    subgraphs: bool,
    root: bool = False,
    v2: bool = False,
    output_make: Callable[[dict[str, Any]], object] | None = None,
) -> list[object]:
    """Turn an internal event into what ``stream`` yields for the requested modes; ``output_make``
    (``version="v2"``): the graph's own ``values`` as its output schema's class."""
    mode, payload = event[0], event[1]
    if mode not in modes:
        return []
    if root:  # a graph whose state is one value streams the value
        payload = root_payload(mode, payload)
    ns = event[2] if len(event) == 3 else ()
    if v2:
        interrupts: tuple[object, ...] = ()  # typed parts carry the interrupts apart from the state
        if mode == "values" and isinstance(payload, dict) and INTERRUPT in payload:
            state = cast("dict[str, Any]", payload)
            interrupts = tuple(state[INTERRUPT])
            payload = {k: v for k, v in state.items() if k != INTERRUPT}
        if output_make is not None and mode == "values" and not ns and isinstance(payload, dict):
            payload = output_make(cast("dict[str, Any]", payload))
        part: dict[str, object] = {"type": mode, "ns": ns, "data": payload}
        if mode == "values":
            part["interrupts"] = interrupts
        return [part]
    if subgraphs:
        return [(ns, payload) if single else (ns, mode, payload)]
    return [payload if single else (mode, payload)]


def version_of(value: object) -> bool:
    """Whether ``version=`` asks for LangGraph's version 2 output forms."""
    if value in (None, "v1"):
        return False
    if value == "v2":
        return True
    raise ValueError(f"version must be 'v1' or 'v2', got {value!r}")


RUN_OPTIONS = frozenset(
    {
        "interrupt_before",
        "interrupt_after",
        "multitask_strategy",
        "lease_timeout",
        "subgraphs",
        "durability",
        "checkpoint_during",
        "debug",
        "output_keys",
        "print_mode",
        "control",
    }
)
UNSUPPORTED = ("output_keys", "print_mode")


DURABILITY = ("sync", "async", "exit")


def durability_of(kwargs: Mapping[str, Any]) -> str:
    """The run's durability: ``durability=``, or LangGraph's older ``checkpoint_during=`` flag."""
    value = kwargs.get("durability")
    during = kwargs.get("checkpoint_during")
    if value is None and during is not None:
        value = "async" if during else "exit"
    if value is None:
        return "async"  # LangGraph's default too
    if value not in DURABILITY:
        raise ValueError(f"durability must be one of {list(DURABILITY)}, got {value!r}")
    return str(value)


@dataclass(slots=True)  # not frozen: made every run, and frozen init costs twice as much
class RunOptions:
    """Per-run settings given to invoke/stream.

    Attributes:
        interrupt_before: Nodes to pause before (overrides the plan's when given).
        interrupt_after: Nodes to pause after (overrides the plan's when given).
        multitask: ``"enqueue"`` waits for a busy thread, ``"reject"`` raises ThreadBusyError.
        lease_timeout: Seconds to wait for a busy thread before ThreadBusyError (``None``: no limit).
        subgraphs: Stream the events of subgraphs too, with their namespaces.
        durability: ``"sync"``: save every step before the next starts; ``"async"`` (the default):
            every step, sent with the next step's saves when that comes within a moment
            (:mod:`plait.pregel._held`); ``"exit"``: save only when the run ends.
        control: Drains the run at the next step boundary when asked (``invoke(control=)``).
        server_info: What a LangGraph server says about the run (``runtime.server_info``).
        strict_resume: Refuse a ``Command(resume=...)`` that does not match the pending interrupts.
    """

    interrupt_before: frozenset[str] | None = None
    interrupt_after: frozenset[str] | None = None
    multitask: str = "enqueue"
    lease_timeout: float | None = None
    subgraphs: bool = False
    durability: str = "async"
    control: RunControl | None = None
    server_info: ServerInfo | None = None
    strict_resume: bool = False


def run_options(
    kwargs: Mapping[str, Any], control: RunControl | None, server_info: ServerInfo | None, strict: bool
) -> RunOptions:
    """The :class:`RunOptions` of a run's keyword arguments (``control``, ``server_info``, ``strict``:
    :func:`~plait.pregel._control.run_extras` of its config).

    Raises:
        TypeError: an unknown option.
        NotImplementedError: an option plait does not implement.
        ValueError: a malformed option value.
    """
    if not kwargs:  # every option's default
        return RunOptions(control=control, server_info=server_info, strict_resume=strict)
    unknown = set(kwargs) - RUN_OPTIONS
    if unknown:
        raise TypeError(
            f"Unexpected run option(s) {sorted(unknown)}; plait's invoke/stream take {sorted(RUN_OPTIONS)}"
        )
    for name in UNSUPPORTED:
        if kwargs.get(name) is not None:
            raise NotImplementedError(f"{name}= is not implemented by plait")
    strategy = kwargs.get("multitask_strategy") or "enqueue"
    if strategy not in ("enqueue", "reject"):
        raise ValueError(f"multitask_strategy must be 'enqueue' or 'reject', got {strategy!r}")
    return RunOptions(
        interrupt_before=as_set(kwargs.get("interrupt_before")),
        interrupt_after=as_set(kwargs.get("interrupt_after")),
        multitask=strategy,
        lease_timeout=seconds_of(kwargs.get("lease_timeout")),
        subgraphs=bool(kwargs.get("subgraphs")),
        durability=durability_of(kwargs),
        control=control,
        server_info=server_info,
        strict_resume=strict,
    )
