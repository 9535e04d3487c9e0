"""The runtime: compiled plans, the superstep loop and its drivers."""

from plait.pregel._builder import NodeBuilder
from plait.pregel._pregel import Pregel
from plait.types import RetryPolicy

__all__ = ["NodeBuilder", "Pregel", "RetryPolicy"]
