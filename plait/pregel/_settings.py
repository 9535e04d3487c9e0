"""What one run is given and never changes: :class:`RunSettings`.

The graph makes it once per run (``Pregel._loop``); the run's :class:`~plait.pregel._loop.Loop`
holds it as ``loop.settings`` next to what changes while the run goes on, and the drivers and
helpers read from it what they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from plait.checkpoint.base import config_metadata
from plait.pregel._limits import DEFAULT_RECURSION_LIMIT
from plait.pregel._options import RunOptions
from plait.pregel._plan import Plan
from plait.pregel._thread import ThreadRef
from plait.pregel._travel import Travel
from plait.runtime import RunControl, ServerInfo

if TYPE_CHECKING:
    from plait.checkpoint.base import BaseCheckpointSaver

__all__ = ["RunSettings", "run_settings"]


class RunSettings(NamedTuple):
    """The fixed part of one run (immutable; a named tuple, which is cheaper to make than a frozen
    dataclass: one is made per run).

    Attributes:
        plan: The compiled plan.
        saver: The checkpointer, or ``None``.
        config: The run config.
        thread: The thread the run saves in (``None`` without a saver).
        modes: Stream modes to produce events for.
        subgraphs: Stream the events of subgraphs too.
        limit: The recursion limit (supersteps).
        before: Nodes to pause before (``"*"``: all).
        after: Nodes to pause after.
        multitask: ``"enqueue"`` or ``"reject"`` (a busy thread).
        lease_timeout: Seconds to wait for a busy thread (``None``: no limit).
        durability: ``"sync"``, ``"async"`` or ``"exit"``.
        control: Drains the run at the next step boundary when asked.
        server_info: What a LangGraph server says about the run.
        strict_resume: Refuse a resume that does not match the pending interrupts.
        travel: This run's part in a time travel (:mod:`plait.pregel._travel`), if any.
        step_timeout: Seconds a step may take (the graph's ``step_timeout``), or ``None``.
        metadata: The config's metadata every checkpoint of the run carries.
    """

    plan: Plan
    saver: BaseCheckpointSaver | None
    config: dict[str, object]
    thread: ThreadRef | None
    modes: frozenset[str]
    subgraphs: bool
    limit: int
    before: frozenset[str]
    after: frozenset[str]
    multitask: str
    lease_timeout: float | None
    durability: str
    control: RunControl | None
    server_info: ServerInfo | None
    strict_resume: bool
    travel: Travel | None
    step_timeout: float | None
    metadata: dict[str, object]


def run_settings(  # noqa: PLR0913 - what a run is given
    plan: Plan,
    saver: Any,
    config: dict[str, Any],
    modes: frozenset[str],
    options: RunOptions | None = None,
    travel: Travel | None = None,
    step_timeout: float | None = None,
) -> RunSettings:
    """The settings of a run of ``plan`` (``options``: per-run overrides; ``config``: checked)."""
    options = options or RunOptions()
    before, after = options.interrupt_before, options.interrupt_after
    limit = config.get("recursion_limit")  # checked by run_config: None or an int >= 1
    return RunSettings(
        plan=plan,
        saver=saver,
        config=config,
        thread=ThreadRef.from_config(config) if saver is not None else None,
        modes=modes,
        subgraphs=options.subgraphs,
        limit=DEFAULT_RECURSION_LIMIT if limit is None else int(limit),
        before=plan.interrupt_before if before is None else before,
        after=plan.interrupt_after if after is None else after,
        multitask=options.multitask,
        lease_timeout=options.lease_timeout,
        durability=options.durability,
        control=options.control,
        server_info=options.server_info,
        strict_resume=options.strict_resume,
        travel=travel,
        step_timeout=step_timeout,
        metadata=config_metadata(config),
    )
