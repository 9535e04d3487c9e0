"""Exceptions raised by plait.

The class names, base classes and message wording follow LangGraph, so code
and tests written against it keep working. Unlike LangGraph, every error that
concerns a graph update carries the data needed to act on it as keyword-only
fields (``node``, ``key``, ``value``, ``step``), and those fields also appear
in ``str(err)``.

Tree::

    Exception
    ├── InvalidUpdateError            a node or input wrote something invalid
    │   └── StrictModeError           strict mode caught a silent failure
    ├── GraphRecursionError (RecursionError)
    ├── EmptyInputError
    ├── EmptyChannelError
    ├── GraphBuildError (ValueError)  the graph cannot be compiled
    ├── InvalidConfigError (ValueError)  the run config is malformed (thread_id, recursion_limit…)
    ├── ThreadBusyError               another run holds the thread
    ├── CheckpointConflictError       the thread head moved behind our back
    ├── SerializationError            a value cannot be stored or loaded
    │   └── DecryptionError (ValueError)  encrypted bytes fail to decrypt (wrong key, tampered)
    ├── SchemaVersionError (RuntimeError)  the database was written by a newer plait
    ├── UnknownInterruptError         strict resume: the resume does not match the pending interrupts
    ├── StoredNodeError               a node's error read back from a checkpoint (error handlers on resume)
    ├── NodeTimeoutError              an async node attempt ran past its ``timeout``
    ├── NodeCancelledError            a node raised ``asyncio.CancelledError`` itself
    └── GraphBubbleUp                 control flow that passes through nodes and tools untouched
        ├── ParentCommand             a subgraph's Command for its parent graph
        ├── GraphDrained              the run stopped early because RunControl asked it to
        └── GraphInterrupt            the run stopped to wait for input
            └── NodeInterrupt
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

__all__ = [
    "CheckpointConflictError",
    "CheckpointNotFoundError",
    "DecryptionError",
    "EmptyChannelError",
    "EmptyInputError",
    "ErrorCode",
    "GraphBubbleUp",
    "GraphBuildError",
    "GraphDrained",
    "GraphInterrupt",
    "GraphRecursionError",
    "IncompatibleDatabaseError",
    "InvalidConfigError",
    "InvalidUpdateError",
    "NodeCancelledError",
    "NodeError",
    "NodeInterrupt",
    "NodeTimeoutError",
    "ParentCommand",
    "SchemaVersionError",
    "SerializationError",
    "StoredNodeError",
    "StrictModeError",
    "TaskNotFound",
    "ThreadBusyError",
    "UndeclaredKeyWarning",
    "UnknownInterruptError",
    "create_error_message",
    "is_invalid_resume",
    "mark_invalid_resume",
]

_DOCS = "https://docs.langchain.com/oss/python/langgraph/errors/"


class ErrorCode(Enum):
    """Codes that name a documented class of mistake."""

    GRAPH_RECURSION_LIMIT = "GRAPH_RECURSION_LIMIT"
    INVALID_CONCURRENT_GRAPH_UPDATE = "INVALID_CONCURRENT_GRAPH_UPDATE"
    INVALID_GRAPH_NODE_RETURN_VALUE = "INVALID_GRAPH_NODE_RETURN_VALUE"
    MULTIPLE_SUBGRAPHS = "MULTIPLE_SUBGRAPHS"
    INVALID_CHAT_HISTORY = "INVALID_CHAT_HISTORY"


def add_note(err: BaseException, note: str) -> None:
    """``err.add_note(note)``, also on Python 3.10 (which has ``__notes__`` but no ``add_note``)."""
    adder = getattr(err, "add_note", None)
    if adder is not None:
        adder(note)
    else:
        vars(err).setdefault("__notes__", []).append(note)


def create_error_message(*, message: str, error_code: ErrorCode) -> str:
    """Append the troubleshooting link for ``error_code`` to ``message``."""
    return f"{message}\nFor troubleshooting, visit: {_DOCS}{error_code.value}"


class InvalidUpdateError(Exception):
    """A node (or the graph input) produced an update that cannot be applied.

    Attributes:
        node: The node that wrote the update, when known.
        key: The state key concerned, when known.
        value: The offending value, when known.
        step: The superstep in which it happened, when known.
        nodes: All nodes involved (e.g. the parallel writers of one key).
    """

    def __init__(
        self,
        message: str = "",
        *,
        node: str | None = None,
        key: str | None = None,
        value: object = None,
        step: int | None = None,
        nodes: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.node = node
        self.key = key
        self.value = value
        self.step = step
        self.nodes = nodes or ((node,) if node is not None else ())

    def __str__(self) -> str:
        # LangGraph's wording is kept verbatim (tests match on it); the node and
        # step travel as fields and as a PEP 678 note added by the runtime.
        return self.message

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.message, self.node, self.key, self.value, self.step, self.nodes))


def _rebuild(cls: type[InvalidUpdateError], *args: Any) -> InvalidUpdateError:  # the pickled fields
    message, node, key, value, step, nodes = args
    return cls(message, node=node, key=key, value=value, step=step, nodes=nodes)


class StrictModeError(InvalidUpdateError):
    """Strict mode turned a silent failure into an error; the message says how to fix it."""


class GraphRecursionError(RecursionError):
    """The run reached ``recursion_limit`` supersteps without finishing.

    Attributes:
        step: The number of supersteps that ran.
        nodes: The nodes that were about to run when the limit was hit.
    """

    def __init__(self, message: str = "", *, step: int | None = None, nodes: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.step = step
        self.nodes = nodes


class EmptyInputError(Exception):
    """The graph received an empty input where one was required."""


class EmptyChannelError(Exception):
    """A state key was read before anything was written to it."""


class GraphBuildError(ValueError):
    """The graph definition is invalid; raised by the builder or ``compile()``."""


class InvalidConfigError(ValueError):
    """The run config cannot be used: wrong type, missing ``thread_id``, an id a database cannot store…

    Raised before anything is read or written, instead of the database driver's
    own error. The message says what is wrong, in which field, and how to fix it.

    Attributes:
        field: The config entry concerned: ``"config"``, ``"configurable"``, ``"thread_id"``,
            ``"checkpoint_ns"``, ``"checkpoint_id"``, ``"recursion_limit"``, ``"metadata"`` or ``"tags"``.
        value: The offending value (``None`` when it is missing).
    """

    def __init__(self, message: str = "", *, field: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.value = value

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_config_error, (type(self), self.message, self.field, self.value))


def _rebuild_config_error(
    cls: type[InvalidConfigError], message: str, field: str | None, value: object
) -> InvalidConfigError:
    return cls(message, field=field, value=value)


class ThreadBusyError(Exception):
    """Another run holds the thread and ``multitask_strategy="reject"`` was asked for.

    Attributes:
        thread_id: The busy thread.
    """

    def __init__(self, message: str = "", *, thread_id: str | None = None) -> None:
        super().__init__(message)
        self.thread_id = thread_id


class CheckpointConflictError(Exception):
    """A checkpoint write would fork the thread head behind another run's back.

    Attributes:
        thread_id: The thread concerned.
        expected: The head this run started from.
        actual: The head found in storage.
    """

    def __init__(
        self,
        message: str = "",
        *,
        thread_id: str | None = None,
        expected: str | None = None,
        actual: str | None = None,
    ) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.expected = expected
        self.actual = actual


class SerializationError(Exception):
    """A value cannot be encoded for storage, or stored bytes cannot be decoded.

    Attributes:
        node: The node that produced the value, when known.
        key: The state key concerned, when known.
    """

    def __init__(self, message: str = "", *, node: str | None = None, key: str | None = None) -> None:
        super().__init__(message)
        self.node = node
        self.key = key


class DecryptionError(SerializationError, ValueError):
    """Stored bytes were encrypted with another key, or were altered (the authentication tag fails).

    A ``ValueError`` too, as pycryptodome's failed check is in LangGraph.
    """


class SchemaVersionError(RuntimeError):
    """The checkpoint (or server) tables were created by a newer plait than this one; nothing was changed.

    Attributes:
        found: The schema version stored in the database.
        supported: The newest schema version this plait knows.
    """

    def __init__(self, found: int, supported: int, where: str = "database", kind: str = "checkpoint") -> None:
        super().__init__(
            f"The {where} holds {kind} schema version {found}, newer than this plait supports "
            f"({supported}); nothing was changed. Upgrade plait (pip install -U plait) to open it."
        )
        self.found = found
        self.supported = supported


class GraphBubbleUp(Exception):  # noqa: N818 - LangGraph's name
    """Base of the exceptions that steer a run (interrupts, parent commands): error handlers let them pass."""


class ParentCommand(GraphBubbleUp):
    """Carries a ``Command(graph=Command.PARENT)`` from a subgraph's node up to its parent graph.

    Attributes:
        command: The command, to be applied by the parent as the subgraph node's result.
    """

    def __init__(
        self, command: Any, node: str | None = None
    ) -> None:  # a Command (plait.types imports this module)
        super().__init__(command)  # ``args[0]`` is the command, as in LangGraph
        self.command = command
        self.node = node

    def __str__(self) -> str:
        return (
            f"Node {self.node!r} returned Command(graph=Command.PARENT, ...): it is applied by the parent "
            "graph when this graph runs as a subgraph; this graph has no parent here."
        )


class CheckpointNotFoundError(LookupError):
    """A config names a checkpoint that the thread does not have (never written, or pruned).

    Attributes:
        thread_id: The thread.
        checkpoint_id: The missing checkpoint.
    """

    def __init__(self, thread_id: str, checkpoint_id: str) -> None:
        super().__init__(
            f"Thread {thread_id!r} has no checkpoint {checkpoint_id!r} (never written, deleted or "
            "pruned). Use get_state_history() to pick an existing one, or drop checkpoint_id to use "
            "the newest."
        )
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id


class IncompatibleDatabaseError(RuntimeError):
    """The database holds checkpoint tables plait did not write (e.g. LangGraph's); nothing was changed."""


class UndeclaredKeyWarning(UserWarning):
    """A node wrote a key that no schema declares; the write was dropped (strict mode raises instead)."""


class GraphInterrupt(GraphBubbleUp):
    """The run stopped to wait for outside input (``interrupt()`` or interrupt_before/after)."""

    def __init__(self, interrupts: tuple[Any, ...] = ()) -> None:
        super().__init__(interrupts)
        self.interrupts = interrupts


class NodeInterrupt(GraphInterrupt):
    """Raised from inside a node to pause the run with a value for the caller."""

    def __init__(self, value: object = None) -> None:
        super().__init__((value,))
        self.value = value


class GraphDrained(GraphBubbleUp):
    """The run stopped at a step boundary because its ``RunControl`` asked it to drain.

    The checkpoint of the last completed step is saved: ``invoke(None, config)`` continues.

    Attributes:
        reason: The reason given to ``RunControl.request_drain``.
    """

    def __init__(self, reason: str = "shutdown") -> None:
        super().__init__(f"Graph drained: {reason}")
        self.reason = reason


class UnknownInterruptError(Exception):
    """Strict resume mode: ``Command(resume=...)`` does not match the pending interrupts.

    Raised before anything is written, so the pending interrupts can still be answered.

    Attributes:
        reason: ``"not_pending"`` (the map names ids that are not pending, see ``interrupt_ids``),
            ``"empty_map"`` or ``"ambiguous"`` (one value while several interrupts are pending).
        interrupt_ids: The ids of the map that are not pending.
        pending_ids: The ids still waiting for an answer, sorted.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: Literal["not_pending", "empty_map", "ambiguous"],
        interrupt_ids: Sequence[str] = (),
        pending_ids: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.interrupt_ids = tuple(interrupt_ids)
        self.pending_ids = tuple(pending_ids)


@dataclass(frozen=True, slots=True)
class NodeError:
    """What a node's error handler (``add_node(..., error_handler=...)``) learns about the failure.

    A handler receives it through a parameter named ``error`` annotated ``NodeError``::

        def handler(state: State, error: NodeError) -> dict:
            return {"status": f"{error.node} failed: {error.error}"}

    Attributes:
        node: The node that failed.
        error: What it raised (after its retries ran out). When the handler runs again after
            a resume, the error comes back from the checkpoint as a :class:`StoredNodeError`.
    """

    node: str
    error: BaseException


class StoredNodeError(Exception):
    """A node's error as a checkpoint kept it: ``str(err)`` is the original error's ``repr``.

    Exceptions are not stored as such; an error handler that runs again when its run resumes
    gets this in :attr:`NodeError.error`.
    """


_INVALID_RESUME = "_plait_invalid_resume"


def mark_invalid_resume(error: BaseException) -> BaseException:
    """Tag ``error`` as raised by a resume value that does not match its ``response_schema``."""
    setattr(error, _INVALID_RESUME, True)
    return error


def is_invalid_resume(error: BaseException) -> bool:
    """Whether ``error`` is a resume value failing its interrupt's ``response_schema`` validation."""
    return getattr(error, _INVALID_RESUME, False) is True


class TaskNotFound(Exception):  # noqa: N818 - LangGraph's name
    """An executor could not find a task (LangGraph's distributed mode; plait never raises it)."""


class NodeCancelledError(Exception):
    """A node's own body raised ``asyncio.CancelledError``: a node failure, not a cancelled run.

    Attributes:
        node: The node that raised it.
    """

    def __init__(self, node: str, message: str | None = None) -> None:
        super().__init__(message or f"Node {node!r} raised asyncio.CancelledError")
        self.node = node

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.node, str(self)))


class NodeTimeoutError(Exception):
    """A node attempt ran past its ``timeout`` (:class:`~plait.types.TimeoutPolicy`).

    Not a :class:`TimeoutError` (an ``OSError``), so the default retry policy retries it.

    Attributes:
        node: The node that timed out.
        elapsed: Seconds the attempt ran.
        kind: ``"run"`` (the hard cap) or ``"idle"`` (no progress for too long).
        timeout: The limit that fired, in seconds.
        run_timeout: The configured hard cap, if any.
        idle_timeout: The configured idle limit, if any.
    """

    def __init__(
        self,
        node: str,
        elapsed: float,
        *,
        kind: Literal["idle", "run"],
        idle_timeout: float | None = None,
        run_timeout: float | None = None,
    ) -> None:
        limit = idle_timeout if kind == "idle" else run_timeout
        if kind not in ("idle", "run") or limit is None:
            raise ValueError(f"NodeTimeoutError: kind={kind!r} needs its {kind}_timeout (got None)")
        if kind == "idle":
            message = (
                f"Node '{node}' exceeded its idle timeout of {limit:.3f}s without making progress "
                f"(elapsed: {elapsed:.3f}s)."
            )
        else:
            message = f"Node '{node}' exceeded its run timeout of {limit:.3f}s (elapsed: {elapsed:.3f}s)."
        super().__init__(message)
        self.node = node
        self.elapsed = elapsed
        self.kind: Literal["idle", "run"] = kind
        self.timeout: float = limit
        self.idle_timeout = idle_timeout
        self.run_timeout = run_timeout

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_timeout, (self.node, self.elapsed, self.kind, self.idle_timeout, self.run_timeout))


def _rebuild_timeout(
    node: str, elapsed: float, kind: Literal["idle", "run"], idle: float | None, run: float | None
) -> NodeTimeoutError:
    return NodeTimeoutError(node, elapsed, kind=kind, idle_timeout=idle, run_timeout=run)
