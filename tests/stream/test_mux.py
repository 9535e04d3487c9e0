"""StreamMux: routing, suppression, projections, end of run, async lane."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from plait.stream import ProtocolEvent, StreamChannel, StreamTransformer, ValuesTransformer
from plait.stream._convert import convert_to_protocol_event
from plait.stream._mux import StreamMux


def _event(method: str, data: Any = None, namespace: list[str] | None = None) -> ProtocolEvent:
    return {
        "type": "event",
        "method": method,
        "params": {"namespace": namespace or [], "timestamp": 0, "data": {} if data is None else data},
    }


class _Recorder(StreamTransformer):
    def __init__(self, scope: tuple[str, ...] = (), *, reject: str | None = None) -> None:
        super().__init__(scope)
        self.reject = reject
        self.seen: list[str] = []
        self.finalized = False
        self.failed: BaseException | None = None

    def init(self) -> dict[str, Any]:
        return {}

    def process(self, event: ProtocolEvent) -> bool:
        self.seen.append(event["method"])
        return event["method"] != self.reject

    def finalize(self) -> None:
        self.finalized = True

    def fail(self, err: BaseException) -> None:
        self.failed = err


def test_rejected_events_stay_out_of_the_main_log_but_every_transformer_sees_them() -> None:
    first, second = _Recorder(reject="updates"), _Recorder()
    mux = StreamMux([first, second])
    log = iter(mux._events)
    for method in ("values", "updates", "custom"):
        mux.push(_event(method))
    mux.close()
    events = list(log)
    assert [e["method"] for e in events] == ["values", "custom"]
    assert [e["seq"] for e in events] == [1, 2]  # positions in the main log
    assert second.seen == ["values", "updates", "custom"]


def test_named_channels_forward_into_the_main_log_in_order() -> None:
    class Echo(StreamTransformer):
        def __init__(self, scope: tuple[str, ...] = ()) -> None:
            super().__init__(scope)
            self.channel: StreamChannel[str] = StreamChannel("echo")

        def init(self) -> dict[str, Any]:
            return {"echo": self.channel}

        def process(self, event: ProtocolEvent) -> bool:
            self.channel.push(event["method"])
            return True

    mux = StreamMux([Echo()], scope=("sub:1",))
    log = iter(mux._events)
    mux.push(_event("values"))
    mux.close()
    events = list(log)
    assert [e["method"] for e in events] == ["custom:echo", "values"]
    assert events[0]["params"]["data"] == "values"
    assert events[0]["params"]["namespace"] == []  # a forwarded item has no namespace (LangGraph's)
    assert [e["seq"] for e in events] == [1, 2]


def test_registration_errors() -> None:
    class NotADict(StreamTransformer):
        def init(self) -> Any:
            return ["x"]

    class Values(StreamTransformer):
        def init(self) -> dict[str, Any]:
            return {"values": StreamChannel()}

    class AsyncOnly(StreamTransformer):
        async def aprocess(self, event: ProtocolEvent) -> bool:
            return True

        def init(self) -> dict[str, Any]:
            return {}

    with pytest.raises(TypeError, match="must return a dict"):
        StreamMux([NotADict()])
    with pytest.raises(ValueError, match=r"conflict.*'values'.*ValuesTransformer"):
        StreamMux(factories=[ValuesTransformer, Values])
    with pytest.raises(RuntimeError, match="requires an async run"):
        StreamMux([AsyncOnly()])
    StreamMux([AsyncOnly()], is_async=True)


def test_before_builtins_transformers_run_first() -> None:
    order: list[str] = []

    class Named(StreamTransformer):
        label = ""

        def init(self) -> dict[str, Any]:
            return {}

        def process(self, event: ProtocolEvent) -> bool:
            order.append(self.label)
            return True

    class Late(Named):
        label = "late"

    class Early(Named):
        label = "early"
        before_builtins = True

    mux = StreamMux(factories=[Late, Early])
    mux.push(_event("values"))
    assert order == ["early", "late"]


def test_close_finalizes_everyone_and_reports_the_first_error() -> None:
    class Broken(_Recorder):
        def finalize(self) -> None:
            raise RuntimeError("finalize broke")

    good = _Recorder()
    channel: StreamChannel[int] = StreamChannel()

    class Owner(StreamTransformer):
        def init(self) -> dict[str, Any]:
            return {"numbers": channel}

    mux = StreamMux([Broken(), good, Owner()])
    with pytest.raises(RuntimeError, match="finalize broke"):
        mux.close()
    assert good.finalized and channel._closed and mux._events._closed


def test_fail_reaches_transformers_and_channels() -> None:
    class Broken(_Recorder):
        def fail(self, err: BaseException) -> None:
            raise RuntimeError("ignored")

    good = _Recorder()
    mux = StreamMux([Broken(), good])
    err = ValueError("boom")
    mux.fail(err)
    assert good.failed is err
    with pytest.raises(ValueError, match="boom"):
        list(mux._events)


def test_convert_to_protocol_event() -> None:
    event = convert_to_protocol_event({"type": "values", "ns": ("a:1",), "data": {"k": 1}, "interrupts": ()})
    assert event["method"] == "values"
    assert event["params"]["namespace"] == ["a:1"]
    assert event["params"]["interrupts"] == ()
    assert isinstance(event["params"]["timestamp"], int)
    assert "interrupts" not in convert_to_protocol_event({"type": "custom", "ns": (), "data": 1})["params"]


def test_schedule_needs_a_running_loop() -> None:
    async def work() -> None:
        return None

    coro = work()
    try:
        with pytest.raises(RuntimeError, match="requires a running event loop"):
            _Recorder().schedule(coro)
    finally:
        coro.close()


async def test_async_lane_awaits_aprocess_and_joins_scheduled_work() -> None:
    order: list[str] = []

    class Redact(StreamTransformer):
        requires_async = True

        def init(self) -> dict[str, Any]:
            return {}

        async def aprocess(self, event: ProtocolEvent) -> bool:
            await asyncio.sleep(0.01)
            event["params"]["data"]["redacted"] = True
            order.append("redact")
            return True

    class Later(StreamTransformer):
        def __init__(self, scope: tuple[str, ...] = ()) -> None:
            super().__init__(scope)
            self.log: StreamChannel[str] = StreamChannel()

        def init(self) -> dict[str, Any]:
            return {"later": self.log}

        def process(self, event: ProtocolEvent) -> bool:
            order.append(f"see:{event['params']['data'].get('redacted')}")

            async def work() -> None:
                await asyncio.sleep(0.01)
                self.log.push("done")

            self.schedule(work())
            return True

    later = Later()
    mux = StreamMux([Redact(), later], is_async=True)
    cursor = later.log.__aiter__()
    await mux.apush(_event("values", {}))
    await mux.aclose()
    assert order == ["redact", "see:True"]
    assert [x async for x in cursor] == ["done"]


async def test_scheduled_errors_log_or_raise() -> None:
    class Strict(StreamTransformer):
        on_error = "raise"

        def init(self) -> dict[str, Any]:
            return {}

        def process(self, event: ProtocolEvent) -> bool:
            async def work() -> None:
                raise ValueError("strict boom")

            self.schedule(work(), on_error=self.on_error)  # type: ignore[arg-type]
            return True

    class Lenient(Strict):
        on_error = "log"

    quiet = StreamMux([Lenient()], is_async=True)
    await quiet.apush(_event("values"))
    await quiet.aclose()
    strict = StreamMux([Strict()], is_async=True)
    await strict.apush(_event("values"))
    with pytest.raises(ValueError, match="strict boom"):
        await strict.aclose()


async def test_afail_cancels_pending_scheduled_work() -> None:
    cancelled = asyncio.Event()

    class Slow(StreamTransformer):
        def init(self) -> dict[str, Any]:
            return {}

        def process(self, event: ProtocolEvent) -> bool:
            async def work() -> None:
                try:
                    await asyncio.sleep(5)
                except asyncio.CancelledError:
                    cancelled.set()
                    raise

            self.schedule(work())
            return True

    mux = StreamMux([Slow()], is_async=True)
    await mux.apush(_event("values"))
    await asyncio.sleep(0)
    await mux.afail(RuntimeError("run died"))
    assert cancelled.is_set()
