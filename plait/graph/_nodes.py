"""``CompiledStateGraph.nodes``: a read-only view of each node's runnable, callable on its own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda, RunnablePassthrough

from plait.constants import START
from plait.graph._spec import NodeDef

__all__ = ["CompiledNode", "node_views"]


@dataclass(frozen=True, slots=True)
class CompiledNode:
    """One node of a compiled graph.

    Calling it runs the node's action alone, outside any graph run (no channels are read or
    written): ``graph.nodes["tools"].invoke({"messages": [...]})``.

    Attributes:
        name: The node name.
        bound: The node's action as a runnable (a plain function is wrapped in ``RunnableLambda``).
        metadata: The metadata given to ``add_node``.
    """

    name: str
    bound: Runnable[Any, Any]
    metadata: Mapping[str, object] = field(default_factory=dict[str, object])

    def invoke(self, input: object, config: RunnableConfig | None = None, **kwargs: object) -> Any:  # noqa: A002
        """Run the action on ``input``."""
        return self.bound.invoke(input, config, **kwargs)

    async def ainvoke(self, input: object, config: RunnableConfig | None = None, **kwargs: object) -> Any:  # noqa: A002
        """Run the action on ``input`` (async)."""
        return await self.bound.ainvoke(input, config, **kwargs)

    def copy(self, update: Mapping[str, Any] | None = None) -> CompiledNode:
        """A copy with the fields in ``update`` replaced (``name``, ``bound``, ``metadata``).

        Raises:
            TypeError: ``update`` names a field a node does not have.
        """
        unknown = set(update or {}) - {"name", "bound", "metadata"}
        if unknown:
            raise TypeError(
                f"CompiledNode.copy(): unknown field(s) {sorted(unknown)}; a node has name, bound, metadata"
            )
        return replace(self, **dict(update or {}))


def _runnable(name: str, action: Any) -> Runnable[Any, Any]:
    if isinstance(action, Runnable):
        return cast("Runnable[Any, Any]", action)  # type: ignore[redundant-cast]  # pyright needs it (isinstance leaves the type arguments unknown)
    invoke = getattr(action, "invoke", None)
    if callable(invoke) and not callable(getattr(action, "func", None)):  # a node object (invoke/ainvoke)
        return RunnableLambda(invoke, afunc=getattr(action, "ainvoke", None), name=name)
    return RunnableLambda(action, name=name)


def node_views(nodes: Mapping[str, NodeDef]) -> dict[str, CompiledNode]:
    """``{"__start__": ..., name: CompiledNode}`` for the builder's ``NodeDef`` mapping."""
    out: dict[str, CompiledNode] = {START: CompiledNode(START, RunnablePassthrough())}
    for name, node in nodes.items():
        out[name] = CompiledNode(name, _runnable(name, node.action), dict(node.metadata or {}))
    return out
