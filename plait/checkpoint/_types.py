"""The shapes of a checkpoint and its metadata (re-exported by :mod:`plait.checkpoint.base`)."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["ChannelVersions", "Checkpoint", "CheckpointMetadata"]

ChannelVersions = dict[str, str | int | float]
"""A checkpoint's version of each channel."""


class Checkpoint(TypedDict, total=False):
    """The state of a thread after one superstep.

    Keys:
        v: Format version.
        id: Unique, time-ordered id (a UUID-shaped string).
        ts: ISO-8601 UTC timestamp.
        channel_values: Value of every set state key.
        channel_versions: Version of every key ever written.
        updated_channels: Keys written by the step that made this checkpoint.
        next: Nodes scheduled to run next (reading the state).
        sends: ``(node, arg)`` pairs scheduled by ``Send``.
        barriers: Sources already seen by each join barrier.
        interrupts: Pending interrupts as ``{"value", "id", "node"}`` dicts.
    """

    v: int
    id: str
    ts: str
    channel_values: dict[str, Any]
    channel_versions: dict[str, int]
    updated_channels: list[str]
    next: list[str]
    sends: list[tuple[str, Any]]
    barriers: dict[str, list[str]]
    interrupts: list[dict[str, Any]]


class CheckpointMetadata(TypedDict, total=False):
    """What made a checkpoint.

    Keys:
        source: ``"input"``, ``"loop"``, ``"update"`` or ``"fork"``.
        step: Step number: -1 for the first input, then one per superstep.
        parents: Checkpoint ids of parent graphs, by namespace.
    """

    source: str
    step: int
    parents: dict[str, str]
