from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import os
import subprocess
import sys
import zlib
from decimal import Decimal
from typing import Any, NamedTuple

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from plait.checkpoint import _allow
from plait.checkpoint import serde as serde_mod
from plait.checkpoint.serde import Serializer
from plait.errors import SerializationError
from plait.types import Command, Interrupt, Overwrite, Send


class Color(enum.Enum):
    RED = "red"
    BLUE = 2


@dataclasses.dataclass
class Point:
    x: int
    y: list[int] = dataclasses.field(default_factory=list)


class Model(pydantic.BaseModel):
    name: str
    tags: set[str] = set()
    when: dt.datetime | None = None


class Pair(NamedTuple):
    a: int
    b: str


class NotAllowed(pydantic.BaseModel):
    v: int


S = Serializer(allowed=[Color, Point, Model, Pair])


def roundtrip(value, ser=S):
    return ser.loads(ser.dumps(value))


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary()
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.uuids()
    | st.datetimes(timezones=st.just(dt.timezone.utc))
    | st.datetimes()
    | st.dates()
    | st.times()
    | st.timedeltas()
    | st.sampled_from(list(Color))
)
hashables = st.recursive(scalars, lambda c: st.tuples(c, c) | st.frozensets(c, max_size=3), max_leaves=8)
values = st.recursive(
    scalars,
    lambda c: (
        st.lists(c, max_size=4)
        | st.tuples(c, c)
        | st.dictionaries(st.text(), c, max_size=4)
        | st.dictionaries(hashables, c, max_size=3)
        | st.sets(hashables, max_size=3)
        | st.builds(Point, st.integers(), st.lists(st.integers(), max_size=3))
        | st.builds(Pair, st.integers(), st.text())
        | st.builds(Send, st.text(), c)
        | st.builds(Overwrite, c)
        | st.builds(Interrupt, c, st.text())
    ),
    max_leaves=20,
)


def as_read(value: Any) -> Any:
    """``value`` as it reads back: tuples become lists (MessagePack has none, as with LangGraph), except
    dict keys and set members, which stay tuples."""
    kind = type(value)
    if kind is tuple or kind is list:
        return [as_read(v) for v in value]
    if kind is dict:
        return {k: as_read(v) for k, v in value.items()}
    if kind is Send:
        return Send(value.node, as_read(value.arg))
    if kind is Overwrite:
        return Overwrite(as_read(value.value))
    if kind is Interrupt:
        return Interrupt(as_read(value.value), value.id)
    return value


@settings(max_examples=300, deadline=None)
@given(values)
def test_roundtrip_property(value):
    assert roundtrip(value) == as_read(value)


messages = st.one_of(
    st.builds(HumanMessage, content=st.text(), id=st.uuids().map(str)),
    st.builds(SystemMessage, content=st.text()),
    st.builds(
        AIMessage,
        content=st.text(),
        id=st.text(min_size=1),
        tool_calls=st.lists(
            st.builds(
                lambda n, a, i: {"name": n, "args": a, "id": i, "type": "tool_call"},
                st.text(),
                st.dictionaries(st.text(), st.integers()),
                st.text(),
            ),
            max_size=2,
        ),
        additional_kwargs=st.dictionaries(st.text(), st.integers() | st.text(), max_size=2),
    ),
    st.builds(ToolMessage, content=st.text(), tool_call_id=st.text()),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(messages, max_size=6))
def test_messages_roundtrip_property(msgs):
    out = roundtrip(msgs)
    assert out[:2] == msgs[:2] and out[3:] == msgs[3:]
    assert [type(m) for m in out] == [type(m) for m in msgs]


def test_all_message_types_keep_fields():
    msgs = [
        HumanMessage("hi", id="1", name="bob", additional_kwargs={"k": {1: "int key"}}),
        AIMessage(
            "",
            id="2",
            tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c1"}],
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
            response_metadata={"model": "x"},
        ),
        ToolMessage("r", tool_call_id="c1", artifact=(1, 2), status="error"),
        SystemMessage("s"),
        RemoveMessage(id="x"),
        AIMessageChunk("c"),
        ChatMessage("x", role="r"),
        FunctionMessage("f", name="n"),
    ]
    out = roundtrip(msgs)
    assert out[:2] == msgs[:2] and out[3:] == msgs[3:]
    assert out[1].tool_calls[0]["args"] == {"a": 1}
    assert out[0].additional_kwargs == {"k": {1: "int key"}}
    assert out[2].artifact == [1, 2]  # as with LangGraph: MessagePack has no tuple


def test_pydantic_and_plait_types():
    when = dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc)
    value = {
        "m": Model(name="a", tags={"x"}, when=when),
        "cmd": Command(update={"a": 1}, goto=[Send("n", 1)]),
        "big": 2**100,
        "neg": -(2**70),
        "dec": Decimal("1.10"),
    }
    assert roundtrip(value) == value


def test_unknown_class_refused_on_write_with_fix():
    with pytest.raises(SerializationError, match=r"NotAllowed.*allow\("):
        S.dumps({"a": [NotAllowed(v=1)]})


def test_unknown_class_refused_on_read():
    data = Serializer(allowed=[NotAllowed]).dumps(NotAllowed(v=1))
    with pytest.raises(SerializationError, match="NotAllowed"):
        Serializer().loads(data)


def test_module_allow_and_global_allow(monkeypatch):
    monkeypatch.setattr(_allow, "_GLOBAL_NAMES", set())
    monkeypatch.setattr(_allow, "_GLOBAL_CLASSES", {})
    with pytest.raises(SerializationError):
        Serializer().dumps(NotAllowed(v=1))
    serde_mod.allow(__name__)
    assert roundtrip(NotAllowed(v=3), Serializer()) == NotAllowed(v=3)


def test_unserializable_names_type():
    with pytest.raises(SerializationError, match="builtins.object"):
        S.dumps([object()])
    with pytest.raises(SerializationError, match="function"):
        S.dumps({"f": lambda: 1})


def test_corrupt_bytes_raise():
    with pytest.raises(SerializationError):
        S.loads(b"\xc1\xff\x00")
    good = S.dumps([Point(1)])
    with pytest.raises(SerializationError):
        S.loads(good[:-3])


def test_missing_class_raises():
    data = S.dumps(Point(1)).replace(b"Point", b"Pzint")
    with pytest.raises(SerializationError, match="Pzint"):
        S.loads(data)


def _legacy(data: bytes) -> bytes:
    """The same value as plait wrote it before deflated payloads carried their length."""
    if data[:2] != b"\xc1\xff":
        return data
    old = zlib.compressobj(1, zlib.DEFLATED, -15)
    return b"\xc1" + old.compress(zlib.decompress(data[6:], -15)) + old.flush()


nested = st.recursive(
    scalars | messages | st.text(min_size=90, max_size=300),
    lambda c: (
        st.lists(c, max_size=4)
        | st.tuples(c, c)
        | st.dictionaries(st.text(max_size=8), c, max_size=4)
        | st.sets(hashables, max_size=3)
        | st.builds(Send, st.text(max_size=5), c)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(nested)
def test_roundtrip_property_nested_messages_every_format(value):
    for ser in (S, Serializer(allowed=[Color, Point, Model, Pair], compress=False)):
        data, read = ser.dumps(value), as_read(value)
        assert ser.loads(data) == read
        assert ser.loads(_legacy(data)) == read  # rows written by earlier versions keep reading
        assert Serializer(allowed=[Color]).loads(data) == read  # a fresh reader needs only the user's enum


def test_default_serializer_reads_what_it_writes_for_registered_only_names():
    assert Serializer().is_allowed("langchain_core.messages.ai", "AIMessage")
    assert Serializer().is_allowed("plait.types", "Send")
    assert not Serializer().is_allowed("plait.types", "RetryPolicy")
    assert not Serializer().is_allowed("langchain_core.runnables.base", "RunnableLambda")
    assert Serializer(allowed=[Point]).is_allowed(__name__, "Point")
    assert Serializer(allowed=["myapp.models"]).is_allowed("myapp.models.sub", "Order")


def _known_message(number: int, fields: object) -> bytes:
    """A stored message record as plait writes it: class number and fields."""
    import ormsgpack

    from plait.checkpoint._ext import KNOWN_PYDANTIC

    return ormsgpack.packb(ormsgpack.Ext(KNOWN_PYDANTIC, ormsgpack.packb([number, fields])))


def test_messages_read_back_without_validation_equal_and_with_the_same_fields_set() -> None:
    from langchain_core.messages import AIMessageChunk, ToolMessage

    messages = [
        AIMessage(
            "",
            id="a",
            tool_calls=[{"name": "f", "args": {"q": 1}, "id": "c1"}],
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ),
        ToolMessage("r", tool_call_id="c1", artifact={"k": [1]}),
        AIMessageChunk("part", id="z"),
        HumanMessage([{"type": "text", "text": "hi"}], name="bob", custom="kept"),
    ]
    out = Serializer().loads(Serializer().dumps(messages))
    assert out == messages
    for got, want in zip(out, messages, strict=True):
        assert type(got) is type(want) and got.model_fields_set == want.model_fields_set
        assert repr(got) == repr(want)
    assert out[0].tool_calls[0]["args"] == {"q": 1} and out[3].custom == "kept"
    out[0].additional_kwargs["x"] = 1  # defaults are fresh objects per message
    assert Serializer().loads(Serializer().dumps(messages))[0].additional_kwargs == {}


def test_message_records_that_are_not_plain_fields_are_validated() -> None:
    with pytest.raises(SerializationError, match="Cannot rebuild stored"):
        Serializer().loads(_known_message(0, {"content": 5}))  # HumanMessage with int content
    with pytest.raises(SerializationError):
        Serializer().loads(_known_message(0, {"id": "x"}))  # content missing
    assert Serializer().loads(_known_message(0, {"content": "ok", "id": "i"})) == HumanMessage("ok", id="i")


def test_a_message_record_with_a_non_str_key_is_refused() -> None:
    """The fast path assembles a stored message's fields without checking each key: it relies on the
    decoder refusing any map key that is not a str (a record plait never writes)."""
    import ormsgpack

    from plait.checkpoint._ext import KNOWN_PYDANTIC

    fields = ormsgpack.packb([0, {"content": "ok", 1: "x"}], option=ormsgpack.OPT_NON_STR_KEYS)
    with pytest.raises(SerializationError):
        Serializer().loads(ormsgpack.packb(ormsgpack.Ext(KNOWN_PYDANTIC, fields)))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=96, max_value=70_000),
    st.sampled_from([b"ab", b"plait ", bytes(range(256)), b"\x00"]),
    st.integers(min_value=0, max_value=2**32),
)
def test_deflated_payloads_of_every_window_size_inflate_back(size: int, alphabet: bytes, seed: int) -> None:
    """The compressor sizes its window to the payload; the reader's 32 KiB window inflates every size."""
    import random

    from plait.checkpoint._deflate import DEFLATED, deflate, inflate

    rnd = random.Random(seed)  # (not hypothesis' randoms: a draw each byte overran its data buffer)
    data = bytes(rnd.choice(alphabet) for _ in range(size))
    packed = deflate(data)
    if packed != data:  # (random bytes may start with the marker: only MessagePack cannot)
        assert packed.startswith(DEFLATED)
        assert len(packed) < size
        assert inflate(packed, size) == data


def test_messages_are_assembled_as_validation_builds_them_unless_a_class_makes_its_own() -> None:
    """The fast path makes a message with ``object.__new__`` and sets pydantic's slots; a class
    with a ``__new__`` of its own is left to validation (``construct`` answers ``None``)."""
    from langchain_core.messages import AIMessage, HumanMessage

    from plait.checkpoint.serde._construct import construct

    fields = {"content": "hi", "id": "m1", "name": "n"}
    for cls in (AIMessage, HumanMessage):
        built = construct(cls, fields)
        assert built == cls(**fields) and built.model_fields_set == set(fields)
        assert (
            built.additional_kwargs == {} and built.additional_kwargs is not cls(**fields).additional_kwargs
        )

    class Counted(HumanMessage):
        def __new__(cls, *args: Any, **kwargs: Any) -> Counted:
            return super().__new__(cls)

    assert construct(Counted, fields) is None


_ENCODE_IN_CHILD = """
import sys
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from plait.checkpoint.serde import Serializer
values = [
    AIMessage("x" * 300, id="a1", name="bot", tool_calls=[{"name": "f", "args": {"q": 1}, "id": "c1"}]),
    HumanMessage("hello", id="h1", additional_kwargs={"k": "v"}),
    {"messages": [ToolMessage("done", tool_call_id="c1", id="t1", status="error")]},
]
sys.stdout.write(b"".join(Serializer().dumps(v) for v in values).hex())
"""


def test_a_message_encodes_to_the_same_bytes_in_every_process() -> None:
    # a model's set fields are a set, whose order follows string hashing: it changes with PYTHONHASHSEED
    outputs = {
        subprocess.run(
            [sys.executable, "-c", _ENCODE_IN_CHILD],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in (1, 2, 3, 4)
    }
    assert len(outputs) == 1
