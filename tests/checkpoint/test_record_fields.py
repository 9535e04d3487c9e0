"""InMemorySaver's compact records: a timestamp is kept as microseconds only when that reads back as
the very same text, and the checkpoint fields read back as they were given. Checkpoint times are
written as datetime writes them, and ids sort after the id they follow."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from plait.checkpoint._make import now_iso
from plait.checkpoint._memory_fields import pack_fields, pack_ts, unpack_fields, unpack_ts

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _texts() -> list[str]:
    rng = random.Random(31)
    out = [now_iso() for _ in range(50)]
    for _ in range(3000):
        when = _EPOCH + timedelta(microseconds=rng.randrange(-(10**15), 2 * 10**17))
        out += [
            when.isoformat(),
            when.replace(microsecond=0).isoformat(),  # no fraction
            when.isoformat().replace("T", " "),  # another separator
            when.astimezone(timezone(timedelta(hours=2))).isoformat(),
            when.replace(tzinfo=None).isoformat(),  # naive
        ]
    return out


@pytest.mark.parametrize(
    "text",
    [
        "2024-W01-1T00:00:00.123456+00:00",  # an ISO week date of the same length
        "2024-01-01T00:00:00.000000+00:00",  # a zero fraction is not written back
        "2024-01-01T00:00:00.12345\u0666+00:00",  # a non-ASCII digit
        "2024-13-01T00:00:00.123456+00:00",  # no such month
        "x" * 32,
        "",
    ],
)
def test_odd_timestamps_are_kept_as_text(text: str) -> None:
    assert pack_ts(text) == text


def test_a_timestamp_is_packed_only_when_it_reads_back_the_same() -> None:
    for text in _texts():
        packed = pack_ts(text)
        if type(packed) is int:
            assert unpack_ts(packed) == text
        else:
            assert packed == text
            when = datetime.fromisoformat(text)
            micros = (when - _EPOCH) // timedelta(microseconds=1) if when.tzinfo else None
            assert micros is None or unpack_ts(micros) != text  # packing would have changed it


def test_now_iso_is_packed() -> None:
    stamp = now_iso()
    if stamp[20:26] != "000000" and "." in stamp:
        assert type(pack_ts(stamp)) is int


@pytest.mark.parametrize(
    "extra",
    [{}, {"v": 2}, {"deferred": ["a"]}, {"v": 2, "own": {"x": 1}}],
)
def test_fields_read_back_as_given(extra: dict[str, object]) -> None:
    checkpoint = {
        "v": 1,
        "id": "x",
        "ts": "t",
        "channel_values": {"a": 1},
        "channel_versions": {"a": 3},
        "updated_channels": ["a"],
        "next": ["n"],
        "sends": [],
        "barriers": {},
        "interrupts": [],
        **extra,
    }
    fields = unpack_fields(pack_fields(checkpoint))
    assert fields == {k: v for k, v in checkpoint.items() if k not in ("id", "ts", "channel_values")}
    assert pack_fields({"v": 1}) == []  # every field at its default: nothing stored


def test_now_iso_writes_the_time_as_datetime_does() -> None:
    for _ in range(2000):
        before = datetime.now(timezone.utc)
        text = now_iso()
        after = datetime.now(timezone.utc)
        when = datetime.fromisoformat(text)
        assert when.isoformat() == text and text.endswith("+00:00")
        assert before - timedelta(microseconds=1) <= when <= after


def test_checkpoint_ids_sort_after_the_id_they_follow() -> None:
    from plait.checkpoint._locks import stamp_of
    from plait.checkpoint._make import new_checkpoint_id

    made = new_checkpoint_id()
    chained = [made]
    for _ in range(100):  # after the id made just before (remembered), or an older one (parsed)
        chained.append(new_checkpoint_id(after=chained[-1]))
        chained.append(new_checkpoint_id(after=chained[-3 if len(chained) > 2 else -1]))
    assert chained == sorted(chained) and len(set(chained)) == len(chained)
    future = "0fffffff-ffff-7fff-bfff-ffffffffffff"  # another process's clock, far ahead
    ahead = new_checkpoint_id(after=future)
    assert ahead > future and stamp_of(ahead) == stamp_of(future) + 1
    assert new_checkpoint_id(after=ahead) > ahead


def test_a_packed_timestamp_reads_back_as_datetime_writes_it() -> None:
    rng = random.Random(7)
    micros = [rng.randrange(-62135596800000000, 253402300799999999) for _ in range(5000)]
    micros += [0, -1, 1, 10**6, -(10**6), 1_700_000_000_000_000, 1_700_000_000_000_001]
    for value in micros:
        expected = (_EPOCH + timedelta(microseconds=value)).isoformat()
        assert unpack_ts(value) == expected  # (twice: the second read comes from the cached second)
        assert unpack_ts(value) == expected
