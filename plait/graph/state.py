"""``StateGraph``: describe a graph of nodes over a shared state, then compile it."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any, Generic, cast

from langchain_core.runnables import Runnable, RunnableConfig
from typing_extensions import Self

from plait._schema import FieldSpec, fields_of, is_schema
from plait.checkpoint._allow import allow, classes_in
from plait.constants import END, START
from plait.errors import GraphBuildError
from plait.graph._branch import BranchDef, make_branch, node_destinations
from plait.graph._compile import build_plan, field_channel
from plait.graph._defaults import DEFAULT_ERROR_HANDLER, NodeDefaults, handler_name
from plait.graph._draw import DrawableGraph, draw_builder
from plait.graph._fields import finish_plan
from plait.graph._nodes import CompiledNode, node_views
from plait.graph._runnable import GraphRunnable
from plait.graph._spec import NodeDef
from plait.graph._stream_events import StreamEvents
from plait.pregel._plan import Plan
from plait.pregel._pregel import Pregel
from plait.stream._run import factories_of
from plait.types import All, CachePolicy, RetryPolicy, TimeoutPolicy, TracePolicy, retry_policies
from plait.typing import ContextT, InputT, OutputT, StateT

__all__ = ["CompiledStateGraph", "StateGraph"]


def _name_of(action: object) -> str:
    name = getattr(action, "name", None)
    if isinstance(name, str) and name:
        return name
    name = getattr(action, "__name__", None)
    if isinstance(name, str) and name:
        return name
    if callable(action):  # a callable object: named after its class, as in LangGraph
        return type(action).__name__
    raise GraphBuildError(f"Cannot infer a node name from {action!r}; pass it: add_node('name', fn)")


def _schema_hints(action: object) -> tuple[type | None, type | None]:
    """The input and return schema annotated on a node function, if any."""
    fn: Callable[..., object] | None = action if callable(action) and not isinstance(action, type) else None
    if fn is None or isinstance(fn, Pregel):
        return None, None
    call = getattr(fn, "__call__", None)  # noqa: B004 - a callable object: read its __call__
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)) and inspect.ismethod(call):
        fn = call
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - unresolvable annotations simply mean "no schema"
        hints = getattr(fn, "__annotations__", {}) or {}
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    first = hints.get(params[0].name) if params else None
    ret = hints.get("return")
    return (first if is_schema(first) else None), (ret if is_schema(ret) else None)


class StateGraph(Generic[StateT, ContextT, InputT, OutputT]):
    """A graph whose nodes read a shared state and return partial updates.

    Args:
        state_schema: TypedDict, dataclass or pydantic model describing the state.
            ``Annotated[T, reducer]`` fields merge updates with ``reducer(old, new)``.
        context_schema: Type of the run-scoped ``context`` passed to invoke.
        input_schema: Keys accepted as graph input (default: ``state_schema``).
        output_schema: Keys returned by invoke (default: ``state_schema``).

    Raises:
        ValueError: a schema is invalid or declares a reducer that cannot take ``(old, new)``.
    """

    def __init__(
        self,
        state_schema: type[StateT] | None = None,
        context_schema: type[ContextT] | None = None,
        *,
        input_schema: type[InputT] | None = None,
        output_schema: type[OutputT] | None = None,
        **kwargs: Any,
    ) -> None:
        context_schema = context_schema or kwargs.pop("config_schema", None)
        input_schema = input_schema or kwargs.pop("input", None)
        output_schema = output_schema or kwargs.pop("output", None)
        if kwargs:
            raise TypeError(f"StateGraph() got unexpected keyword arguments: {sorted(kwargs)}")
        state: type[object] | None = state_schema or input_schema
        if state is None or (state_schema is None and output_schema is None):
            raise GraphBuildError("StateGraph needs a state_schema (or both input_schema and output_schema)")
        self.state_schema: type[object] = state
        self.context_schema: type[object] | None = context_schema
        self.input_schema: type[object] = input_schema or state
        self.output_schema: type[object] = output_schema or state
        self.schema_fields: dict[type, tuple[FieldSpec, ...]] = {}
        """Each schema's fields as plait reads them (:attr:`schemas` is LangGraph's view of them)."""
        self.channels: dict[str, FieldSpec] = {}
        self.managed: dict[str, object] = {}
        """Managed value keys (``RemainingSteps``…) and their class: filled in per task, never stored."""
        self.nodes: dict[str, NodeDef] = {}
        self.edges: set[tuple[str, str]] = set()
        self.waiting_edges: set[tuple[tuple[str, ...], str]] = set()
        self.branches: dict[str, dict[str, BranchDef]] = {}
        self.node_defaults = NodeDefaults()
        """Policies for nodes that do not set their own (:meth:`set_node_defaults`)."""
        for schema in (state, self.input_schema, self.output_schema):
            self._add_schema(schema)

    def _allow_schema_classes(self) -> None:
        """Let checkpoints store the classes the graph's own schemas name (a dataclass in a list field…)."""
        hints: list[object] = [s.annotation for specs in self.schema_fields.values() for s in specs]
        if self.context_schema is not None:
            hints.append(self.context_schema)
        classes = classes_in(*hints)
        if classes:
            allow(*classes)

    @property
    def schemas(self) -> dict[type, dict[str, object]]:
        """LangGraph's view of the schemas: each one's keys mapped to their channel (or managed value)."""
        return {
            schema: {s.name: field_channel(s) for s in specs} for schema, specs in self.schema_fields.items()
        }

    def _add_schema(self, schema: type) -> None:
        if schema in self.schema_fields:
            return
        specs = fields_of(schema)
        self.schema_fields[schema] = specs
        for spec in specs:
            if spec.managed is not None:
                self.managed[spec.name] = spec.managed
                continue
            known = self.channels.get(spec.name)
            plain = known is not None and known.reducer is None and known.channel is None
            if known is None or (plain and (spec.reducer is not None or spec.channel is not None)):
                self.channels[spec.name] = spec

    # -- nodes ----------------------------------------------------------------

    def add_node(  # noqa: PLR0913 - LangGraph's API
        self,
        node: str | Any,
        action: Any = None,
        *,
        metadata: Mapping[str, object] | None = None,
        input_schema: type | None = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        destinations: dict[str, str] | tuple[str, ...] | None = None,
        cache_policy: CachePolicy[Callable[..., str | bytes]] | None = None,
        defer: bool = False,
        error_handler: Any = None,
        trace_policy: TracePolicy | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
        **kwargs: Any,
    ) -> Self:
        """Add a node: ``add_node("name", fn)`` or ``add_node(fn)`` (named after ``fn``).

        ``error_handler`` runs, in the same step, when the node fails for good (its retries
        spent): it gets the node's input (and ``error: NodeError`` if it asks for it), and what it
        returns (an update, a ``Command``) replaces the node's result. It is the node
        ``__error_handler__<name>``. Interrupts and parent commands pass it by.

        ``timeout`` (seconds, a ``timedelta`` or a :class:`~plait.types.TimeoutPolicy`) limits each
        attempt of an async node: past it the attempt is cancelled and raises
        :class:`~plait.errors.NodeTimeoutError`, which ``retry_policy`` may retry. ``compile()``
        rejects a timeout on a sync node, which cannot be cancelled.

        Raises:
            ValueError: the name is reserved, contains ``:`` or is already taken; a bad ``timeout``.
        """
        if not isinstance(node, str):
            action, node = node, _name_of(node)
        if action is None:
            raise GraphBuildError(f"Node {node!r} needs an action: add_node({node!r}, fn)")
        if node in (START, END):
            raise GraphBuildError(f"Node `{node}` is reserved.")
        if ":" in node:
            raise GraphBuildError("':' is a reserved character and is not allowed in the node names.")
        if node in self.nodes:
            raise GraphBuildError(f"Node `{node}` already present.")
        hinted_in, hinted_out = _schema_hints(action)
        schema = input_schema or kwargs.pop("input", None) or hinted_in
        if kwargs:
            raise TypeError(f"add_node() got unexpected keyword argument(s) {sorted(kwargs)}")
        for extra in (schema, hinted_out):
            if extra is not None:
                self._add_schema(extra)
        handler: str | None = None
        if error_handler is not None:
            handler = handler_name(node)
            if handler in self.nodes:
                raise GraphBuildError(f"Auto-generated error handler node `{handler}` already exists.")
            self.nodes[handler] = NodeDef(error_handler, schema, is_error_handler=True)
        self.nodes[node] = NodeDef(
            action,
            schema,
            retry_policies(retry_policy),
            dict(metadata or {}),
            node_destinations(action, destinations),
            cache_policy,
            defer,
            handler,
            trace_policy=trace_policy,
            timeout=TimeoutPolicy.coerce(timeout),
        )
        return self

    def set_node_defaults(
        self,
        *,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache_policy: CachePolicy[Callable[..., str | bytes]] | None = None,
        error_handler: Any = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
    ) -> Self:
        """Policies for the nodes that do not set their own in ``add_node``; applied by ``compile()``.

        Args:
            retry_policy: For every node, error handlers included.
            cache_policy: For regular nodes (a handler's result is never cached).
            error_handler: Runs when a regular node without its own handler fails (as the node
                ``__default_error_handler__``); a failing handler fails the run.
            timeout: For every node, error handlers included (see ``add_node``).

        Subgraphs do not inherit these defaults. Arguments left ``None`` keep earlier values.
        """
        defaults = self.node_defaults
        if retry_policy is not None:
            defaults.retry_policy = retry_policies(retry_policy)
        if cache_policy is not None:
            defaults.cache_policy = cache_policy
        if error_handler is not None:
            defaults.error_handler = error_handler
        if timeout is not None:
            defaults.timeout = TimeoutPolicy.coerce(timeout)
        return self

    def _add_default_handler(self) -> None:
        """The node of ``set_node_defaults(error_handler=...)``, added when the graph compiles.

        Raises:
            ValueError: a node of the graph already has its name.
        """
        handler = self.node_defaults.error_handler
        if handler is None:
            return
        taken = self.nodes.get(DEFAULT_ERROR_HANDLER)
        if taken is not None and not taken.is_error_handler:
            raise GraphBuildError(
                f"Auto-generated default error handler node `{DEFAULT_ERROR_HANDLER}` already exists."
            )
        self.nodes[DEFAULT_ERROR_HANDLER] = NodeDef(handler, is_error_handler=True)

    def add_sequence(self, nodes: Sequence[object]) -> Self:
        """Add nodes (callables or ``(name, callable)`` pairs) chained by edges, in order."""
        if not nodes:
            raise GraphBuildError("add_sequence needs at least one node")
        previous: str | None = None
        for item in nodes:
            # a (name, callable) pair; isinstance() alone narrows it to tuple[Unknown, ...]
            name, action = (
                cast("tuple[str, object]", item) if isinstance(item, tuple) else (_name_of(item), item)
            )
            self.add_node(name, action)
            if previous is not None:
                self.add_edge(previous, name)
            previous = name
        return self

    # -- edges ----------------------------------------------------------------

    def add_edge(self, start_key: str | Sequence[str], end_key: str) -> Self:
        """Run ``end_key`` after ``start_key``; with a list, after all of them have run.

        Raises:
            ValueError: END used as a start, or START as an end.
        """
        if isinstance(start_key, str):
            if start_key == END:
                raise GraphBuildError("END cannot be a start node")
            if end_key == START:
                raise GraphBuildError("START cannot be an end node")
            self.edges.add((start_key, end_key))
            return self
        sources = tuple(start_key)
        if END in sources:
            raise GraphBuildError("END cannot be a start node")
        if end_key == START:
            raise GraphBuildError("START cannot be an end node")
        self.waiting_edges.add((sources, end_key))
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: Callable[..., object],
        path_map: dict[Hashable, str] | list[str] | None = None,
    ) -> Self:
        """After ``source``, call ``path(state)`` to choose the next node(s).

        Args:
            source: The node the edge leaves from (or START).
            path: Returns a node name, a list of names, ``Send`` objects or END.
            path_map: Maps ``path``'s return values to node names (a list maps names to themselves).
                Without one, a ``Literal[...]`` return annotation of ``path`` lists the targets.

        Raises:
            ValueError: a branch with the same name already leaves ``source``.
        """
        branch = make_branch(path, path_map)
        name = branch.name
        if name in self.branches.get(source, {}):
            raise GraphBuildError(f"Branch with name `{name}` already exists for node `{source}`")
        schema, _ = _schema_hints(path)
        if schema is not None:  # the router reads the keys of the schema it annotates
            if schema is not self.state_schema:
                self._add_schema(schema)
            branch = replace(branch, input_schema=schema)
        self.branches.setdefault(source, {})[name] = branch
        return self

    def set_entry_point(self, key: str) -> Self:
        """Start runs at ``key`` (same as ``add_edge(START, key)``)."""
        return self.add_edge(START, key)

    def set_conditional_entry_point(
        self, path: Callable[..., object], path_map: dict[Hashable, str] | list[str] | None = None
    ) -> Self:
        """Choose the first node with ``path`` (same as ``add_conditional_edges(START, ...)``)."""
        return self.add_conditional_edges(START, path, path_map)

    def set_finish_point(self, key: str) -> Self:
        """Finish runs after ``key`` (same as ``add_edge(key, END)``)."""
        return self.add_edge(key, END)

    # -- compile --------------------------------------------------------------

    def compile(  # noqa: PLR0913 - LangGraph's API
        self,
        checkpointer: object = None,
        *,
        cache: object = None,
        store: object = None,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        debug: bool = False,
        name: str | None = None,
        strict: bool | None = None,
        transformers: Sequence[Callable[[tuple[str, ...]], object]] | None = None,
    ) -> CompiledStateGraph[StateT, ContextT, InputT, OutputT]:
        """Validate the graph and freeze it into a runnable :class:`CompiledStateGraph`.

        Args:
            checkpointer: Saver that makes threads durable (``None``: no memory between runs).
            cache: Where nodes added with a ``cache_policy`` keep their results
                (:class:`~plait.cache.memory.InMemoryCache`, :class:`~plait.cache.sqlite.SqliteCache`).
            store: Long-term store handed to nodes as ``store``.
            interrupt_before: Nodes (or ``"*"``) to pause before.
            interrupt_after: Nodes (or ``"*"``) to pause after.
            debug: Accepted for compatibility.
            name: Name of the graph.
            strict: Turn silent failures into errors (default: env ``PLAIT_STRICT=1``).
            transformers: Stream transformer classes (or ``factory(scope)`` callables) added to every
                ``stream_events(version="v3")`` run of the graph (see :mod:`plait.stream`).

        Raises:
            ValueError: the graph has no entry point, an edge names an unknown node, …
        """
        self._add_default_handler()
        plan = finish_plan(self, build_plan(self, interrupt_before, interrupt_after, strict))
        self._allow_schema_classes()
        if cache is not None:
            plan = replace(plan, cache=cache)
        compiled = CompiledStateGraph(
            self,
            plan,
            checkpointer=checkpointer,
            store=store,
            name=name or "LangGraph",
            debug=debug,
            stream_mode="updates",
        )
        compiled.stream_transformers = tuple(factories_of(transformers))
        return compiled


# GraphRunnable's with_config/copy return the graph itself (a Runnable); Pregel's name is always a str
class CompiledStateGraph(  # type: ignore[misc]  # pyright: ignore[reportIncompatibleMethodOverride]
    StreamEvents,
    GraphRunnable[StateT, ContextT, InputT, OutputT],
    Pregel[StateT, ContextT, InputT, OutputT],
    Runnable[Any, Any],
):
    """A compiled :class:`StateGraph`: run it with ``invoke`` / ``stream``, inspect its threads.

    It is a LangChain ``Runnable``: ``with_config``, ``graph | runnable``, callbacks and
    ``astream_events`` work as for any runnable (see :mod:`plait.graph._runnable`).
    """

    def __init__(
        self, builder: StateGraph[StateT, ContextT, InputT, OutputT], plan: Plan, **kwargs: Any
    ) -> None:
        super().__init__(plan, **kwargs)
        self.builder = builder

    @property
    def nodes(self) -> dict[str, CompiledNode]:
        """Each node (and ``__start__``) by name; ``nodes[name].invoke(input)`` runs one alone."""
        return node_views(self.builder.nodes)

    @property
    def context_schema(self) -> type[Any] | None:
        """The ``context_schema`` the graph was built with."""
        schema: type[Any] | None = self.builder.context_schema
        return schema

    def get_graph(self, config: RunnableConfig | None = None, *, xray: int | bool = False) -> DrawableGraph:
        """The graph as a langchain-core ``Graph`` (``draw_mermaid()``, ``draw_ascii()``, ``to_json()``)."""
        interrupts = (self.plan.interrupt_before, self.plan.interrupt_after)
        return draw_builder(self.builder, {k: v.bound for k, v in self.nodes.items()}, interrupts, xray)
