"""Managed values: state fields the runtime fills in for each task, never written or stored."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from typing_extensions import TypeIs

__all__ = ["ManagedValue", "ManagedValueMapping", "ManagedValueSpec", "Scratchpad", "is_managed_value"]

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Scratchpad:
    """What a managed value is computed from.

    Attributes:
        step: The step the task runs in.
        stop: The first step the run may not take (the recursion limit is reached there).
    """

    step: int
    stop: int


class ManagedValue(ABC, Generic[V]):
    """A value computed per task from the run's progress (subclass and implement :meth:`get`)."""

    @staticmethod
    @abstractmethod
    def get(scratchpad: Scratchpad) -> V:
        """The value for a task, from its ``scratchpad``."""


ManagedValueSpec = type[ManagedValue[Any]]
"""A managed value class, as it appears in a state schema."""

ManagedValueMapping = dict[str, ManagedValueSpec]
"""State keys to their managed value class."""


def is_managed_value(value: object) -> TypeIs[ManagedValueSpec]:
    """Whether ``value`` is a :class:`ManagedValue` class."""
    return inspect.isclass(value) and issubclass(value, ManagedValue)
