"""Public value types: control-flow commands, snapshots, policies and stream modes."""

from __future__ import annotations

import pickle
import random
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, ClassVar, Generic, Literal, NamedTuple, TypeVar, cast

from langchain_core.messages.tool import ToolOutputMixin

from plait._context import current_task
from plait._internal._narrow import is_dict, is_sequence, is_str_dict
from plait._snapshot import Interrupt, PregelTask, StateSnapshot
from plait._stream_parts import (
    CheckpointPayload,
    CheckpointStreamPart,
    CheckpointTask,
    CustomStreamPart,
    DebugPayload,
    DebugStreamPart,
    MessagesStreamPart,
    StreamPart,
    TaskPayload,
    TaskResultPayload,
    TasksStreamPart,
    UpdatesStreamPart,
    ValuesStreamPart,
)
from plait._trace import TracePolicy, omit_payload

__all__ = [
    "All",
    "CachePolicy",
    "CheckpointPayload",
    "CheckpointStreamPart",
    "CheckpointTask",
    "Checkpointer",
    "Command",
    "CustomStreamPart",
    "DebugPayload",
    "DebugStreamPart",
    "Durability",
    "GraphOutput",
    "Interrupt",
    "MessagesStreamPart",
    "Overwrite",
    "PregelTask",
    "RetryPolicy",
    "Send",
    "StateSnapshot",
    "StateUpdate",
    "StreamMode",
    "StreamPart",
    "StreamWriter",
    "TaskPayload",
    "TaskResultPayload",
    "TasksStreamPart",
    "TimeoutPolicy",
    "TracePolicy",
    "UpdatesStreamPart",
    "ValuesStreamPart",
    "default_retry_on",
    "ensure_valid_checkpointer",
    "interrupt",
    "omit_payload",
]

N = TypeVar("N")

All = Literal["*"]
"""Value for interrupt_before/interrupt_after meaning every node."""

StreamMode = Literal["values", "updates", "custom", "messages", "debug", "checkpoints", "tasks"]
"""How ``stream`` reports progress: whole state, per-node updates, custom events, …"""

Durability = Literal["sync", "async", "exit"]
"""When checkpoints are written: before the next step starts, alongside it, or at the end."""

Checkpointer = Any
"""A checkpoint saver, ``None``, or ``True``/``False`` (subgraph inherits / has none)."""

StreamWriter = Callable[[Any], None]
"""Callable a node receives as ``writer`` to emit ``custom`` stream events."""


@dataclass(frozen=True, slots=True)
class Send:
    """Run ``node`` in the next superstep with ``arg`` as its whole input (map-reduce).

    Attributes:
        node: Name of the node to run.
        arg: The input that node receives instead of the graph state.
    """

    node: str
    arg: Any

    def __repr__(self) -> str:
        return f"Send(node={self.node!r}, arg={self.arg!r})"


@dataclass(frozen=True, slots=True)
class Overwrite:
    """Set a reducer field to ``value`` directly, bypassing its reducer for this write."""

    value: Any
    type: ClassVar[str] = "__overwrite__"

    def __repr__(self) -> str:
        return f"Overwrite(value={self.value!r}, type='__overwrite__')"


@dataclass(frozen=True, slots=True)
class Command(Generic[N], ToolOutputMixin):
    """Returned by a node to update state and choose where to go next in one value.

    Attributes:
        graph: ``None`` for the current graph, ``Command.PARENT`` for the parent graph.
        update: A state update, as a node would return it.
        resume: The value(s) answering an ``interrupt()`` when resuming a run.
        goto: Node name(s) or ``Send`` objects to run next.
    """

    graph: str | None = None
    update: Any | None = None
    resume: dict[str, Any] | Any | None = None
    goto: Send | Sequence[Send | N] | N = ()

    PARENT: ClassVar[Literal["__parent__"]] = "__parent__"

    def __repr__(self) -> str:
        fields = (
            ("graph", self.graph),
            ("update", self.update),
            ("resume", self.resume),
            ("goto", self.goto),
        )
        return f"Command({', '.join(f'{k}={v!r}' for k, v in fields if _set(v))})"


def _set(value: object) -> bool:
    """Whether a ``Command`` field shows in its repr: the empty and unset ones do not (as in LangGraph)."""
    try:
        return bool(value)
    except Exception:  # noqa: BLE001 - a value without a truth value (an array): shown
        return True


_NOT_TRANSIENT = (
    ValueError,
    TypeError,
    ArithmeticError,
    ImportError,
    LookupError,
    NameError,
    SyntaxError,
    RuntimeError,
    ReferenceError,
    StopIteration,
    StopAsyncIteration,
    OSError,
)


def default_retry_on(exc: Exception) -> bool:
    """Whether ``exc`` looks transient: connection errors and HTTP 5xx yes, programming errors no."""
    if isinstance(exc, ConnectionError):
        return True
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None) or getattr(response, "status", None)
    if isinstance(status, int):
        return status >= 500
    return not isinstance(exc, _NOT_TRANSIENT)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a failing node is retried.

    Attributes:
        initial_interval: Seconds before the first retry.
        backoff_factor: Multiplier applied to the interval after each retry.
        max_interval: Upper bound of the interval in seconds.
        max_attempts: Attempts in total, the first one included.
        jitter: Add up to 1 s of random jitter to each interval.
        retry_on: Exception classes (or a predicate) that are worth retrying. The default,
            :func:`default_retry_on`, retries transient failures (connection errors, HTTP 5xx)
            but not programming errors such as ``ValueError`` or ``KeyError``.
    """

    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 128.0
    max_attempts: int = 3
    jitter: bool = True
    retry_on: type[BaseException] | Sequence[type[BaseException]] | Callable[[Exception], bool] = field(
        default_factory=lambda: default_retry_on
    )

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        base = min(self.max_interval, self.initial_interval * self.backoff_factor ** (attempt - 1))
        return base + (random.random() if self.jitter else 0.0)  # noqa: S311 - jitter, not crypto

    def should_retry(self, exc: Exception) -> bool:
        """Whether ``exc`` is one this policy retries."""
        rule = self.retry_on
        if isinstance(rule, type):
            return isinstance(exc, rule)
        if isinstance(rule, Sequence):
            # cast: pyright's isinstance() also keeps a Sequence-and-Callable of Unknown items; the
            # Sequence[type[BaseException]] arm of retry_on is the one meant here
            return isinstance(exc, tuple(cast("Iterable[type[BaseException]]", rule)))
        return bool(rule(exc))


RetryPolicies = RetryPolicy | tuple[RetryPolicy, ...]
"""A node's retry policy, or several: the first whose ``retry_on`` matches an error applies to it."""


def retry_policies(policy: RetryPolicy | Sequence[RetryPolicy] | None) -> RetryPolicies | None:
    """What ``add_node(retry_policy=...)`` / ``task(retry_policy=...)`` keep: one policy, several, or none."""
    if isinstance(policy, RetryPolicy) or policy is None:
        return policy
    kept = tuple(policy)
    return kept[0] if len(kept) == 1 else (kept or None)


def retry_delay(policy: RetryPolicies | None, exc: Exception, attempt: int) -> float | None:
    """Seconds to wait before retrying after ``exc`` on attempt ``attempt``, or ``None``: no retry."""
    chosen = next((p for p in policy if p.should_retry(exc)), None) if isinstance(policy, tuple) else policy
    if chosen is None or attempt >= chosen.max_attempts or not chosen.should_retry(exc):
        return None
    return chosen.delay(attempt)


def _seconds(value: float | timedelta | None, field_name: str) -> float | None:
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds <= 0:
        raise ValueError(f"TimeoutPolicy.{field_name} must be greater than 0 (got {value!r})")
    return seconds


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeoutPolicy:
    """Time limits for each attempt of an async node, task or entrypoint (``timeout=``).

    A timed-out attempt raises :class:`~plait.errors.NodeTimeoutError`, which the retry
    policy sees like any other error. Sync functions cannot be cancelled, so they take no timeout.

    Attributes:
        run_timeout: Hard cap, in seconds, on one attempt.
        idle_timeout: Longest an attempt may go without progress: writing a custom stream
            event or calling ``runtime.heartbeat()`` (only the latter with ``refresh_on="heartbeat"``).
        refresh_on: What counts as progress for ``idle_timeout``.
    """

    run_timeout: float | timedelta | None = None
    idle_timeout: float | timedelta | None = None
    refresh_on: Literal["auto", "heartbeat"] = "auto"

    @classmethod
    def coerce(cls, value: float | timedelta | TimeoutPolicy | None) -> TimeoutPolicy | None:
        """A policy with the limits in positive seconds (a number or timedelta is a ``run_timeout``).

        Raises:
            ValueError: a limit is not positive, or ``refresh_on`` is neither ``"auto"`` nor ``"heartbeat"``.
        """
        if value is None:
            return None
        policy = value if isinstance(value, TimeoutPolicy) else cls(run_timeout=value)
        if policy.refresh_on not in ("auto", "heartbeat"):
            raise ValueError(f"refresh_on must be 'auto' or 'heartbeat' (got {policy.refresh_on!r})")
        run = _seconds(policy.run_timeout, "run_timeout")
        idle = _seconds(policy.idle_timeout, "idle_timeout")
        if run is None and idle is None:
            return None
        return cls(run_timeout=run, idle_timeout=idle, refresh_on=policy.refresh_on)


def ensure_valid_checkpointer(checkpointer: Checkpointer) -> Checkpointer:
    """``checkpointer`` if it is a saver (a ``BaseCheckpointSaver``), ``True``, ``False`` or ``None``.

    Raises:
        TypeError: anything else.
    """
    if checkpointer in (None, True, False) or any(
        c.__name__ == "BaseCheckpointSaver" and c.__module__ == "plait.checkpoint.base"
        for c in type(checkpointer).__mro__  # by name: this module is below plait.checkpoint
    ):
        return checkpointer
    raise TypeError(
        "Invalid checkpointer provided. Expected an instance of `BaseCheckpointSaver`, `True`, `False`, "
        f"or `None`. Received {type(checkpointer).__name__}. Pass a proper saver (e.g., InMemorySaver, "
        "AsyncPostgresSaver)."
    )


def _freeze(value: object, depth: int = 10) -> object:
    """A hashable, order-independent stand-in for ``value`` (dict keys sorted, lists as tuples)."""
    if depth <= 0:
        return value
    if is_dict(value):
        return tuple(sorted(((k, _freeze(v, depth - 1)) for k, v in value.items()), key=_first_repr))
    if is_sequence(value):
        return tuple(_freeze(v, depth - 1) for v in value)
    return value


def _first_repr(pair: tuple[object, object]) -> str:
    return repr(pair[0])


def default_cache_key(*args: object, **kwargs: object) -> bytes:
    """The default :class:`CachePolicy` key: the pickled arguments (dicts and lists normalized first).

    Pickling is only used to fingerprint the arguments; nothing is ever unpickled.
    """
    return pickle.dumps((_freeze(args), _freeze(kwargs)), protocol=5, fix_imports=False)


KeyFuncT = TypeVar("KeyFuncT", bound=Callable[..., "str | bytes"], covariant=True)  # read-only field


@dataclass(frozen=True, slots=True)
class CachePolicy(Generic[KeyFuncT]):
    """Cache a node's (or a functional task's) results, keyed on its input.

    Used with ``add_node(..., cache_policy=)`` / ``@task(cache_policy=)`` and a cache given to
    ``compile(cache=)`` / ``@entrypoint(cache=)``: a call whose key is cached is not made again;
    its stored writes are replayed.

    Attributes:
        key_func: Turns the node's input (a task's arguments) into the key (``str`` or ``bytes``).
        ttl: Seconds a cached result stays valid (``None``: forever).
    """

    key_func: KeyFuncT = default_cache_key  # type: ignore[assignment]  # the default fits every KeyFuncT
    ttl: int | None = None


class StateUpdate(NamedTuple):
    """One update of ``bulk_update_state``: ``values`` written as if ``as_node`` returned them (a
    :class:`Command` too: its ``update``, ``goto`` and ``resume``)."""

    values: dict[str, Any] | Command[Any] | None
    as_node: str | None = None
    task_id: str | None = None


OutputT = TypeVar("OutputT")


@dataclass(frozen=True)
class GraphOutput(Generic[OutputT]):
    """What ``invoke(..., version="v2")`` returns: the output, and the interrupts apart from it.

    Attributes:
        value: The graph's output.
        interrupts: Interrupts the run paused on (empty when it finished).
    """

    value: OutputT
    interrupts: tuple[Interrupt, ...] = ()

    def __getitem__(self, key: str) -> Any:
        """Dict-style access, as in version 1 results (deprecated: use ``value`` / ``interrupts``)."""
        warnings.warn(
            "GraphOutput[key] is deprecated: use result.value or result.interrupts",
            DeprecationWarning,
            stacklevel=2,
        )
        if key == "__interrupt__":
            return self.interrupts
        value: object = self.value
        if is_str_dict(value):
            return value[key]
        try:
            return getattr(value, key)
        except AttributeError:
            raise KeyError(key) from None

    def __contains__(self, key: object) -> bool:
        """``key in result``, as in version 1 results (deprecated)."""
        warnings.warn(
            "`key in GraphOutput` is deprecated: use result.value or result.interrupts",
            DeprecationWarning,
            stacklevel=2,
        )
        if key == "__interrupt__":
            return bool(self.interrupts)
        value: object = self.value
        if is_dict(value):
            return key in value
        return isinstance(key, str) and hasattr(value, key)


def interrupt(value: object, *, response_schema: Mapping[str, object] | type[object] | None = None) -> Any:
    """Pause the running node and hand ``value`` to the caller.

    The first time a node calls it, the run stops with the interrupt recorded
    in the checkpoint. When the run is resumed with ``Command(resume=x)``, the
    node runs again from its start and this call returns ``x``.

    Args:
        value: What the caller is asked.
        response_schema: The answer expected: a JSON Schema ``dict`` (shown to the caller, not
            checked), or a pydantic model, ``TypedDict`` or dataclass (shown as JSON Schema; the
            answer is validated and returned as that type).

    Raises:
        pydantic.ValidationError: the answer does not match ``response_schema``; nothing is
            saved, so the interrupt can be answered again (``errors.is_invalid_resume`` tells).
    """
    return current_task().interrupt(value, response_schema=response_schema)
