"""``stream_events`` / ``astream_events`` of compiled graphs: ``version="v3"`` is plait's own.

``version="v3"`` returns a run handle fed by stream transformers (see :mod:`plait.stream`);
``"v1"``/``"v2"`` are LangChain's callback event streams, from ``Runnable``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig

from plait.stream._run import astream_events_v3, stream_events_v3

__all__ = ["StreamEvents"]

TransformerSpec = Callable[[tuple[str, ...]], object]


class StreamEvents(Runnable[Any, Any]):
    """Mixin of compiled graphs (before ``Runnable`` in their bases)."""

    stream_transformers: tuple[TransformerSpec, ...] = ()
    """Transformers given to ``compile(transformers=...)``: added to every v3 run, after the built-ins."""

    def stream_events(  # v3 returns a run handle
        self,
        input: object,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        version: str = "v2",
        transformers: Sequence[TransformerSpec] | None = None,
        **kwargs: object,
    ) -> Iterator[Any]:
        """``version="v3"``: a :class:`~plait.stream.GraphRunStream` the caller drives by iterating
        its projections (``run.values``, ``run.messages``…); the graph runs as they are consumed.

        Args:
            input: The graph input (or a ``Command``, or ``None`` to resume).
            config: The run config.
            version: ``"v3"`` (``"v1"``/``"v2"``: LangChain's, async only).
            transformers: Transformer classes or ``factory(scope)`` callables for this run.
            **kwargs: Passed to ``stream`` (``context``, ``durability``, ``interrupt_before``,
                ``control``…); ``stream_mode`` and ``subgraphs`` are not accepted.
        """
        if version == "v3":
            return stream_events_v3(self, input, config, transformers, kwargs)  # type: ignore[return-value]
        return super().stream_events(input, config, version=version, **kwargs)  # type: ignore[call-overload,no-any-return]

    def astream_events(  # type: ignore[override]  # v3 returns an awaitable run handle
        self,
        input: object,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        version: str = "v2",
        transformers: Sequence[TransformerSpec] | None = None,
        **kwargs: object,
    ) -> AsyncIterator[Any] | Awaitable[Any]:
        """``version="v3"``: an awaitable :class:`~plait.stream.AsyncGraphRunStream` (see
        :meth:`stream_events`); ``"v1"``/``"v2"``: LangChain's event stream."""
        if version == "v3":
            return astream_events_v3(self, input, config, transformers, kwargs)
        return super().astream_events(input, config, version=version, **kwargs)  # type: ignore[call-overload,no-any-return]
