"""The compiled plan: frozen data the superstep loop reads and never changes.

``compile()`` turns a builder into one :class:`Plan`. Everything a step needs
(which keys a node reads, how it is called, where control goes after it) is
computed here once, so that the loop does no reflection at run time and one
plan can be shared by any number of concurrent runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from plait.channels.base import BaseChannel
from plait.channels.last_value import LastValue
from plait.constants import START
from plait.types import CachePolicy, RetryPolicies, TimeoutPolicy

if TYPE_CHECKING:
    from plait.pregel._builder import PregelNode

__all__ = ["Branch", "FastNode", "FastTables", "Join", "NodeSpec", "Plan"]


# the dataclasses' default factories are the builtins; typed here with their element types
if TYPE_CHECKING:

    def _metadata() -> dict[str, object]: ...
    def _triggers() -> dict[str, tuple[str, ...]]: ...

else:
    _metadata = _triggers = dict


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node, ready to call.

    Attributes:
        name: The node name.
        call: ``call(input, context) -> result``; awaitable when ``is_async``.
        is_async: Whether ``call`` returns an awaitable.
        acall: The async form the async driver prefers (subgraphs, runnables), if any.
        reads: The state keys the node receives.
        defaults: ``(key, value)`` pairs a node sees while the key is unset.
        make_input: Turns the dict of read values into what the node receives
            (identity for TypedDict, the class for dataclass / pydantic).
        retry: Retry policy, if any.
        is_subgraph: The node is a compiled graph.
    """

    name: str
    call: Callable[[Any, Any], Any]
    is_async: bool
    reads: tuple[str, ...]
    acall: Callable[[Any, Any], Awaitable[Any]] | None = None
    defaults: tuple[tuple[str, object], ...] = ()
    make_input: Callable[[dict[str, object]], Any] | None = None
    retry: RetryPolicies | None = None
    is_subgraph: bool = False
    subgraph: Any = None
    """The compiled graph, when the node is one (``get_state(subgraphs=True)``, ``get_subgraphs``)."""
    # the factory is cast once, here, to its element types (it stays the builtin dict)
    metadata: Mapping[str, object] = field(default_factory=_metadata)
    managed: tuple[tuple[str, object], ...] = ()
    """``(key, ManagedValue class)`` pairs filled in for each task (``RemainingSteps``…)."""
    cache_policy: CachePolicy[Any] | None = None
    """Cache the node's writes, keyed on its input (used when the plan has a ``cache``)."""
    cache_ns: tuple[str, ...] = ()
    """The cache namespace of the node's entries."""
    error_handler: str | None = None
    """The node that runs, in the same step, when this one fails for good (``add_node(error_handler=)``)."""
    triggers: tuple[str, ...] = ()
    """The channels LangGraph would say start the node (``branch:to:<name>``, its join barriers),
    as the ``tasks`` stream and task metadata name them; empty: the node's name."""
    timeout: TimeoutPolicy | None = None
    """Limits on each attempt (async nodes only; :mod:`plait.pregel._timeout`)."""
    channel_node: PregelNode | None = None
    """A channel graph's node as :class:`~plait.pregel.NodeBuilder` built it (``update_state``
    applies values through its writers)."""
    plain: Callable[[Any], Any] | None = None
    """The node's function, when ``call`` only calls it with the state (no config, store or
    runtime parameters, nothing wrapped around it but tracing): the fast path calls it directly."""


@dataclass(frozen=True, slots=True)
class Branch:
    """A conditional edge.

    Attributes:
        source: The node it leaves from.
        path: ``path(state[, config])`` returning node name(s) or ``Send`` objects.
        takes_config: Whether ``path`` accepts the run config as second argument.
        path_map: Maps ``path``'s return values to node names, or ``None``.
        ends: Every node the branch may lead to (for validation and drawing).
        reads: The keys ``path`` receives when it declares a state schema of its own, else ``None``
            (it receives the graph's state).
        make_input: Turns those keys into what ``path`` receives (the schema's class), if needed.
        managed: That schema's managed values (``RemainingSteps``…), filled in for ``path``.
        extras: The parameters ``path`` declares that receive ``store``, ``writer``, ``runtime`` (or
            ``config``) by keyword, as LangGraph injects them; empty for most routers.
    """

    source: str
    path: Callable[..., Any]
    takes_config: bool
    path_map: Mapping[Any, str] | None
    ends: tuple[str, ...]
    reads: tuple[str, ...] | None = None
    make_input: Callable[[dict[str, object]], Any] | None = None
    managed: tuple[tuple[str, object], ...] = ()
    extras: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Join:
    """``add_edge([a, b], c)``: ``target`` runs once every source has finished.

    Attributes:
        key: Identifies this barrier in checkpoints.
        sources: The nodes to wait for.
        target: The node to run.
    """

    key: str
    sources: frozenset[str]
    target: str


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything the runtime needs to execute a graph.

    Attributes:
        channels: One channel per state key.
        nodes: The nodes by name.
        edges: Static successors of each node (``START`` included).
        branches: Conditional edges of each node.
        joins: The join barriers each node takes part in.
        input_keys: Keys accepted from the graph input.
        output_keys: Keys returned by ``invoke``.
        state_keys: Keys of the main state schema (``get_state`` values are all channels).
        interrupt_before: Nodes to pause before (``"*"``: all).
        interrupt_after: Nodes to pause after.
        defaults: Defaults of unset overwrite keys, for the whole state.
        strict: Turn silent failures into errors.
        input_make: Turns a state object given as input into a dict (dataclass / pydantic).
        state_make: Turns a dict of values into the state object (dataclass / pydantic).
    """

    channels: Mapping[str, BaseChannel]
    nodes: Mapping[str, NodeSpec]
    edges: Mapping[str, tuple[str, ...]]
    branches: Mapping[str, tuple[Branch, ...]]
    joins: Mapping[str, tuple[Join, ...]]
    input_keys: tuple[str, ...]
    output_keys: tuple[str, ...]
    state_keys: tuple[str, ...]
    interrupt_before: frozenset[str] = frozenset()
    interrupt_after: frozenset[str] = frozenset()
    defaults: tuple[tuple[str, object], ...] = ()
    strict: bool = False
    input_make: Callable[[Any], dict[str, object]] | None = None
    state_make: Callable[[dict[str, object]], Any] | None = None
    output_make: Callable[[dict[str, object]], Any] | None = None
    """Turns the output dict into the output schema's class (dataclass / pydantic): what
    ``version="v2"`` outputs and ``values`` stream parts carry, as LangGraph's do."""
    cache: Any = None
    """The ``BaseCache`` of nodes with a ``cache_policy`` (``compile(cache=)``), or ``None``."""
    root: bool = False
    """The state is one value (key ``__root__``): input, output and node results are that value."""
    deferred: frozenset[str] = frozenset()
    """Nodes added with ``defer=True``: they run once nothing else is left to run."""
    managed: tuple[tuple[str, object], ...] = ()
    """The state schema's managed values (``RemainingSteps``…), filled into what conditional edges receive."""
    volatile: tuple[str, ...] = field(init=False, default=())
    """Keys a step that does not write them still changes (``EphemeralValue``, ``Topic``)."""
    triggers: Mapping[str, tuple[str, ...]] = field(default_factory=_triggers)
    """A channel graph's (``Pregel(nodes=..., channels=...)``): the nodes a write of each key starts
    in the next step; its nodes have no edges."""
    input_channel: str | None = None
    """A channel graph's single input channel: the input is its value (not a dict of keys)."""
    output_channel: str | None = None
    """A channel graph's single output channel: the output is its value (not a dict of keys)."""
    untracked: frozenset[str] = field(init=False, default=frozenset())
    """Keys never saved in checkpoints (``UntrackedValue``)."""
    fast: FastTables | None = field(init=False, default=None, compare=False, repr=False)
    """The fast path's tables (:mod:`plait.pregel._fast`), when every node and edge allows it."""

    def __post_init__(self) -> None:
        channels = self.channels.items()
        object.__setattr__(self, "volatile", tuple(k for k, c in channels if c.volatile))
        object.__setattr__(self, "untracked", frozenset(k for k, c in channels if not c.tracked))
        object.__setattr__(self, "fast", _fast_tables(self))


@dataclass(frozen=True, slots=True)
class FastNode:
    """A node as the fast path runs it: its function, what it reads, where control goes after it.

    Attributes:
        fn: The node's function (``NodeSpec.plain``).
        reads: The state keys it receives (``NodeSpec.reads``).
        spec: The node.
        shaped: Its input needs defaults or a state class (``NodeSpec.make_input``/``defaults``).
        after: Its static successors in step order (its routers' answers join them).
        branches: Its conditional edges (routed after its writes merge).
    """

    fn: Callable[[Any], Any]
    reads: tuple[str, ...]
    spec: NodeSpec
    shaped: bool
    after: tuple[str, ...]
    branches: tuple[Branch, ...]


@dataclass(frozen=True, slots=True)
class FastTables:
    """A plan the fast path can run: plain sync nodes, static and plain conditional edges, no joins.

    Attributes:
        nodes: The nodes by name.
        start: ``START``'s static successors in step order.
        start_branches: ``START``'s conditional edges.
        initial: The channels that may hold a value before any write (``BaseChannel.initial``).
        plain: The keys whose channel keeps the last value written (``LastValue``).
        plain_state: Routers get the state as the dict of its keys that are set (no defaults,
            state class or managed values to add).
    """

    nodes: Mapping[str, FastNode]
    start: tuple[str, ...]
    start_branches: tuple[Branch, ...]
    initial: tuple[tuple[str, BaseChannel], ...]
    plain: frozenset[str]
    plain_state: bool


def _fast_tables(plan: Plan) -> FastTables | None:
    """The fast path's tables of ``plan``, or ``None`` when something in it needs the full loop."""
    if (
        plan.triggers
        or plan.input_channel is not None
        or plan.output_channel is not None
        or plan.root
        or plan.strict
        or plan.deferred
        or plan.managed
        or plan.interrupt_before
        or plan.interrupt_after
        or plan.volatile
        or plan.untracked
        or any(plan.joins.values())
    ):
        return None
    branches = [b for bs in plan.branches.values() for b in bs]
    if any(b.takes_config or b.extras or b.reads is not None or b.managed for b in branches):
        return None
    nodes: dict[str, FastNode] = {}
    for name, node in plan.nodes.items():
        if (
            node.plain is None
            or node.is_async
            or node.retry
            or node.cache_policy is not None
            or node.error_handler is not None
            or node.timeout is not None
            or node.is_subgraph
            or node.subgraph is not None
            or node.managed
        ):
            return None
        shaped = node.make_input is not None or bool(node.defaults)
        nodes[name] = FastNode(
            node.plain, node.reads, node, shaped, _after(plan, name), plan.branches.get(name, ())
        )
    initial = tuple((k, c) for k, c in plan.channels.items() if type(c).initial is not BaseChannel.initial)
    plain = frozenset(k for k, c in plan.channels.items() if type(c) is LastValue)
    plain_state = not plan.defaults and plan.state_make is None
    return FastTables(nodes, _after(plan, START), plan.branches.get(START, ()), initial, plain, plain_state)


def _after(plan: Plan, name: str) -> tuple[str, ...]:
    targets = plan.edges.get(name, ())
    return tuple(sorted(set(targets))) if len(targets) > 1 else tuple(targets)
