"""LangGraph's ``checkpoint.postgres.shallow`` path: savers keeping only the newest checkpoint.

See :mod:`plait.checkpoint.postgres._shallow`; both are deprecated, as in LangGraph.
"""

from __future__ import annotations

from plait.checkpoint.postgres._shallow import ShallowPostgresSaver
from plait.checkpoint.postgres.aio import AsyncShallowPostgresSaver

__all__ = ["AsyncShallowPostgresSaver", "ShallowPostgresSaver"]
