"""``config["configurable"]`` -> :class:`ThreadRef`: the one place that reads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plait._internal._narrow import is_sequence
from plait.checkpoint.base import CheckpointTuple, configurable_of, thread_key
from plait.errors import CheckpointNotFoundError, InvalidConfigError

__all__ = ["ThreadRef", "config_with", "configurable_of", "found", "run_config", "without_thread"]

_CONFIGURABLE = "configurable"


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
    def from_config(cls, config: Mapping[str, object] | None) -> ThreadRef:
        """Read the thread from a run config (validated by :func:`~plait.checkpoint.base.thread_key`).

        Raises:
            InvalidConfigError: no ``thread_id`` in ``config["configurable"]``, or a malformed
                config (see :func:`~plait.checkpoint.base.thread_key`); a ``ValueError``.
        """
        return cls(*thread_key(config))

    def head(self) -> ThreadRef:
        """This thread without a checkpoint id: it addresses the newest checkpoint."""
        return ThreadRef(self.thread_id, self.checkpoint_ns)

    def config(self, checkpoint_id: str | None = None) -> dict[str, Any]:
        """A config addressing ``checkpoint_id`` (default: this ref's) on this thread."""
        conf: dict[str, object] = {"thread_id": self.thread_id, "checkpoint_ns": self.checkpoint_ns}
        cid = checkpoint_id or self.checkpoint_id
        if cid is not None:
            conf["checkpoint_id"] = cid
        return {_CONFIGURABLE: conf}


def _is_str_list(value: object) -> bool:
    """Whether ``value`` is a list or tuple of str."""
    return is_sequence(value) and all(isinstance(t, str) for t in value)


def run_config(config: Any) -> dict[str, Any]:
    """A copy of a run config, checked before anything runs.

    ``config`` and ``config["configurable"]`` must be dicts (or None),
    ``recursion_limit`` an int >= 1 (or None: the default), ``metadata`` a dict
    and ``tags`` a list of str. The thread fields are checked by
    :meth:`ThreadRef.from_config` when the graph has a checkpointer.

    Raises:
        InvalidConfigError: one of these does not hold.
    """
    if config is None:  # most runs
        return {}
    configurable_of(config)
    out = dict(config)
    limit = out.get("recursion_limit")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidConfigError(
                f"recursion_limit must be an int, got {type(limit).__name__} {limit!r}. Set "
                "config['recursion_limit'] to the number of supersteps allowed, e.g. {'recursion_limit': 50}, "
                "or leave it out for the default.",
                field="recursion_limit",
                value=limit,
            )
        if limit < 1:
            # LangGraph's wording ("recursion_limit must be at least 1"), which tests match on
            raise InvalidConfigError(
                f"recursion_limit must be at least 1, got {limit}. Set config['recursion_limit'] to the number "
                "of supersteps allowed, e.g. {'recursion_limit': 50}, or leave it out for the default.",
                field="recursion_limit",
                value=limit,
            )
    metadata = out.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InvalidConfigError(
            f"Invalid config['metadata']: expected a dict, got {type(metadata).__name__} {metadata!r:.60}. "
            "Pass metadata as a dict, e.g. {'metadata': {'user': 'u1'}}.",
            field="metadata",
            value=metadata,
        )
    tags = out.get("tags")
    if tags is not None and not _is_str_list(tags):
        raise InvalidConfigError(
            f"Invalid config['tags']: expected a list of str, got {type(tags).__name__} {tags!r:.60}. "
            "Pass tags as a list, e.g. {'tags': ['nightly']}.",
            field="tags",
            value=tags,
        )
    return out


def without_thread(config: Mapping[str, object]) -> dict[str, object]:
    """Copy ``config`` without its ``configurable`` part (a subgraph run that keeps no thread)."""
    return {k: v for k, v in config.items() if k != _CONFIGURABLE}


def config_with(config: Mapping[str, object] | None, **configurable: object) -> dict[str, Any]:
    """Copy ``config`` with extra ``configurable`` entries (used for subgraph and node configs)."""
    out = dict(config or {})
    out[_CONFIGURABLE] = {**configurable_of(out), **configurable}
    return out


def found(saved: CheckpointTuple | None, thread: ThreadRef) -> CheckpointTuple | None:
    """``saved``, unless the config named a checkpoint that is not there.

    Raises:
        CheckpointNotFoundError: ``thread.checkpoint_id`` names a missing checkpoint.
    """
    if saved is None and thread.checkpoint_id is not None:
        raise CheckpointNotFoundError(thread.thread_id, thread.checkpoint_id)
    return saved
