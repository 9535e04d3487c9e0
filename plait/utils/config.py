"""``langgraph.utils.config``: the config helpers older code imports from here."""

from plait._internal._config import ensure_config, patch_configurable
from plait.config import get_config, get_store

__all__ = ["ensure_config", "get_config", "get_store", "patch_configurable"]
