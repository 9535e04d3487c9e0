"""Public sentinels shared by the builder and the runtime."""

from __future__ import annotations

import sys
import warnings
from typing import Any

from plait.warnings import LangGraphDeprecatedSinceV10

__all__ = ["END", "START", "TAG_HIDDEN", "TAG_NOSTREAM"]

START: str = sys.intern("__start__")
"""The virtual first node: edges from START say where a run begins."""

END: str = sys.intern("__end__")
"""The virtual last node: an edge to END finishes that branch of the run."""

TAG_NOSTREAM: str = sys.intern("nostream")
"""Tag that disables streaming of a chat model's tokens."""

TAG_HIDDEN: str = sys.intern("langsmith:hidden")
"""Tag that hides a node from tracing output."""


def __getattr__(name: str) -> Any:
    """LangGraph's deprecated names here: ``Send``/``Interrupt`` (now in :mod:`plait.types`) and its
    private constants (``CONF``, ``TASKS``…), each with a deprecation warning.

    Raises:
        AttributeError: LangGraph has no such name here either.
    """
    import importlib

    if name in ("Send", "Interrupt"):
        where, advice = "plait.types", f"Please use 'from langgraph.types import {name}' instead."
    else:
        where, advice = (
            "plait._internal._constants",
            "This constant is now private and should not be used directly.",
        )
    value = getattr(importlib.import_module(where), name, _NOTHING)
    if value is _NOTHING or name.startswith("_"):
        raise AttributeError(f"module 'langgraph.constants' has no attribute '{name}'")
    warnings.warn(
        f"Importing {name} from langgraph.constants is deprecated. {advice}",
        LangGraphDeprecatedSinceV10,
        stacklevel=2,
    )
    return value


_NOTHING = object()
