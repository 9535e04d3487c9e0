"""LangGraph's private config helpers (``langgraph._internal._config``), for code that imports them.

Merging, patching and callback managers are langchain-core's; the rest reads plait's namespaces.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import (
    ensure_config,
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
    merge_configs,
    patch_config,
)

from plait._internal._constants import CONF, NS_END, NS_SEP

__all__ = [
    "ensure_config",
    "get_async_callback_manager_for_config",
    "get_callback_manager_for_config",
    "merge_configs",
    "patch_config",
    "patch_configurable",
    "recast_checkpoint_ns",
]


def recast_checkpoint_ns(ns: str) -> str:
    """``ns`` without its task ids (``parent:id|child:id`` -> ``parent|child``) and call counters."""
    return NS_SEP.join(part.split(NS_END)[0] for part in ns.split(NS_SEP) if not part.isdigit())


def patch_configurable(config: RunnableConfig | None, patch: dict[str, Any]) -> RunnableConfig:
    """A copy of ``config`` whose ``configurable`` has ``patch``'s keys on top."""
    if config is None:
        return {CONF: patch}
    return {**config, CONF: {**(config.get(CONF) or {}), **patch}}
