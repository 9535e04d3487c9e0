"""``config["configurable"]`` -> :class:`ThreadRef`: the one place that reads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plait.checkpoint.base import CheckpointTuple
from plait.errors import CheckpointNotFoundError

__all__ = ["ThreadRef", "config_with", "found"]

_MISSING_THREAD = (
    "Checkpointer requires one or more of the following 'configurable' keys: thread_id, "
    "checkpoint_ns, checkpoint_id. Pass config={'configurable': {'thread_id': '...'}} to invoke/stream."
)


@dataclass(frozen=True, slots=True)
class ThreadRef:
    """Which thread (and optionally which checkpoint of it) a run addresses.

    Attributes:
        thread_id: The conversation / session id.
        checkpoint_ns: Namespace within the thread ("" for the root graph).
        checkpoint_id: A specific checkpoint to start from, or ``None`` for the newest.
    """

    thread_id: str
    checkpoint_ns: str = ""
    checkpoint_id: str | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> ThreadRef:
        """Read the thread from a run config.

        Raises:
            ValueError: no ``thread_id`` in ``config["configurable"]``.
        """
        conf = (config or {}).get("configurable") or {}
        thread_id = conf.get("thread_id")
        if thread_id is None or thread_id == "":
            raise ValueError(_MISSING_THREAD)
        return cls(str(thread_id), conf.get("checkpoint_ns", "") or "", conf.get("checkpoint_id"))

    def config(self, checkpoint_id: str | None = None) -> dict[str, Any]:
        """A config addressing ``checkpoint_id`` (default: this ref's) on this thread."""
        conf: dict[str, Any] = {"thread_id": self.thread_id, "checkpoint_ns": self.checkpoint_ns}
        cid = checkpoint_id or self.checkpoint_id
        if cid is not None:
            conf["checkpoint_id"] = cid
        return {"configurable": conf}


def config_with(config: Mapping[str, Any] | None, **configurable: Any) -> dict[str, Any]:
    """Copy ``config`` with extra ``configurable`` entries (used for subgraph and node configs)."""
    out = dict(config or {})
    out["configurable"] = {**(out.get("configurable") or {}), **configurable}
    return out


def found(saved: CheckpointTuple | None, thread: ThreadRef) -> CheckpointTuple | None:
    """``saved``, unless the config named a checkpoint that is not there.

    Raises:
        CheckpointNotFoundError: ``thread.checkpoint_id`` names a missing checkpoint.
    """
    if saved is None and thread.checkpoint_id is not None:
        raise CheckpointNotFoundError(thread.thread_id, thread.checkpoint_id)
    return saved
