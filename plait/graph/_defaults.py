"""Node policies a graph applies to every node (``StateGraph.set_node_defaults``) and error handler names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from plait.types import CachePolicy, RetryPolicies, TimeoutPolicy

__all__ = ["DEFAULT_ERROR_HANDLER", "NodeDefaults", "handler_name"]

DEFAULT_ERROR_HANDLER = "__default_error_handler__"
"""Name of the node that runs ``set_node_defaults(error_handler=...)``."""


def handler_name(node: str) -> str:
    """Name of the node that runs ``add_node(node, ..., error_handler=...)``."""
    return f"__error_handler__{node}"


@dataclass(slots=True)
class NodeDefaults:
    """What nodes get when ``add_node`` did not set it; applied when the graph compiles.

    Attributes:
        retry_policy: For every node, error handlers included.
        cache_policy: For regular nodes (a handler's result is never cached).
        error_handler: Runs when a regular node without its own handler fails (never for handlers).
        timeout: For every node, error handlers included.
    """

    retry_policy: RetryPolicies | None = None
    cache_policy: CachePolicy[Callable[..., str | bytes]] | None = None
    error_handler: object = None
    timeout: TimeoutPolicy | None = None

    def policies(
        self,
        retry: RetryPolicies | None,
        cache: CachePolicy[Callable[..., str | bytes]] | None,
        handler: str | None,
        *,
        is_handler: bool,
    ) -> tuple[RetryPolicies | None, CachePolicy[Callable[..., str | bytes]] | None, str | None]:
        """A node's ``(retry policy, cache policy, error handler node)`` once these defaults apply."""
        if is_handler:
            return retry or self.retry_policy, cache, None
        if handler is None and self.error_handler is not None:
            handler = DEFAULT_ERROR_HANDLER
        return retry or self.retry_policy, cache or self.cache_policy, handler
