"""The ``recursion_limit`` of a run: its default, and the error of a run that hit it."""

from __future__ import annotations

import os

from plait.errors import ErrorCode, GraphRecursionError, add_note, create_error_message
from plait.pregel._run_state import RunState

__all__ = ["DEFAULT_RECURSION_LIMIT", "recursion_error"]

DEFAULT_RECURSION_LIMIT = int(os.environ.get("PLAIT_DEFAULT_RECURSION_LIMIT", "10007"))
"""Supersteps a run may take when the config sets no ``recursion_limit`` (LangGraph's default)."""


def recursion_error(run: RunState, limit: int) -> GraphRecursionError:
    """The error of a run that took ``limit`` supersteps without finishing, naming what was still scheduled."""
    nodes = (*run.next, *(n for n, _ in run.sends))
    message = create_error_message(
        message=f"Recursion limit of {limit} reached without hitting a stop condition. "
        "You can increase the limit by setting the `recursion_limit` config key.",
        error_code=ErrorCode.GRAPH_RECURSION_LIMIT,
    )
    err = GraphRecursionError(message, step=run.step, nodes=nodes)
    add_note(err, f"Nodes still scheduled after step {run.step - 1}: {list(nodes)}")
    return err
