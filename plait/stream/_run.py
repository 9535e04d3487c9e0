"""Start a v3 run of a graph: build its mux, ask the graph for the modes it needs, wrap the stream.

Used by ``stream_events(version="v3")`` / ``astream_events(version="v3")`` of compiled graphs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from plait.pregel._message_events import MESSAGE_EVENTS_KEY
from plait.stream._lifecycle import LifecycleTransformer, SubgraphTransformer
from plait.stream._mux import StreamMux, TransformerFactory
from plait.stream._types import StreamTransformer
from plait.stream.run_stream import AsyncGraphRunStream, GraphRunStream
from plait.stream.transformers import MessagesTransformer, ValuesTransformer

__all__ = ["astream_events_v3", "factories_of", "stream_events_v3"]

BUILTINS: tuple[TransformerFactory, ...] = (
    ValuesTransformer,
    MessagesTransformer,
    LifecycleTransformer,
    SubgraphTransformer,
)
"""Registered in every run, before the graph's and the call's transformers."""

_OWNED = ("stream_mode", "subgraphs")
_EXPLICIT = ("interrupt_before", "interrupt_after", "control")
"""Options always handed to ``stream`` (``None`` when not given), as LangGraph's v3 does."""
_ON_LOOP = True
_IN_THREAD = False
"""The mux's ``is_async`` in the async / the generated sync code."""


def factories_of(specs: Iterable[object] | None) -> list[TransformerFactory]:
    """Transformer classes or ``factory(scope)`` callables, checked.

    Raises:
        TypeError: a transformer instance (one is made per run, so pass its class or a factory)
            or something not callable.
    """
    out: list[TransformerFactory] = []
    for spec in specs or ():
        if isinstance(spec, StreamTransformer):
            raise TypeError(
                "v3 transformers must be classes or factories called with the scope; got a pre-built "
                f"instance of {type(spec).__name__}. Pass the class, or `lambda scope: "
                f"{type(spec).__name__}(scope, ...)`."
            )
        if not callable(spec):
            raise TypeError(f"v3 transformers must be classes or factories, got {type(spec).__name__}")
        out.append(cast("TransformerFactory", spec))
    return out


def _prepare(
    graph: object,
    config: Mapping[str, Any] | None,
    transformers: Iterable[object] | None,
    kwargs: Mapping[str, object],
    is_async: bool,
) -> tuple[StreamMux, dict[str, Any], list[str], dict[str, object]]:
    owned = [k for k in _OWNED if k in kwargs]
    if owned:
        raise TypeError(
            f"stream_events(version='v3') does not take {', '.join(owned)}: the stream modes come from "
            "the transformers, and subgraph events always stream (with their namespace)"
        )
    factories = [
        *BUILTINS,
        *factories_of(getattr(graph, "stream_transformers", ())),
        *factories_of(transformers),
    ]
    mux = StreamMux(factories=factories, is_async=is_async)
    modes = {"values"}  # the run's output comes from them
    for transformer in mux._transformers:  # pyright: ignore[reportPrivateUsage]
        modes.update(transformer.required_stream_modes)
    cfg = dict(config or {})
    if "messages" in modes:  # chat models stream content-block events
        cfg["configurable"] = {**(cfg.get("configurable") or {}), MESSAGE_EVENTS_KEY: True}
    options = {name: None for name in _EXPLICIT} | dict(kwargs)
    return mux, cfg, sorted(modes), options


# >>> async source
async def astream_events_v3(
    graph: Any,  # a compiled graph (its stream/astream overloads)
    input: object,  # noqa: A002
    config: Mapping[str, object] | None,
    transformers: Iterable[Callable[[tuple[str, ...]], object]] | None,
    kwargs: Mapping[str, object],
) -> AsyncGraphRunStream:
    """A run stream over ``graph.astream(input, config, **kwargs)`` (sync: ``graph.stream``), not
    started yet."""
    mux, cfg, modes, options = _prepare(graph, config, transformers, kwargs, _ON_LOOP)
    parts = graph.astream(input, cfg, stream_mode=modes, subgraphs=True, version="v2", **options)
    return AsyncGraphRunStream(parts.__aiter__(), mux)


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def stream_events_v3(
    graph: Any,  # a compiled graph (its stream/astream overloads)
    input: object,  # noqa: A002
    config: Mapping[str, object] | None,
    transformers: Iterable[Callable[[tuple[str, ...]], object]] | None,
    kwargs: Mapping[str, object],
) -> GraphRunStream:
    """A run stream over ``graph.astream(input, config, **kwargs)`` (sync: ``graph.stream``), not
    started yet."""
    mux, cfg, modes, options = _prepare(graph, config, transformers, kwargs, _IN_THREAD)
    parts = graph.stream(input, cfg, stream_mode=modes, subgraphs=True, version="v2", **options)
    return GraphRunStream(parts.__iter__(), mux)


# <<< generated sync
