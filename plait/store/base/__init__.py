"""The long-term store interface: items, operations and ``BaseStore``.

A store keeps JSON-like dict values under a hierarchical *namespace* (a tuple
of string labels such as ``("users", "u1", "memories")``) and a *key*. Unlike
checkpoints, store data outlives threads, so it suits user profiles and other
long-term memory. The API mirrors ``langgraph.store.base``.

Every store implements :meth:`BaseStore.batch` and :meth:`BaseStore.abatch`;
the convenience methods (``aget``, ``asearch``, ``aput``, ``adelete``,
``alist_namespaces`` and their sync forms) validate their arguments and run one
operation (:meth:`BaseStore._arun_op`: a one-operation batch, unless the store
answers it another way). The sync methods are generated from the async ones by
``tools/unasync_gen.py``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from plait.store._ops import (
    NOT_PROVIDED,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
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
    _check_labels,  # pyright: ignore[reportPrivateUsage]
    check_writable,
    list_op,
    validate_op_namespace,
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

    # >>> async source
    @abstractmethod
    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute operations and return one result per operation, in order.

        Args:
            ops: The operations to run.

        Returns:
            ``GetOp`` gives an item or ``None``; ``SearchOp`` a list of search
            items; ``ListNamespacesOp`` a list of namespaces; ``PutOp`` ``None``.
        """

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    @abstractmethod
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute operations and return one result per operation, in order.

        Args:
            ops: The operations to run.

        Returns:
            ``GetOp`` gives an item or ``None``; ``SearchOp`` a list of search
            items; ``ListNamespacesOp`` a list of namespaces; ``PutOp`` ``None``.
        """

    # <<< generated sync

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
        check_writable(namespace)
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

    # >>> async source
    async def _arun_op(self, op: Op) -> Result:
        """Run one operation of a convenience method (``get``, ``put``, ...): a one-operation batch.

        A store may answer some operations without building a batch (same checks, same result).
        """
        results = await self.abatch([op])
        return results[0]

    async def aget(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
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
        # a GetOp is answered with Item | None
        return await self._arun_op(self._get_op(namespace, key, refresh_ttl))  # type: ignore[return-value]

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
        # a SearchOp is answered with list[SearchItem]
        return await self._arun_op(op)  # type: ignore[return-value]

    async def aput(
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
        await self._arun_op(self._put_op(namespace, key, value, index, ttl))

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete an item; deleting a missing item is not an error.

        Args:
            namespace: The item's namespace.
            key: The item's key.

        Raises:
            InvalidNamespaceError: If a namespace label is invalid.
        """
        await self._arun_op(self._delete_op(namespace, key))

    async def alist_namespaces(  # noqa: PLR0913 - signature mirrors LangGraph
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
        # a ListNamespacesOp is answered with list[tuple[str, ...]]
        return await self._arun_op(list_op(prefix, suffix, max_depth, limit, offset))  # type: ignore[return-value]

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def _run_op(self, op: Op) -> Result:
        """Run one operation of a convenience method (``get``, ``put``, ...): a one-operation batch.

        A store may answer some operations without building a batch (same checks, same result).
        """
        results = self.batch([op])
        return results[0]

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
        # a GetOp is answered with Item | None
        return self._run_op(self._get_op(namespace, key, refresh_ttl))  # type: ignore[return-value]

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
        # a SearchOp is answered with list[SearchItem]
        return self._run_op(op)  # type: ignore[return-value]

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
        self._run_op(self._put_op(namespace, key, value, index, ttl))

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete an item; deleting a missing item is not an error.

        Args:
            namespace: The item's namespace.
            key: The item's key.

        Raises:
            InvalidNamespaceError: If a namespace label is invalid.
        """
        self._run_op(self._delete_op(namespace, key))

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
        # a ListNamespacesOp is answered with list[tuple[str, ...]]
        return self._run_op(list_op(prefix, suffix, max_depth, limit, offset))  # type: ignore[return-value]

    # <<< generated sync
