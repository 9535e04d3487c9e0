"""The mutable state of one run (:class:`RunState`), its key versions and its deferred nodes (``defer=True``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from plait.checkpoint.base import now_iso

__all__ = ["RunState", "hold_deferred", "next_version"]


# the dataclasses' default factories are the builtins; typed here with their element types
if TYPE_CHECKING:

    def _versions() -> dict[str, int]: ...
    def _barriers() -> dict[str, set[str]]: ...
    def _names() -> list[str]: ...
    def _pairs() -> list[tuple[str, object]]: ...
    def _name_set() -> set[str]: ...

else:
    _versions = _barriers = dict
    _names = _pairs = list
    _name_set = set


def next_version(current: int | None, channel: None = None) -> int:
    """The version a key gets when a step writes it (plait's own counter)."""
    return 1 if current is None else current + 1


def hold_deferred(deferred: frozenset[str], run: RunState) -> None:
    """Hold the deferred nodes of ``run.next`` back until nothing else is scheduled; then run each once."""
    held = [n for n in run.next if n in deferred]
    if held:
        run.next = [n for n in run.next if n not in deferred]
        run.deferred.update(held)
    if not run.next and not run.sends and run.deferred:
        run.next, run.deferred = sorted(run.deferred), set()


@dataclass(slots=True)
class RunState:
    """The mutable state of one run: values, versions, barriers and what runs next.

    Attributes:
        values: Current value of every written key (unset keys are absent).
        versions: Version counter of every key (bumped when its value changes).
        barriers: Sources seen so far by each join barrier.
        next: Names of the nodes scheduled for the next step (state input).
        sends: ``(node, arg)`` pairs scheduled by ``Send``.
        step: Number of the step about to run.
    """

    values: dict[str, object]
    versions: dict[str, int] = field(default_factory=_versions)
    barriers: dict[str, set[str]] = field(default_factory=_barriers)
    next: list[str] = field(default_factory=_names)
    sends: list[tuple[str, object]] = field(default_factory=_pairs)
    step: int = 0
    deferred: set[str] = field(default_factory=_name_set)
    bump: Callable[[Any, None], Any] = next_version  # a saver's get_next_version when it has its own
    untracked: frozenset[str] = frozenset()  # keys never checkpointed (UntrackedValue), set by apply_writes

    def checkpoint(self, cid: str, changed: set[str]) -> tuple[dict[str, object], dict[str, int]]:
        """The checkpoint of the current state and the versions of the ``changed`` keys."""
        values = self.values
        if self.untracked:
            values = {k: v for k, v in values.items() if k not in self.untracked}
            changed = changed - self.untracked
        checkpoint: dict[str, object] = {
            "v": 1,
            "id": cid,
            "ts": now_iso(),
            "channel_values": dict(values),
            "channel_versions": dict(self.versions),
            "updated_channels": sorted(changed),
            "next": list(self.next),
            "sends": list(self.sends),
            "barriers": {k: sorted(v) for k, v in self.barriers.items()},
            "interrupts": [],
        }
        if self.deferred:
            checkpoint["deferred"] = sorted(self.deferred)
        return checkpoint, {k: self.versions[k] for k in changed if k in self.versions}

    def restore(self, cp: Mapping[str, Any], step: int) -> None:
        """Take the state a stored checkpoint ``cp`` holds; ``step`` is the step that runs next."""
        self.values = dict(cp.get("channel_values") or {})
        self.versions = dict(cp.get("channel_versions") or {})
        self.next = list(cp.get("next") or ())
        # stored sends may come back as lists; tuple() restores the (node, arg) pairs
        self.sends = [tuple(s) for s in cp.get("sends") or ()]
        barriers: Mapping[str, Any] = cp.get("barriers") or {}
        self.barriers = {k: set(v) for k, v in barriers.items()}
        self.deferred = set(cp.get("deferred") or ())
        self.step = step
