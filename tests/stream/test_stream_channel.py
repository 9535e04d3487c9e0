"""StreamChannel: binding, single subscriber, drain-on-consume, close/fail, fan-out."""

from __future__ import annotations

import pytest

from plait.stream import StreamChannel
from plait.stream._mux import StreamMux


def _bound(is_async: bool = False) -> StreamChannel[int]:
    channel: StreamChannel[int] = StreamChannel()
    channel._bind(is_async=is_async)
    return channel


def test_items_pushed_after_subscribing_are_drained_in_order() -> None:
    channel = _bound()
    cursor = iter(channel)
    for i in range(3):
        channel.push(i)
    channel.close()
    assert list(cursor) == [0, 1, 2]
    assert len(channel._items) == 0


def test_pushes_before_subscription_are_dropped() -> None:
    channel = _bound()
    channel.push(1)
    cursor = iter(channel)
    channel.push(2)
    channel.close()
    assert list(cursor) == [2]


def test_one_subscriber_only() -> None:
    channel = _bound()
    iter(channel)
    with pytest.raises(RuntimeError, match="already has a subscriber"):
        iter(channel)


def test_fail_raises_after_buffered_items() -> None:
    channel = _bound()
    cursor = iter(channel)
    channel.push(1)
    channel.fail(ValueError("late"))
    seen = []
    with pytest.raises(ValueError, match="late"):
        for item in cursor:
            seen.append(item)
    assert seen == [1]


def test_push_after_close_or_fail_raises_and_close_is_idempotent() -> None:
    channel = _bound()
    channel.close()
    channel.close()
    with pytest.raises(RuntimeError, match="closed StreamChannel"):
        channel.push(1)
    failed = _bound()
    failed.fail(ValueError("x"))
    with pytest.raises(RuntimeError, match="closed StreamChannel"):
        failed.push(1)


def test_binding_rules() -> None:
    unbound: StreamChannel[int] = StreamChannel()
    with pytest.raises(TypeError, match="has not been bound"):
        iter(unbound)
    channel = _bound()
    with pytest.raises(RuntimeError, match="already bound"):
        channel._bind(is_async=True)
    with pytest.raises(TypeError, match="bound to sync mode"):
        channel.__aiter__()
    with pytest.raises(TypeError, match="bound to async mode"):
        iter(_bound(is_async=True))


@pytest.mark.parametrize("maxlen", [0, -1, True, 1.5])
def test_invalid_maxlen(maxlen: object) -> None:
    with pytest.raises(ValueError, match="positive int or None"):
        StreamChannel(maxlen=maxlen)  # type: ignore[arg-type]


def test_maxlen_keeps_the_newest_items() -> None:
    channel: StreamChannel[int] = StreamChannel(maxlen=2)
    channel._bind(is_async=False)
    cursor = iter(channel)
    for i in range(5):
        channel.push(i)
    channel.close()
    assert list(cursor) == [3, 4]


def test_wired_channel_forwards_every_push() -> None:
    seen: list[str] = []
    channel: StreamChannel[str] = StreamChannel("named")
    channel._bind(is_async=False)
    channel._wire(seen.append)
    channel.push("unsubscribed")
    cursor = iter(channel)
    channel.push("subscribed")
    channel.close()
    assert seen == ["unsubscribed", "subscribed"]
    assert list(cursor) == ["subscribed"]


def test_tee_fans_out_and_shares_errors() -> None:
    channel = _bound()
    a, b = channel.tee(2)
    channel.push(1)
    channel.push(2)
    channel.fail(KeyError("gone"))
    assert next(a) == 1
    with pytest.raises(KeyError):
        list(a)
    assert next(b) == 1
    assert next(b) == 2
    with pytest.raises(KeyError):
        next(b)


def test_empty_channel_asks_its_mux_for_more() -> None:
    mux = StreamMux()
    channel: StreamChannel[int] = StreamChannel()
    mux.adopt(channel)
    pending = [1, 2]

    def pump() -> bool:
        if not pending:
            mux.close()
            return False
        channel.push(pending.pop(0))
        return True

    mux.bind_pump(pump)
    assert list(channel) == [1, 2]


async def test_async_iteration_and_atee() -> None:
    channel = _bound(is_async=True)
    a, b = channel.atee(2)
    for i in range(3):
        channel.push(i)
    channel.close()
    assert [x async for x in a] == [0, 1, 2]
    assert [x async for x in b] == [0, 1, 2]


async def test_async_fail_after_items() -> None:
    channel = _bound(is_async=True)
    cursor = channel.__aiter__()
    channel.push(7)
    channel.fail(RuntimeError("boom"))
    seen = []
    with pytest.raises(RuntimeError, match="boom"):
        async for item in cursor:
            seen.append(item)
    assert seen == [7]
