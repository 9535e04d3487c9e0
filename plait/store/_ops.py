"""Records used by long-term stores: items, operations, configuration and the namespace checks.

A store executes a batch of immutable operations and answers with items.
Names, field order and defaults follow ``langgraph.store.base`` so code that
builds operations or items by hand keeps working. Everything here is
re-exported from :mod:`plait.store.base`; import it from there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal, NamedTuple, cast

from typing_extensions import TypedDict

__all__ = [
    "NOT_PROVIDED",
    "GetOp",
    "IndexConfig",
    "InvalidNamespaceError",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NamespaceMatchType",
    "NamespacePath",
    "NotProvided",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "TTLConfig",
    "check_writable",
    "list_op",
    "validate_op_namespace",
]


def _as_datetime(value: datetime | str) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


class Item:
    """A stored value together with its address and timestamps.

    Attributes:
        value: The stored dict. Its top-level keys can be filtered on.
        key: Identifier of the item inside its namespace.
        namespace: The item's namespace, as a tuple of labels.
        created_at: When the item was first put.
        updated_at: When the item was last put.
    """

    __slots__ = ("created_at", "key", "namespace", "updated_at", "value")

    def __init__(
        self,
        *,
        value: dict[str, Any],
        key: str,
        namespace: tuple[str, ...],
        created_at: datetime | str,
        updated_at: datetime | str,
    ) -> None:
        """Create an item; ISO-8601 strings are accepted for the timestamps.

        Args:
            value: The stored dict.
            key: Identifier inside the namespace.
            namespace: The namespace labels (any sequence; kept as a tuple).
            created_at: Creation time.
            updated_at: Last update time.
        """
        self.value = value
        self.key = key
        self.namespace = tuple(namespace)
        self.created_at = _as_datetime(created_at)
        self.updated_at = _as_datetime(updated_at)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Item):
            return NotImplemented
        return (self.namespace, self.key, self.value, self.created_at, self.updated_at) == (
            other.namespace,
            other.key,
            other.value,
            other.created_at,
            other.updated_at,
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.key))

    def dict(self) -> dict[str, Any]:
        """Return a JSON-friendly dict: namespace as a list, ISO timestamps.

        Returns:
            The keys ``namespace``, ``key``, ``value``, ``created_at`` and
            ``updated_at``.
        """
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={val!r}" for name, val in self.dict().items())
        return f"{type(self).__name__}({fields})"


class SearchItem(Item):
    """An :class:`Item` returned by a search, with its relevance score.

    Attributes:
        score: Similarity to the query, or ``None`` when nothing was ranked.
    """

    __slots__ = ("score",)

    def __init__(  # noqa: PLR0913 - positional order kept for LangGraph compatibility
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime | str,
        updated_at: datetime | str,
        score: float | None = None,
    ) -> None:
        """Create a search hit.

        Args:
            namespace: The namespace labels.
            key: Identifier inside the namespace.
            value: The stored dict.
            created_at: Creation time.
            updated_at: Last update time.
            score: Relevance score, if the search was ranked.
        """
        super().__init__(
            value=value, key=key, namespace=namespace, created_at=created_at, updated_at=updated_at
        )
        self.score = score

    def dict(self) -> dict[str, Any]:
        """Return :meth:`Item.dict` plus the ``score``.

        Returns:
            A JSON-friendly dict describing the hit.
        """
        return {**super().dict(), "score": self.score}


Result = Item | list[Item] | list[SearchItem] | list[tuple[str, ...]] | None
"""What one operation yields: an item (or ``None``) or a list."""


class NotProvided:
    """Type of :data:`NOT_PROVIDED`, the "argument omitted" marker; it is falsy."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_PROVIDED = NotProvided()
"""Marks an omitted ``ttl`` argument, as distinct from an explicit ``None``."""

NamespacePath = tuple[str, ...]
"""A namespace pattern; the label ``"*"`` matches any single label."""

NamespaceMatchType = Literal["prefix", "suffix"]
"""Which end of a namespace a :class:`MatchCondition` is anchored to."""


class GetOp(NamedTuple):
    """Read one item by namespace and key.

    Attributes:
        namespace: The item's namespace, e.g. ``("users", "u1")``.
        key: The item's key inside that namespace.
        refresh_ttl: Restart the item's TTL clock when it is read.
    """

    namespace: tuple[str, ...]
    key: str
    refresh_ttl: bool = True


class SearchOp(NamedTuple):
    """List the items under a namespace prefix, optionally filtered.

    Attributes:
        namespace_prefix: Leading labels an item's namespace must start with;
            ``()`` searches the whole store.
        filter: Conditions on top-level value keys. A plain value means
            equality; a dict of operators (``$eq``, ``$ne``, ``$gt``, ``$gte``,
            ``$lt``, ``$lte``) compares.
        limit: Maximum number of items returned.
        offset: Number of matching items skipped first.
        query: Natural-language query for stores with a semantic index.
        refresh_ttl: Restart the TTL clock of each returned item.
    """

    namespace_prefix: tuple[str, ...]
    filter: dict[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    query: str | None = None
    refresh_ttl: bool = True


class MatchCondition(NamedTuple):
    """A namespace pattern anchored at its start (prefix) or end (suffix).

    Attributes:
        match_type: ``"prefix"`` or ``"suffix"``.
        path: Labels to match; ``"*"`` matches any one label.
    """

    match_type: NamespaceMatchType
    path: NamespacePath


class ListNamespacesOp(NamedTuple):
    """List the distinct namespaces that hold items.

    Attributes:
        match_conditions: Patterns every listed namespace must satisfy.
        max_depth: Truncate namespaces to this many labels (then deduplicate).
        limit: Maximum number of namespaces returned.
        offset: Number of namespaces skipped first (after sorting).
    """

    match_conditions: tuple[MatchCondition, ...] | None = None
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0


class PutOp(NamedTuple):
    """Create, replace or (with ``value=None``) delete one item.

    Attributes:
        namespace: The item's namespace.
        key: The item's key inside that namespace.
        value: The new value, or ``None`` to delete the item.
        index: Fields to embed for semantic search: ``None`` for the store's
            default, ``False`` for none, or a list of field paths.
        ttl: Minutes until the item expires, or ``None`` for never.
    """

    namespace: tuple[str, ...]
    key: str
    value: Mapping[str, Any] | None
    index: Literal[False] | list[str] | None = None  # type: ignore[assignment]  # LangGraph's field name; shadows tuple.index
    ttl: float | None = None


Op = GetOp | SearchOp | PutOp | ListNamespacesOp
"""Any operation a store can execute."""


class TTLConfig(TypedDict, total=False):
    """Time-to-live settings for a store.

    Attributes:
        refresh_on_read: Whether reads restart TTL clocks by default (``True``).
        omit_expired: Hide expired items from reads before they are swept.
        default_ttl: TTL in minutes for items put without an explicit ``ttl``.
        sweep_interval_minutes: How often a store with a background sweeper
            deletes expired items.
    """

    refresh_on_read: bool
    omit_expired: bool
    default_ttl: float | None
    sweep_interval_minutes: int | None


class IndexConfig(TypedDict, total=False):
    """Semantic-search settings for stores that embed their values.

    Attributes:
        dims: Length of the embedding vectors.
        embed: An embeddings object, an embedding function, or a model name.
        fields: Value paths to embed; ``["$"]`` embeds the whole value.
    """

    dims: int
    embed: object | Callable[[list[str]], list[list[float]]] | str
    fields: list[str] | None


# Present these records under their public home, so reprs and pickles name
# ``plait.store.base`` and survive this private module being reorganised.
for _record in (Item, SearchItem, GetOp, SearchOp, MatchCondition, ListNamespacesOp, PutOp, NotProvided):
    _record.__module__ = "plait.store.base"
del _record


_RESERVED_ROOT = "langgraph"


class InvalidNamespaceError(ValueError):
    """A namespace is empty, not a tuple, or has a bad label."""


_VALID: dict[object, None] = {}
"""Namespaces found valid lately (a store checks each operation's; most name the same few)."""


def _check_labels(namespace: Any) -> None:
    """Raise :class:`InvalidNamespaceError` unless every label is valid."""
    try:
        if namespace in _VALID:
            return
    except TypeError:  # unhashable: not a tuple of strings, said below
        pass
    if not isinstance(namespace, tuple):
        raise InvalidNamespaceError(
            f"Namespace must be a tuple of strings, got {type(namespace).__name__}: {namespace!r}."
        )
    for label in cast("tuple[object, ...]", namespace):  # a tuple (checked above) of unchecked labels
        if type(label) is str and label and "." not in label and "\x00" not in label:
            continue  # (the common case: no message to build)
        where = f"Invalid namespace label {label!r} found in {namespace!r}"
        if not isinstance(label, str):
            raise InvalidNamespaceError(f"{where}: labels must be strings, not {type(label).__name__}.")
        if not label:
            raise InvalidNamespaceError(f"{where}: labels cannot be empty strings.")
        if "." in label:
            raise InvalidNamespaceError(f"{where}: labels cannot contain periods ('.').")
        if "\x00" in label:
            raise InvalidNamespaceError(f"{where}: labels cannot contain NUL bytes ('\\x00').")
    if len(_VALID) >= 4096:
        _VALID.clear()
    _VALID[namespace] = None


def _pattern(path: Any) -> Any:
    """A namespace pattern as a tuple: a list, or a str (a sequence of one-character labels, as in LangGraph)."""
    return tuple(cast("list[str] | str", path)) if isinstance(path, (list, str)) else path


def check_writable(namespace: Any) -> None:
    """Validate a namespace that an item is written to."""
    _check_labels(namespace)
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    if namespace[0] == _RESERVED_ROOT:
        raise InvalidNamespaceError(
            f'Root label for namespace cannot be "{_RESERVED_ROOT}". Got: {namespace}'
        )


def validate_op_namespace(op: Op) -> None:
    """Check the namespace (or patterns) an operation carries.

    Stores call this for operations handed straight to ``batch``, which
    bypass the convenience methods' checks.

    Args:
        op: The operation to check.

    The reserved root ``"langgraph"`` is refused by :meth:`BaseStore.put` only:
    a ``PutOp`` handed to ``batch`` may write under it, as in LangGraph.

    Raises:
        InvalidNamespaceError: If a label is not a non-empty string free of
            ``.`` and NUL, or a put with a value targets the empty namespace.
    """
    if isinstance(op, PutOp):
        _check_labels(op.namespace)
        if op.value is not None and not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
    elif isinstance(op, GetOp):
        _check_labels(op.namespace)
    elif isinstance(op, SearchOp):
        _check_labels(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: batch() callers may pass anything
        for condition in op.match_conditions or ():
            _check_labels(_pattern(condition.path))


def list_op(
    prefix: NamespacePath | None, suffix: NamespacePath | None, max_depth: int | None, limit: int, offset: int
) -> ListNamespacesOp:
    """The operation of ``list_namespaces``, its patterns checked."""
    conditions: list[MatchCondition] = []
    anchors: tuple[tuple[NamespaceMatchType, NamespacePath | None], ...] = (
        ("prefix", prefix),
        ("suffix", suffix),
    )
    for kind, path in anchors:
        if path:
            path = _pattern(path)
            _check_labels(path)
            conditions.append(MatchCondition(kind, path))
    return ListNamespacesOp(tuple(conditions), max_depth, limit, offset)
