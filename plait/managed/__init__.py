"""Managed values: ``RemainingSteps`` and ``IsLastStep`` state fields."""

from plait.managed.is_last_step import IsLastStep, RemainingSteps

__all__ = ["IsLastStep", "RemainingSteps"]
