"""One server process: settings, database, checkpoint saver, store, graphs, broker."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from starlette.requests import Request

from plait.checkpoint.sqlite import SqliteSaver
from plait.pregel import Pregel
from plait.server._config import ConfigError, Settings, apply_env, load_embed, load_graph
from plait.server._db import Database, SqliteDatabase, open_database
from plait.server._series import Metrics
from plait.server._store import ServerStore, close_store, open_store
from plait.server._stream import Broker
from plait.server._wal import keep_wal
from plait.server._webhook import WebhookPolicy, deliver
from plait.server._wire import ApiError
from plait.store._embed import IndexSpec
from plait.store.base import EmbeddingDimensionError, IndexConfig, TTLConfig

if TYPE_CHECKING:
    from plait.server._auth import LoadedAuth

_pg_saver: Any
try:
    from plait.checkpoint.postgres.aio import AsyncPostgresSaver as _pg_saver
except ImportError:  # pragma: no cover - without the 'postgres' extra only SQLite is served
    _pg_saver = None

__all__ = ["ServerState", "bookkeeping_file", "default_db", "open_state", "state_of"]

WEBHOOK_CALLS = 16
"""Most webhook calls one worker makes at once (the others wait their turn)."""
SAVER_POOL = 4
"""Most PostgreSQL connections of a worker's checkpoint saver (fewer when it runs fewer jobs at once)."""


@dataclass
class ServerState:
    """What every request handler and the run worker share."""

    settings: Settings
    db: Database
    saver: Any
    store: ServerStore
    """The long-term store (a :mod:`plait.store` store on the server's database), given to every graph."""
    graphs: dict[str, Pregel[Any, Any, Any, Any]]
    broker: Broker
    worker_id: str = field(
        default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    )
    stack: AsyncExitStack = field(default_factory=AsyncExitStack)
    worker: Any = None
    metrics: Metrics | None = None
    """The app's Prometheus series (:mod:`plait.server._metrics`), once the app set them."""
    auth: LoadedAuth | None = None
    """The config's custom auth (:mod:`plait.server._auth`), once the app set it: crons fire as their user."""
    cancels: dict[str, str] = field(default_factory=lambda: {})
    finishing: set[str] = field(default_factory=lambda: set[str]())
    """Runs recording their end here: a cancel arriving now changes nothing (they end as they are)."""
    hooks: WebhookPolicy = field(default_factory=WebhookPolicy)
    deliveries: set[asyncio.Task[bool]] = field(default_factory=lambda: set())
    """Webhook calls under way (a shutdown waits for them, briefly)."""
    calling: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(WEBHOOK_CALLS))

    def call_webhook(self, url: str, body: dict[str, object]) -> None:
        """POST ``body`` to ``url`` in the background (see :func:`plait.server._webhook.deliver`)."""

        async def call() -> bool:
            async with self.calling:
                return await deliver(self.hooks, url, body)

        task = asyncio.create_task(call())
        self.deliveries.add(task)
        task.add_done_callback(self.deliveries.discard)

    def graph(self, graph_id: str, *, stateless: bool = False) -> Pregel[Any, Any, Any, Any]:
        """The graph ``graph_id`` wired to the server's saver (none for stateless runs) and store."""
        base = self.graphs.get(graph_id)
        if base is None:
            raise ApiError(404, f"Graph {graph_id!r} not found; the config names {sorted(self.graphs)}")
        graph = base.with_saver(None if stateless else self.saver)
        graph.store = self.store
        return graph

    async def close(self) -> None:
        """Wait (up to 15 s) for webhook calls under way; close the saver, the store and the database."""
        if self.deliveries:
            _, late = await asyncio.wait(set(self.deliveries), timeout=15)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        await self.stack.aclose()
        await close_store(self.store)
        await self.db.close()


def default_db(config_path: str) -> str:
    """Where the server keeps its checkpoints when no ``--db`` is given: next to the config file."""
    return str(Path(config_path).resolve().parent / ".plait" / "plait.sqlite")


def bookkeeping_file(db: str) -> str:
    """The SQLite file of the server's own tables, beside the checkpoint file ``db``.

    Two files, so the server's bookkeeping and the checkpoint saver never wait on each
    other's write lock (``app.sqlite`` -> ``app.server.sqlite``).
    """
    if db == ":memory:":
        return db
    path = Path(db)
    return str(path.with_name(f"{path.stem}.server{path.suffix or '.sqlite'}"))


async def open_state(settings: Settings) -> ServerState:
    """Load the graphs, open the database and the saver for one server process."""
    apply_env(settings.env)
    graphs = {spec.graph_id: load_graph(spec, settings.config_path) for spec in settings.graphs}
    index = _index(settings)
    db = await open_database(settings.db if settings.is_postgres else bookkeeping_file(settings.db))
    stack = AsyncExitStack()
    try:
        # No thread hop per saver call (a quarter of a worker's CPU per run): PostgreSQL's saver is
        # natively async; SQLite's statements run on the event loop (``inline_async``), as one server
        # process owns the file. Either way a run cancelled mid-write finishes (or rolls back) its
        # transaction: SQLite's statement cannot be interrupted, PostgreSQL's is shielded.
        saver: Any
        if settings.is_postgres:
            if _pg_saver is None:
                raise ImportError(
                    "a PostgreSQL --db needs the 'postgres' extra: pip install 'plait[postgres]'"
                )
            # runs executing at once share the pool: one connection for all of them queued their saves
            # (1 worker, 16 clients: 66 -> 75 runs/s with 4)
            saver = await stack.enter_async_context(
                _pg_saver.from_conn_string(
                    settings.db, lease_ttl=settings.lease_ttl, pool_size=min(settings.jobs, SAVER_POOL)
                )
            )
            await saver.setup()
        else:
            manager = SqliteSaver.from_conn_string(
                settings.db, lease_ttl=settings.lease_ttl, inline_async=True
            )
            saver = await asyncio.to_thread(stack.enter_context, manager)
            await asyncio.to_thread(saver.setup)
            if isinstance(db, SqliteDatabase):
                await stack.enter_async_context(keep_wal([settings.db, db.target], [saver.conn, db.conn]))
        try:
            store = await open_store(db, cast("TTLConfig", settings.store_ttl), index)
        except EmbeddingDimensionError as exc:
            raise ConfigError(f"store.index: {exc}") from exc
    except BaseException:  # nothing opened stays open
        await stack.aclose()
        await db.close()
        raise
    return ServerState(
        settings, db, saver, store, graphs, Broker(db), stack=stack, hooks=settings.webhook_policy
    )


def _index(settings: Settings) -> IndexConfig | None:
    """The store's semantic index (``store.index``), its embeddings imported beside the config (checked).

    Raises:
        ConfigError: the embeddings cannot be loaded, or the index is not one plait reads.
    """
    if not settings.store_index:
        return None
    raw = settings.store_index
    try:
        embed = load_embed(str(raw["embed"]), settings.config_path)
        index = cast("IndexConfig", {**raw, "embed": embed})
        IndexSpec.parse(index, ("cosine", "l2", "inner_product"))
        return index
    except (ImportError, TypeError, ValueError, NotImplementedError) as exc:
        raise ConfigError(f"store.index: {exc}") from exc


def state_of(request: Request) -> ServerState:
    """The server state of the application handling ``request`` (a Starlette request)."""
    state: ServerState = request.app.state.server
    return state
