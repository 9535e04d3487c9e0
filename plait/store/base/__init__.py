"""The long-term store interface: items, operations and ``BaseStore``.

A store keeps JSON-like dict values under a hierarchical *namespace* (a tuple
of string labels such as ``("users", "u1", "memories")``) and a *key*. Unlike
checkpoints, store data outlives threads, so it suits user profiles and other
long-term memory. The API mirrors ``langgraph.store.base``.

Every store implements :meth:`BaseStore.batch` and :meth:`BaseStore.abatch`;
the convenience methods (``get``, ``search``, ``put``, ``delete``,
``list_namespaces`` and their ``a``-prefixed async twins) validate their
arguments and build a one-operation batch.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, Literal, cast

from plait.store._ops import (
    NOT_PROVIDED,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NamespaceMatchType,
    NamespacePath,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from plait.store._paths import get_text_at_path, tokenize_path

__all__ = [
    "NOT_PROVIDED",
    "BaseStore",
    "EmbeddingDimensionError",
    "GetOp",
    "IndexConfig",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidValueError",
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
    "get_text_at_path",
    "tokenize_path",
    "validate_op_namespace",
]

_RESERVED_ROOT = "langgraph"


class InvalidNamespaceError(ValueError):
    """A namespace is empty, not a tuple, or has a bad label."""


class InvalidFilterError(ValueError):
    """A search filter has an unknown operator, mixes operators and fields, or (SQLite) an unsafe key."""


class InvalidValueError(TypeError):
    """A value to store is not a JSON object (a dict of JSON values with string keys).

    Attributes:
        namespace: The namespace of the rejected item.
        key: The key of the rejected item.
    """

    def __init__(self, message: str, *, namespace: tuple[str, ...] = (), key: str = "") -> None:
        """Create the error; ``str(err)`` names the item.

        Args:
            message: What is wrong and how to fix it.
            namespace: The item's namespace.
            key: The item's key.
        """
        super().__init__(f"{message} (item {key!r} in namespace {namespace!r}); nothing was stored.")
        self.namespace = namespace
        self.key = key


class EmbeddingDimensionError(ValueError):
    """The embedder returned vectors of another length than ``index["dims"]``, or too few of them."""


_VALID: dict[Any, None] = {}
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


def _check_writable(namespace: Any) -> None:
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


def _list_op(
    prefix: NamespacePath | None, suffix: NamespacePath | None, max_depth: int | None, limit: int, offset: int
) -> ListNamespacesOp:
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


class BaseStore(ABC):
    """Abstract key-value store for long-term memory, addressed by namespace and key.

    Subclasses implement :meth:`batch` and :meth:`abatch`. A subclass that
    honours ``ttl`` sets ``supports_ttl = True``; on others, ``put`` with a
    ``ttl`` raises ``NotImplementedError``.

    Attributes:
        supports_ttl: Whether the store expires items.
        ttl_config: Store-wide TTL defaults, if any.
    """

    supports_ttl: bool = False
    ttl_config: TTLConfig | None = None

    @abstractmethod
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute operations and return one result per operation, in order.

        Args:
            ops: The operations to run.

        Returns:
            ``GetOp`` gives an item or ``None``; ``SearchOp`` a list of search
            items; ``ListNamespacesOp`` a list of namespaces; ``PutOp`` ``None``.
        """

    @abstractmethod
    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch`.

        Args:
            ops: The operations to run.

        Returns:
            One result per operation, in order.
        """

    def _refresh(self, refresh_ttl: bool | None) -> bool:
        if refresh_ttl is not None:
            return refresh_ttl
        return (self.ttl_config or {}).get("refresh_on_read", True)

    def _get_op(self, namespace: tuple[str, ...], key: str, refresh_ttl: bool | None) -> GetOp:
        _check_labels(namespace)
        return GetOp(namespace, str(key), self._refresh(refresh_ttl))

    def _search_op(self, prefix: NamespacePath, refresh_ttl: bool | None, **kwargs: Any) -> SearchOp:
        prefix = (
            tuple(prefix) if isinstance(prefix, list) else prefix
        )  # a prefix may be a list, as in LangGraph
        _check_labels(prefix)
        return SearchOp(prefix, refresh_ttl=self._refresh(refresh_ttl), **kwargs)

    def _put_op(
        self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any], index: Any, ttl: Any
    ) -> PutOp:
        _check_writable(namespace)
        if ttl not in (NOT_PROVIDED, None) and not self.supports_ttl:
            raise NotImplementedError(
                f"TTL is not supported by {type(self).__name__}. "
                "Use a store implementation that supports TTL or set ttl=None."
            )
        if ttl is NOT_PROVIDED:
            ttl = (self.ttl_config or {}).get("default_ttl")
        return PutOp(namespace, str(key), value, index=index, ttl=ttl)

    def _delete_op(self, namespace: tuple[str, ...], key: str) -> PutOp:
        _check_labels(namespace)
        return PutOp(namespace, str(key), None, ttl=None)

    def get(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None) -> Item | None:
        """Read one item.

        Args:
            namespace: The item's namespace.
            key: The item's key.
            refresh_ttl: Restart the item's TTL clock; ``None`` uses the
                store's ``refresh_on_read`` setting (default ``True``).

        Returns:
            The item, or ``None`` if there is none.

        Raises:
            InvalidNamespaceError: If a namespace label is invalid.
        """
        # batch() answers a GetOp with Item | None (one result per operation)
        return self.batch([self._get_op(namespace, key, refresh_ttl)])[0]  # type: ignore[return-value]

    def search(  # noqa: PLR0913 - signature mirrors LangGraph
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """List the items under a namespace prefix.

        Args:
            namespace_prefix: Leading namespace labels (a tuple or a list); ``()`` means all.
            query: Natural-language query, used by stores with a semantic index.
            filter: Conditions on top-level value keys (see :class:`SearchOp`).
            limit: Maximum number of items returned.
            offset: Number of matching items skipped first.
            refresh_ttl: Restart the TTL clock of returned items.

        Returns:
            The matching items.

        Raises:
            InvalidNamespaceError: If a prefix label is invalid.
            InvalidFilterError: On an unknown operator, or (SQLite) a key that is not a plain name.
        """
        op = self._search_op(
            namespace_prefix, refresh_ttl, filter=filter, limit=limit, offset=offset, query=query
        )
        # batch() answers a SearchOp with list[SearchItem] (one result per operation)
        return self.batch([op])[0]  # type: ignore[return-value]

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
    ) -> None:
        """Create or replace an item.

        Args:
            namespace: The item's namespace; non-empty, not rooted at "langgraph".
            key: The item's key.
            value: A dict with string keys and JSON-like values.
            index: Fields to embed, for stores with a semantic index; ignored
                by others.
            ttl: Minutes until the item expires, ``None`` for never; omitted
                means the store's ``default_ttl``.

        Raises:
            InvalidNamespaceError: If the namespace is invalid.
            NotImplementedError: If ``ttl`` is given to a store without TTL support.
        """
        self.batch([self._put_op(namespace, key, value, index, ttl)])

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete an item; deleting a missing item is not an error.

        Args:
            namespace: The item's namespace.
            key: The item's key.

        Raises:
            InvalidNamespaceError: If a namespace label is invalid.
        """
        self.batch([self._delete_op(namespace, key)])

    def list_namespaces(  # noqa: PLR0913 - signature mirrors LangGraph
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """List the namespaces that hold items, sorted.

        Args:
            prefix: Pattern the namespaces must start with (``"*"`` = any label).
            suffix: Pattern the namespaces must end with.
            max_depth: Truncate namespaces to this many labels, deduplicated.
            limit: Maximum number of namespaces returned.
            offset: Number of namespaces skipped first.

        Returns:
            The matching namespaces.

        Raises:
            InvalidNamespaceError: If a pattern label is invalid.
        """
        # batch() answers a ListNamespacesOp with list[tuple[str, ...]] (one result per operation)
        return self.batch([_list_op(prefix, suffix, max_depth, limit, offset)])[0]  # type: ignore[return-value]

    async def aget(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """Async twin of :meth:`get`."""
        # batch() answers a GetOp with Item | None (one result per operation)
        return (await self.abatch([self._get_op(namespace, key, refresh_ttl)]))[0]  # type: ignore[return-value]

    async def asearch(  # noqa: PLR0913 - signature mirrors LangGraph
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Async twin of :meth:`search`."""
        op = self._search_op(
            namespace_prefix, refresh_ttl, filter=filter, limit=limit, offset=offset, query=query
        )
        # batch() answers a SearchOp with list[SearchItem] (one result per operation)
        return (await self.abatch([op]))[0]  # type: ignore[return-value]

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
    ) -> None:
        """Async twin of :meth:`put`."""
        await self.abatch([self._put_op(namespace, key, value, index, ttl)])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """Async twin of :meth:`delete`."""
        await self.abatch([self._delete_op(namespace, key)])

    async def alist_namespaces(  # noqa: PLR0913 - signature mirrors LangGraph
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """Async twin of :meth:`list_namespaces`."""
        # batch() answers a ListNamespacesOp with list[tuple[str, ...]] (one result per operation)
        return (await self.abatch([_list_op(prefix, suffix, max_depth, limit, offset)]))[0]  # type: ignore[return-value]
