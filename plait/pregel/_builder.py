"""``NodeBuilder``: the nodes of a channel graph (``Pregel(nodes=..., channels=...)``).

A channel graph has no edges: a node *subscribes* to channels and runs in the step after
one of them was written; it *reads* channels as its input, runs a chain of functions
(``do``) and *writes* the result to channels (``write_to``)::

    Pregel(
        nodes={"double": NodeBuilder().subscribe_only("a").do(lambda x: x * 2).write_to("b")},
        channels={"a": LastValue(int), "b": LastValue(int)},
        input_channels="a",
        output_channels="b",
    ).invoke(3)  # 6
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NamedTuple

from typing_extensions import Self

from plait.types import CachePolicy, RetryPolicy, TimeoutPolicy

__all__ = ["PASSTHROUGH", "ChannelWriteEntry", "NodeBuilder", "PregelNode"]


class _Passthrough:
    __slots__ = ()

    def __repr__(self) -> str:
        return "PASSTHROUGH"


PASSTHROUGH = _Passthrough()
"""A :class:`ChannelWriteEntry` value that stands for the node's output."""


class ChannelWriteEntry(NamedTuple):
    """One write a node makes when it finishes.

    Attributes:
        channel: The channel written.
        value: The value written (:data:`PASSTHROUGH`: the node's output).
        skip_none: Write nothing when the value (after ``mapper``) is ``None``.
        mapper: Turns the value into what is written.
    """

    channel: str
    value: object = PASSTHROUGH
    skip_none: bool = False
    mapper: Callable[[Any], object] | None = None

    def write(self, output: object) -> tuple[str, object] | None:
        """The ``(channel, value)`` write for the node's ``output`` (``None``: skipped)."""
        value = output if self.value is PASSTHROUGH else self.value
        if self.mapper is not None:
            value = self.mapper(value)
        return None if value is None and self.skip_none else (self.channel, value)


def _empty_strs() -> list[str]:
    return []


def _empty_metadata() -> dict[str, object]:
    return {}


@dataclass(frozen=True, slots=True)
class PregelNode:
    """A built channel-graph node (what :meth:`NodeBuilder.build` returns).

    Attributes:
        channels: What the node reads: one channel (its input is that channel's value) or a
            list (its input is a dict of the channels that hold a value).
        triggers: The channels whose writes start the node.
        bound: The functions (or runnables) run in a chain: each gets the previous one's output.
        writers: The writes made with the chain's output.
        tags: Tags of the node.
        metadata: Metadata of the node.
        retry_policy: Retry policies (the first one is used).
        cache_policy: Cache the node's writes, keyed on its input.
    """

    channels: str | Sequence[str]
    triggers: Sequence[str]
    bound: Sequence[object] = ()
    writers: Sequence[ChannelWriteEntry] = ()
    tags: Sequence[str] = field(default_factory=_empty_strs)
    metadata: Mapping[str, object] = field(default_factory=_empty_metadata)
    retry_policy: Sequence[RetryPolicy] = ()
    cache_policy: CachePolicy[Any] | None = None
    timeout: TimeoutPolicy | None = None

    def writes(self, output: object) -> list[tuple[str, object]]:
        """The channel writes for the chain's ``output``."""
        return [w for w in (entry.write(output) for entry in self.writers) if w is not None]


class NodeBuilder:
    """Builds a :class:`PregelNode` step by step; every method returns the builder."""

    def __init__(self) -> None:
        self._channels: str | list[str] = []
        self._triggers: list[str] = []
        self._bound: list[object] = []
        self._writes: list[ChannelWriteEntry] = []
        self._tags: list[str] = []
        self._metadata: dict[str, object] = {}
        self._retry_policy: list[RetryPolicy] = []
        self._cache_policy: CachePolicy[Any] | None = None
        self._timeout: TimeoutPolicy | None = None

    def subscribe_only(self, channel: str) -> Self:
        """Run on writes of ``channel`` and take its value as the input.

        Raises:
            ValueError: the node already reads other channels.
        """
        if self._channels:
            raise ValueError(
                "Cannot subscribe to single channels when other channels are already subscribed to"
            )
        self._channels = channel
        self._triggers.append(channel)
        return self

    def subscribe_to(self, *channels: str, read: bool = True) -> Self:
        """Run on writes of any of ``channels``; ``read``: they are keys of the input dict too.

        Raises:
            ValueError: the node subscribes to a single channel (:meth:`subscribe_only`).
        """
        if isinstance(self._channels, str):
            raise ValueError("Cannot subscribe to channels when subscribed to a single channel")
        if read:
            self._channels.extend(channels)
        self._triggers.extend(channels)
        return self

    def read_from(self, *channels: str) -> Self:
        """Add ``channels`` to the input dict without running on their writes.

        Raises:
            ValueError: the node subscribes to a single channel (:meth:`subscribe_only`).
        """
        if isinstance(self._channels, str):
            raise ValueError("Cannot read additional channels when subscribed to a single channel")
        self._channels.extend(channels)
        return self

    def do(self, node: object) -> Self:
        """Add ``node`` (a function, coroutine function or runnable) to the chain the node runs."""
        if not callable(node) and not hasattr(node, "invoke"):
            raise TypeError(f"Expected a function or a runnable, got {type(node).__name__}")
        self._bound.append(node)
        return self

    def write_to(self, *channels: str | ChannelWriteEntry, **kwargs: object) -> Self:
        """Write the output to ``channels``; ``name=value`` writes a fixed value, ``name=f`` writes
        ``f(output)``."""
        self._writes.extend(ChannelWriteEntry(c) if isinstance(c, str) else c for c in channels)
        self._writes.extend(
            ChannelWriteEntry(k, mapper=v) if callable(v) else ChannelWriteEntry(k, value=v)
            for k, v in kwargs.items()
        )
        return self

    def meta(self, *tags: str, **metadata: object) -> Self:
        """Add tags and metadata."""
        self._tags.extend(tags)
        self._metadata.update(metadata)
        return self

    def add_retry_policies(self, *policies: RetryPolicy) -> Self:
        """Add retry policies (the first one applies)."""
        self._retry_policy.extend(policies)
        return self

    def add_cache_policy(self, policy: CachePolicy[Any]) -> Self:
        """Cache the node's writes, keyed on its input (with a graph ``cache=``)."""
        self._cache_policy = policy
        return self

    def set_timeout(self, timeout: float | timedelta | TimeoutPolicy | None) -> Self:
        """Limit each attempt of the (async) node (see ``StateGraph.add_node(timeout=...)``).

        Raises:
            ValueError: a limit that is not positive.
        """
        self._timeout = TimeoutPolicy.coerce(timeout)
        return self

    def build(self) -> PregelNode:
        """The node."""
        channels = self._channels if isinstance(self._channels, str) else list(self._channels)
        return PregelNode(
            channels=channels,
            triggers=list(self._triggers),
            bound=list(self._bound),
            writers=list(self._writes),
            tags=list(self._tags),
            metadata=dict(self._metadata),
            retry_policy=list(self._retry_policy),
            cache_policy=self._cache_policy,
            timeout=self._timeout,
        )
