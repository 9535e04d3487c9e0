"""Accessors a running node can call instead of declaring extra parameters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plait._context import current_task

__all__ = ["get_config", "get_store", "get_stream_writer"]


def get_config() -> dict[str, Any]:
    """The run config of the running node.

    Raises:
        RuntimeError: called outside a running node.
    """
    return current_task().node_config


def get_store() -> Any:
    """The store given to ``compile(store=...)``, or ``None``.

    Raises:
        RuntimeError: called outside a running node.
    """
    return current_task().store


def get_stream_writer() -> Callable[[Any], None]:
    """A function that emits ``custom`` stream events from the running node.

    Raises:
        RuntimeError: called outside a running node.
    """
    return current_task().writer
