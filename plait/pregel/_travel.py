"""Time travel across subgraphs: which checkpoint each subgraph of a replayed run starts from.

A run that starts from an explicit past checkpoint (a replay or a fork) runs its
stateful subgraphs (``checkpointer=True``) from the state they had back then: on
its first call in the run, a subgraph loads its newest checkpoint from before
the replayed step (the run's *bound*), and later calls load their newest one.

A subgraph's own checkpoint config (``get_state(subgraphs=True)``,
``update_state`` on a subgraph) carries a ``checkpoint_map`` of the checkpoints
of the graphs around it (LangGraph's key). Invoking the root graph with such a
config travels to all of them: the root replays the checkpoint the map names
for it, and each subgraph on the path continues from its own.

One :class:`Voyage` is shared by all runs nested in one top-level run; each run
holds a :class:`Travel` that points at it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from plait.checkpoint.base import CheckpointTuple
from plait.pregel._thread import ThreadRef, config_with, configurable_of, found
from plait.types import Command

if TYPE_CHECKING:
    from plait.checkpoint.base import BaseCheckpointSaver

__all__ = [
    "CHECKPOINT_MAP",
    "LoadingRun",
    "TRAVEL",
    "Travel",
    "TravelSettings",
    "Voyage",
    "aload_run",
    "checkpoint_map",
    "load_run",
    "mapped",
    "nested_travel",
    "stable_ns",
    "top_level",
    "travel_input",
    "with_map",
]

TRAVEL = "_travel"
"""Run keyword a parent task hands its subgraph's run the :class:`Travel` with (not a user option)."""
CHECKPOINT_MAP = "checkpoint_map"
"""``configurable`` key of a subgraph's checkpoint config: namespace -> checkpoint id of each
graph on its path (LangGraph's name)."""


# the dataclasses' default factories are the builtins; typed here with their element types
if TYPE_CHECKING:

    def _names() -> dict[str, str]: ...
    def _seen() -> set[str]: ...

else:
    _names, _seen = dict, set


def stable_ns(ns: str) -> str:
    """``ns`` without task ids: the same subgraph has it in every run (``a:tid|b:tid`` -> ``a|b``)."""
    return "|".join(part.split(":")[0] for part in ns.split("|"))


@dataclass(slots=True)
class Voyage:
    """What all the runs nested in one top-level run share.

    Attributes:
        bound: Stateful subgraphs first load their newest checkpoint from before this checkpoint id
            (``None``: the run is no time travel, they load their newest).
        targets: Stable namespace -> checkpoint id a subgraph continues from (a ``checkpoint_map``).
    """

    bound: str | None = None
    targets: dict[str, str] = field(default_factory=_names)
    _visited: set[str] = field(default_factory=_seen)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def first_visit(self, ns: str) -> tuple[str | None, str | None]:
        """``(target, before)`` for the subgraph run at ``ns``: the checkpoint it continues from,
        or the id it loads its newest checkpoint before; both ``None`` after its first call."""
        key = stable_ns(ns)
        with self._lock:
            if key in self._visited:
                return None, None
            self._visited.add(key)
        target = self.targets.get(key)
        return (target, None) if target is not None else (None, self.bound)


@dataclass(slots=True)
class Travel:
    """One run's part in a :class:`Voyage`.

    Attributes:
        voyage: The shared part.
        before: Load the newest checkpoint from before this id instead of the thread head
            (``None``: the checkpoint the config addresses).
        parents: Checkpoint ids of the graphs this run is nested in, by namespace
            (saved as the ``parents`` metadata of its checkpoints).
        root: This is the top-level run (it sets the voyage's bound).
    """

    voyage: Voyage
    before: str | None = None
    parents: dict[str, str] = field(default_factory=_names)
    root: bool = False


def top_level(config: dict[str, object]) -> tuple[dict[str, object], Travel]:
    """A top-level run's config and travel.

    A config with a ``checkpoint_ns`` addresses a subgraph's checkpoint: the run is the root
    graph's, from the root checkpoint the ``checkpoint_map`` names (the newest without one), and
    the subgraphs in the map continue from their checkpoints.
    """
    conf = configurable_of(config)
    ns = conf.get("checkpoint_ns")
    if not ns or not isinstance(ns, str):
        return config, Travel(Voyage(), root=True)
    mapped = cast("Mapping[str, object]", conf.get(CHECKPOINT_MAP) or {})
    targets = {stable_ns(k): str(v) for k, v in mapped.items() if k and v}
    root_id = mapped.get("")
    out = config_with(config, checkpoint_ns="", checkpoint_id=root_id or None)
    out["configurable"].pop(CHECKPOINT_MAP, None)
    return out, Travel(Voyage(targets=targets), root=True)


def nested_travel(
    parent: Travel | None, parent_ns: str, parent_id: str | None, config: dict[str, object]
) -> tuple[dict[str, object], Travel, bool]:
    """A subgraph run's config and travel, as its parent task starts it.

    Returns:
        ``(config, travel, continues)``: ``continues`` -- the subgraph continues from a checkpoint
        the travel names (it takes no input, only an answer to its interrupt).
    """
    voyage = parent.voyage if parent is not None else Voyage()
    parents = dict(parent.parents) if parent is not None else {}
    if parent_id is not None:
        parents[parent_ns] = parent_id
    ns = configurable_of(config).get("checkpoint_ns") or ""
    target, before = voyage.first_visit(ns)
    travel = Travel(voyage, before=before, parents=parents)
    if target is not None:
        return config_with(config, checkpoint_id=target), travel, True
    return config, travel, False


def travel_input(given: Any, continues: bool) -> Any:
    """What a subgraph that continues from a travel target runs with: only an interrupt's answer."""
    answers = isinstance(given, Command)
    return None if continues and not answers else cast("Any", given)  # the input, or the answer


def checkpoint_map(parents: Mapping[str, object], ns: str, checkpoint_id: str) -> dict[str, str]:
    """The ``checkpoint_map`` of a subgraph checkpoint: its parents, then itself."""
    return {**{str(k): str(v) for k, v in parents.items()}, ns: checkpoint_id}


def with_map(config: dict[str, object], metadata: Mapping[str, object]) -> dict[str, object]:
    """A subgraph checkpoint's config with its ``checkpoint_map`` (a root checkpoint's as it is)."""
    conf = configurable_of(config)
    ns, cid = conf.get("checkpoint_ns"), conf.get("checkpoint_id")
    if not ns or not cid:
        return config
    parents = cast("Mapping[str, object]", metadata.get("parents") or {})
    return config_with(config, **{CHECKPOINT_MAP: checkpoint_map(parents, ns, cid)})


def mapped(saved: CheckpointTuple) -> CheckpointTuple:
    """``saved`` with :func:`with_map` applied to its config."""
    config = with_map(saved.config, saved.metadata or {})
    return saved if config is saved.config else saved._replace(config=config)


class TravelSettings(Protocol):
    """What :func:`load_run` reads of a run's settings (:class:`~plait.pregel._settings.RunSettings`):
    the thread and the travel it runs with."""

    @property
    def thread(self) -> ThreadRef | None: ...
    @property
    def travel(self) -> Travel | None: ...


class LoadingRun(Protocol):
    """What :func:`load_run` needs of a run (:class:`~plait.pregel._loop.Loop`): its thread and travel
    (in its settings), and how it starts from a checkpoint."""

    @property
    def settings(self) -> TravelSettings: ...
    def load(self, saved: CheckpointTuple | None, head: CheckpointTuple | None) -> None: ...
    def load_past(self, saved: CheckpointTuple | None, head: CheckpointTuple | None) -> None: ...


def _start(
    loop: LoadingRun, saved: CheckpointTuple | None, head: CheckpointTuple | None, input: object
) -> None:  # noqa: A002
    travel = loop.settings.travel
    thread = loop.settings.thread
    explicit = thread is not None and thread.checkpoint_id is not None
    answers = getattr(input, "resume", None) is not None and isinstance(input, Command)
    if travel is not None and travel.root and explicit and saved is not None and not answers:
        # the replayed step's subgraph checkpoints were made after the checkpoint it starts from
        # (an update or a fork is a child of that checkpoint: its parent is the bound)
        source = (saved.metadata or {}).get("source")
        parent = saved.parent_config if source in ("update", "fork") else None
        bound = configurable_of(parent).get("checkpoint_id") if parent is not None else None
        travel.voyage.bound = bound or saved.checkpoint.get("id")
    loop.load(saved, head)


# >>> async source
async def aload_run(loop: LoadingRun, saver: BaseCheckpointSaver, input: object) -> None:  # noqa: A002
    """Load the checkpoint ``loop`` starts from (the driver holds the thread's lease)."""
    thread = loop.settings.thread
    assert thread is not None  # noqa: S101 - set whenever there is a saver
    travel = loop.settings.travel
    if travel is not None and travel.before is not None:
        head = await saver.aget_tuple(thread.config())
        saved = None
        async for item in saver.alist(thread.config(), before=_before(travel.before), limit=1):
            saved = item
            break
        loop.load_past(saved, head)
        return
    head = await saver.aget_tuple(thread.head().config()) if thread.checkpoint_id is not None else None
    _start(loop, found(await saver.aget_tuple(thread.config()), thread), head, input)


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def load_run(loop: LoadingRun, saver: BaseCheckpointSaver, input: object) -> None:  # noqa: A002
    """Load the checkpoint ``loop`` starts from (the driver holds the thread's lease)."""
    thread = loop.settings.thread
    assert thread is not None  # noqa: S101 - set whenever there is a saver
    travel = loop.settings.travel
    if travel is not None and travel.before is not None:
        head = saver.get_tuple(thread.config())
        saved = None
        for item in saver.list(thread.config(), before=_before(travel.before), limit=1):
            saved = item
            break
        loop.load_past(saved, head)
        return
    head = saver.get_tuple(thread.head().config()) if thread.checkpoint_id is not None else None
    _start(loop, found(saver.get_tuple(thread.config()), thread), head, input)


# <<< generated sync


def _before(checkpoint_id: str) -> dict[str, object]:
    return {"configurable": {"checkpoint_id": checkpoint_id}}
