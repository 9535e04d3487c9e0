"""Public sentinels shared by the builder and the runtime."""

from __future__ import annotations

import sys

__all__ = ["END", "START", "TAG_HIDDEN", "TAG_NOSTREAM"]

START: str = sys.intern("__start__")
"""The virtual first node: edges from START say where a run begins."""

END: str = sys.intern("__end__")
"""The virtual last node: an edge to END finishes that branch of the run."""

TAG_NOSTREAM: str = sys.intern("nostream")
"""Tag that disables streaming of a chat model's tokens."""

TAG_HIDDEN: str = sys.intern("langsmith:hidden")
"""Tag that hides a node from tracing output."""
