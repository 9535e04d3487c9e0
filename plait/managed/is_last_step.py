"""``RemainingSteps`` and ``IsLastStep``: how close the run is to its recursion limit."""

from __future__ import annotations

from typing import Annotated

from plait.managed.base import ManagedValue, Scratchpad

__all__ = ["IsLastStep", "IsLastStepManager", "RemainingSteps", "RemainingStepsManager"]


class IsLastStepManager(ManagedValue[bool]):
    """``True`` in the last step the recursion limit allows."""

    @staticmethod
    def get(scratchpad: Scratchpad) -> bool:
        """Whether the task runs in the last allowed step."""
        return scratchpad.step == scratchpad.stop - 1


class RemainingStepsManager(ManagedValue[int]):
    """How many steps the run may still take, this one included."""

    @staticmethod
    def get(scratchpad: Scratchpad) -> int:
        """Steps left before the recursion limit, counting the task's own step."""
        return scratchpad.stop - scratchpad.step


IsLastStep = Annotated[bool, IsLastStepManager]
"""A state field that is ``True`` in the last step the recursion limit allows."""

RemainingSteps = Annotated[int, RemainingStepsManager]
"""A state field holding the number of steps left before the recursion limit."""
