"""``RemoteGraph``: a graph that runs on an agent server (``plait serve``, LangGraph's server),
driven through the ``langgraph_sdk`` clients and usable wherever a compiled graph is, a node of
a local graph included.

The SDK is imported when a ``RemoteGraph`` is made (``pip install langgraph-sdk``), not with this module.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.graph import Graph
from typing_extensions import Self

from plait.errors import InvalidConfigError
from plait.pregel._options import version_of
from plait.pregel._remote_stream import (
    SKIP,
    Caller,
    ChunkReader,
    Modes,
    RemoteException,
    answer_interrupt,
    caller_of,
    may_resume,
    missing,
    no_bulk_update,
    run_input,
    run_output,
)
from plait.pregel._remote_wire import (
    checkpoint_of,
    config_of,
    configurable,
    drawable,
    load_sdk,
    merge_configs,
    sanitize_config,
    snapshot_of,
    tracing_headers,
)
from plait.types import StateSnapshot

if TYPE_CHECKING:
    from langgraph_sdk.schema import QueryParamTypes

__all__ = ["RemoteException", "RemoteGraph"]

_State = Mapping[str, object]  # a thread's state as the server sends it


class RemoteGraph(Runnable[Any, Any]):
    """A graph deployed on an agent server, called like a local compiled graph.

    Each call is one API request through the SDK (``invoke``/``stream`` create a run; a
    ``thread_id`` in ``configurable`` runs on that thread, made if missing). Added as a node of a
    local graph (``builder.add_node(remote)``), its events join the parent's stream under the
    node's namespace (``subgraphs=True``), an interrupt on the server pauses the parent's task,
    and resuming the parent resumes the remote thread (the parent's ``thread_id``).

    Args:
        assistant_id: The assistant id or graph id on the server.
        url: The server's URL (makes the default sync and async clients).
        api_key: API key for the default clients (default: the SDK reads ``LANGGRAPH_API_KEY``…).
        headers: Extra headers for the default clients.
        client: An async ``LangGraphClient`` to use instead of the default one.
        sync_client: A ``SyncLangGraphClient`` to use instead of the default one.
        config: Config merged under every call's.
        name: The graph's name (a node added without a name takes it); default ``assistant_id``.
        distributed_tracing: Send the current LangSmith run's tracing headers with each run.

    Raises:
        ImportError: ``langgraph-sdk`` is not installed.
    """

    assistant_id: str
    name: str | None

    def __init__(  # noqa: PLR0913 - LangGraph's signature
        self,
        assistant_id: str,
        /,
        *,
        url: str | None = None,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        client: Any = None,
        sync_client: Any = None,
        config: RunnableConfig | None = None,
        name: str | None = None,
        distributed_tracing: bool = False,
    ) -> None:
        sdk = load_sdk()
        self.assistant_id = assistant_id
        self.name = assistant_id if name is None else name
        self.config = config
        self.distributed_tracing = distributed_tracing
        keys: dict[str, object] = {"url": url, "headers": headers}
        if api_key is not None:
            keys["api_key"] = api_key
        self.client: Any = client if client is not None or url is None else sdk.get_client(**keys)
        self.sync_client: Any = (
            sync_client if sync_client is not None or url is None else sdk.get_sync_client(**keys)
        )

    def __repr__(self) -> str:
        return f"RemoteGraph({self.assistant_id!r}, name={self.name!r})"

    def copy(self, update: Mapping[str, object] | None = None) -> Self:
        """A copy with the constructor arguments in ``update`` replaced (the clients are shared)."""
        fields: dict[str, Any] = {
            "client": self.client,
            "sync_client": self.sync_client,
            "config": self.config,
            "name": self.name,
            "distributed_tracing": self.distributed_tracing,
            **(update or {}),
        }
        return type(self)(fields.pop("assistant_id", self.assistant_id), **fields)

    def with_config(self, config: RunnableConfig | None = None, **kwargs: Any) -> Self:
        """A copy whose calls merge ``config`` (and ``kwargs``, config keys) under theirs."""
        merged = merge_configs(self.config, config, kwargs)
        return self.copy({"config": merged})

    def _client(self) -> Any:
        if self.sync_client is None:
            raise ValueError(
                f"{self!r} has no sync client: pass url= or sync_client= when making it (async methods use client=)"
            )
        return self.sync_client

    def _aclient(self) -> Any:
        if self.client is None:
            raise ValueError(
                f"{self!r} has no async client: pass url= or client= when making it (sync methods use sync_client=)"
            )
        return self.client

    def _thread(self, config: Mapping[str, object] | None, method: str) -> tuple[dict[str, Any], str]:
        merged = merge_configs(self.config, config)
        thread_id = configurable(merged).get("thread_id")
        if not thread_id:
            raise InvalidConfigError(
                f"RemoteGraph.{method}() reads a thread: pass config={{'configurable': {{'thread_id': ...}}}}",
                field="thread_id",
            )
        return merged, str(thread_id)

    def _history(
        self, config: RunnableConfig, method: str, options: dict[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        merged, thread_id = self._thread(config, method)
        request = {
            "limit": options.pop("limit", None) or 10,
            "before": checkpoint_of(options.pop("before", None)),
            "metadata": options.pop("filter", None),
            "checkpoint": checkpoint_of(merged),
            **options,
        }
        return thread_id, request

    # -- runs --------------------------------------------------------------------------------------

    def _run(
        self,
        input: object,
        config: RunnableConfig | None,
        caller: Caller,
        options: dict[str, Any],  # noqa: A002
    ) -> tuple[dict[str, Any], ChunkReader]:
        """The ``runs.stream`` arguments of one run, and the reader of its events."""
        v2 = version_of(options.pop("version", None))
        subgraphs = bool(options.pop("subgraphs", False))
        headers = options.pop("headers", None)
        parent: frozenset[str] = caller.modes if caller.forward is not None else frozenset()
        modes = Modes.of(options.pop("stream_mode", None), parent, "updates")
        sent = sanitize_config(merge_configs(self.config, config))
        run_in, command = run_input(input)
        request: dict[str, Any] = {
            "thread_id": configurable(sent).pop("thread_id", None),
            "assistant_id": self.assistant_id,
            "input": run_in,
            "command": command,
            "config": sent,
            "stream_mode": modes.sent,
            "stream_subgraphs": subgraphs or caller.forward is not None,
            "if_not_exists": "create",
            "headers": tracing_headers(headers) if self.distributed_tracing else headers,
            **options,
        }
        return request, ChunkReader(modes, caller, subgraphs, v2)

    # -- the API (the sync methods are generated from the async ones) -----------------------------

    # >>> async source
    async def aget_graph(
        self,
        config: RunnableConfig | None = None,
        *,
        xray: int | bool = False,
        headers: dict[str, str] | None = None,
        params: QueryParamTypes | None = None,
    ) -> Graph:
        """The graph's nodes and edges (``GET /assistants/{id}/graph``); ``xray`` expands subgraphs
        (an int: that many levels). ``config`` is not used."""
        found = await self._aclient().assistants.get_graph(
            self.assistant_id, xray=xray, headers=headers, params=params
        )
        return drawable(found)

    async def aget_state(
        self,
        config: RunnableConfig,
        *,
        subgraphs: bool = False,
        headers: dict[str, str] | None = None,
        params: QueryParamTypes | None = None,
    ) -> StateSnapshot:
        """The thread's state at its newest checkpoint, or at the one ``config`` names.

        Raises:
            InvalidConfigError: ``config`` names no ``thread_id``.
        """
        merged, thread_id = self._thread(config, "aget_state")
        state = await self._aclient().threads.get_state(
            thread_id, checkpoint=checkpoint_of(merged), subgraphs=subgraphs, headers=headers, params=params
        )
        return snapshot_of(state)

    async def aget_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: RunnableConfig | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StateSnapshot]:
        """The thread's checkpoints, newest first: ``limit`` of them (10 by default), those whose
        metadata match ``filter``, older than ``before``; ``kwargs``: ``headers``, ``params``."""
        options = {"filter": filter, "before": before, "limit": limit, **kwargs}
        thread_id, request = self._history(config, "aget_state_history", options)
        for state in await self._aclient().threads.get_history(thread_id, **request):
            yield snapshot_of(state)

    async def aupdate_state(
        self,
        config: RunnableConfig,
        values: dict[str, Any] | Any | None,
        as_node: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        params: QueryParamTypes | None = None,
    ) -> RunnableConfig:
        """Write ``values`` to the thread as if ``as_node`` returned them; returns the new checkpoint's config."""
        merged, thread_id = self._thread(config, "aupdate_state")
        found = await self._aclient().threads.update_state(
            thread_id,
            values,
            as_node=as_node,
            checkpoint=checkpoint_of(merged),
            headers=headers,
            params=params,
        )
        return cast("RunnableConfig", config_of(found["checkpoint"]))

    async def abulk_update_state(self, config: RunnableConfig, updates: list[object]) -> RunnableConfig:
        """Not available on a remote graph (as in LangGraph).

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(no_bulk_update("abulk_update_state", "aupdate_state"))

    async def astream(
        self,
        input: Any,  # noqa: A002 - LangGraph's name
        config: RunnableConfig | None = None,
        *,
        stream_mode: Any = None,
        subgraphs: bool | None = False,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """Run the graph on the server (``POST /threads/{id}/runs/stream``, or ``/runs/stream``
        without a ``thread_id``), yielding its stream as a local graph's ``stream`` does.

        Args:
            input: The input, or a :class:`~plait.types.Command` (``resume``, ``update``, ``goto``).
            config: Run config; ``configurable.thread_id`` names the thread (made if missing).
            stream_mode: A mode (chunks are its payloads) or a list (SDK ``StreamPart`` chunks);
                default ``"updates"``.
            subgraphs: Yield the remote subgraphs' events too, as ``(namespace, ...)`` tuples.
            **kwargs: ``context``, ``interrupt_before``, ``interrupt_after``, ``headers``,
                ``params``, ``version`` (``"v2"``: typed stream parts), and any other argument
                of the SDK's ``runs.stream`` (``multitask_strategy``, ``durability``…).

        Raises:
            RemoteException: the remote run failed.
            GraphInterrupt: the remote graph paused while it runs inside a graph's task.
        """
        client = self._aclient()
        caller = caller_of(config)
        request, reader = self._run(
            input, config, caller, {**kwargs, "stream_mode": stream_mode, "subgraphs": bool(subgraphs)}
        )
        if may_resume(caller, request):
            found = await _astate_or_none(client.threads.get_state, request["thread_id"])
            answer_interrupt(request, caller, found)
        async for chunk in client.runs.stream(**request):
            item = reader.read(chunk)
            if item is not SKIP:
                yield item

    async def ainvoke(
        self,
        input: Any,  # noqa: A002 - LangGraph's name
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the graph on the server until it ends or pauses; return its last values (an
        interrupted run's include ``__interrupt__``), or a ``GraphOutput`` with ``version="v2"``.

        ``kwargs`` are :meth:`stream`'s (``context``, ``interrupt_before``, ``headers``…).
        """
        last: object = SKIP
        options: dict[str, Any] = {**kwargs, "stream_mode": "values"}
        async for chunk in self.astream(input, config, **options):
            last = chunk
        return run_output(last, kwargs.get("version"))

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def get_graph(
        self,
        config: RunnableConfig | None = None,
        *,
        xray: int | bool = False,
        headers: dict[str, str] | None = None,
        params: QueryParamTypes | None = None,
    ) -> Graph:
        """The graph's nodes and edges (``GET /assistants/{id}/graph``); ``xray`` expands subgraphs
        (an int: that many levels). ``config`` is not used."""
        found = self._client().assistants.get_graph(
            self.assistant_id, xray=xray, headers=headers, params=params
        )
        return drawable(found)

    def get_state(
        self,
        config: RunnableConfig,
        *,
        subgraphs: bool = False,
        headers: dict[str, str] | None = None,
        params: QueryParamTypes | None = None,
    ) -> StateSnapshot:
        """The thread's state at its newest checkpoint, or at the one ``config`` names.

        Raises:
            InvalidConfigError: ``config`` names no ``thread_id``.
        """
        merged, thread_id = self._thread(config, "get_state")
        state = self._client().threads.get_state(
            thread_id, checkpoint=checkpoint_of(merged), subgraphs=subgraphs, headers=headers, params=params
        )
        return snapshot_of(state)

    def get_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: RunnableConfig | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> Iterator[StateSnapshot]:
        """The thread's checkpoints, newest first: ``limit`` of them (10 by default), those whose
        metadata match ``filter``, older than ``before``; ``kwargs``: ``headers``, ``params``."""
        options = {"filter": filter, "before": before, "limit": limit, **kwargs}
        thread_id, request = self._history(config, "get_state_history", options)
        for state in self._client().threads.get_history(thread_id, **request):
            yield snapshot_of(state)

    def update_state(
        self,
        config: RunnableConfig,
        values: dict[str, Any] | Any | None,
        as_node: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        params: QueryParamTypes | None = None,
    ) -> RunnableConfig:
        """Write ``values`` to the thread as if ``as_node`` returned them; returns the new checkpoint's config."""
        merged, thread_id = self._thread(config, "update_state")
        found = self._client().threads.update_state(
            thread_id,
            values,
            as_node=as_node,
            checkpoint=checkpoint_of(merged),
            headers=headers,
            params=params,
        )
        return cast("RunnableConfig", config_of(found["checkpoint"]))

    def bulk_update_state(self, config: RunnableConfig, updates: list[object]) -> RunnableConfig:
        """Not available on a remote graph (as in LangGraph).

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(no_bulk_update("bulk_update_state", "update_state"))

    def stream(
        self,
        input: Any,  # noqa: A002 - LangGraph's name
        config: RunnableConfig | None = None,
        *,
        stream_mode: Any = None,
        subgraphs: bool | None = False,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Run the graph on the server (``POST /threads/{id}/runs/stream``, or ``/runs/stream``
        without a ``thread_id``), yielding its stream as a local graph's ``stream`` does.

        Args:
            input: The input, or a :class:`~plait.types.Command` (``resume``, ``update``, ``goto``).
            config: Run config; ``configurable.thread_id`` names the thread (made if missing).
            stream_mode: A mode (chunks are its payloads) or a list (SDK ``StreamPart`` chunks);
                default ``"updates"``.
            subgraphs: Yield the remote subgraphs' events too, as ``(namespace, ...)`` tuples.
            **kwargs: ``context``, ``interrupt_before``, ``interrupt_after``, ``headers``,
                ``params``, ``version`` (``"v2"``: typed stream parts), and any other argument
                of the SDK's ``runs.stream`` (``multitask_strategy``, ``durability``…).

        Raises:
            RemoteException: the remote run failed.
            GraphInterrupt: the remote graph paused while it runs inside a graph's task.
        """
        client = self._client()
        caller = caller_of(config)
        request, reader = self._run(
            input, config, caller, {**kwargs, "stream_mode": stream_mode, "subgraphs": bool(subgraphs)}
        )
        if may_resume(caller, request):
            found = _state_or_none(client.threads.get_state, request["thread_id"])
            answer_interrupt(request, caller, found)
        for chunk in client.runs.stream(**request):
            item = reader.read(chunk)
            if item is not SKIP:
                yield item

    def invoke(
        self,
        input: Any,  # noqa: A002 - LangGraph's name
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the graph on the server until it ends or pauses; return its last values (an
        interrupted run's include ``__interrupt__``), or a ``GraphOutput`` with ``version="v2"``.

        ``kwargs`` are :meth:`stream`'s (``context``, ``interrupt_before``, ``headers``…).
        """
        last: object = SKIP
        options: dict[str, Any] = {**kwargs, "stream_mode": "values"}
        for chunk in self.stream(input, config, **options):
            last = chunk
        return run_output(last, kwargs.get("version"))

    # <<< generated sync


# >>> async source
async def _astate_or_none(get_state: Callable[[str], Awaitable[_State]], thread_id: str) -> _State | None:
    """The thread's state, or ``None`` when the server has no such thread (404)."""
    try:
        return await get_state(thread_id)
    except Exception as exc:
        if missing(exc):
            return None
        raise


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def _state_or_none(get_state: Callable[[str], _State], thread_id: str) -> _State | None:
    """The thread's state, or ``None`` when the server has no such thread (404)."""
    try:
        return get_state(thread_id)
    except Exception as exc:
        if missing(exc):
            return None
        raise


# <<< generated sync
