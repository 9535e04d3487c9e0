"""Keys the runtime handles on its own: managed values and volatile channels.

Managed values (``RemainingSteps``, ``IsLastStep``) are filled into a task's input (and
into what its conditional edges read) and never stored; volatile channels
(``EphemeralValue``, ``Topic``) are cleared by a step that does not write them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plait._schema import MISSING
from plait.managed.base import Scratchpad
from plait.pregel._plan import Plan

__all__ = ["clear_unwritten", "fill_managed"]


def fill_managed(state: dict[str, Any], managed: Sequence[tuple[str, Any]], step: int, stop: int) -> None:
    """Set each managed key of a task's ``state`` from the step it runs in and the run's ``stop``."""
    pad = Scratchpad(step=step, stop=stop)
    for key, value in managed:
        state[key] = value.get(pad)


def clear_unwritten(plan: Plan, values: dict[str, Any], versions: dict[str, int], written: set[str]) -> None:
    """After a step, merge the volatile keys nobody wrote with no values (clearing them).

    An ``EphemeralValue``, ``AnyValue`` or non-accumulating ``Topic`` holds only what
    the last step wrote. ``written`` gets the keys that changed.
    """
    channels = plan.channels
    for key in plan.volatile:
        if key in written or key not in values:
            continue
        new = channels[key].merge(values[key], (), ())
        if new is MISSING:
            del values[key]
        else:
            values[key] = new
        versions[key] = versions.get(key, 0) + 1
        written.add(key)
