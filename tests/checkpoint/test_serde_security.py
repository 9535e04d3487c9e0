"""Untrusted checkpoint bytes: nothing but registered data classes is rebuilt, inflating is bounded, decoding strict.

Every test plants bytes an attacker (or a disk fault) could have put into a row, built with ormsgpack
directly, and checks that reading them raises ``SerializationError`` and runs nothing.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import importlib
import io
import pkgutil
import sqlite3
import subprocess
import sys
import tracemalloc
import types
import uuid
import warnings
import zlib
from pathlib import Path
from typing import Any, NamedTuple

import ormsgpack
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from plait.checkpoint import _ext as codes
from plait.checkpoint.serde import Serializer
from plait.checkpoint.sqlite import SqliteSaver
from plait.errors import SerializationError
from plait.graph import END, START, MessagesState, StateGraph

ENUM, DATACLASS, PYDANTIC, NAMEDTUPLE = (
    codes.ENUM,
    codes.DATACLASS,
    codes.PYDANTIC,
    codes.NAMEDTUPLE,
)
KNOWN_PYDANTIC, KNOWN_DATACLASS = codes.KNOWN_PYDANTIC, codes.KNOWN_DATACLASS
CLASS_CODES = (ENUM, DATACLASS, PYDANTIC, NAMEDTUPLE)


def ext(code: int, payload: Any) -> bytes:
    """A stored value that is one extension record (what a planted row looks like); any code, even negative."""
    body = ormsgpack.packb(payload)
    return b"\xc9" + len(body).to_bytes(4, "big") + code.to_bytes(1, "big", signed=True) + body


def record(code: int, module: str, qualname: str, body: Any) -> bytes:
    return ext(code, [module, qualname, body])


def walk(module: str, qualname: str) -> Any:
    """What the old reader did: import the module, then getattr along the qualname."""
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def path_to(target: type, roots: list[str], depth: int = 5) -> tuple[str, str]:
    """A ``(module, attribute path)`` from one of ``roots`` that reaches ``target`` by attribute access."""
    for root in roots:
        start = importlib.import_module(root)
        queue, seen = collections.deque([(start, "")]), {id(start)}
        while queue:
            obj, path = queue.popleft()
            if path.count(".") >= depth:
                continue
            for name, value in list(vars(obj).items()):
                here = f"{path}.{name}" if path else name
                if value is target:
                    return root, here
                if isinstance(value, types.ModuleType) and id(value) not in seen:
                    seen.add(id(value))
                    queue.append((value, here))
    raise AssertionError(f"no attribute path from {roots} to {target}")


# -- 1. a stored row cannot run code ----------------------------------------------------------------

PLAIT_ROOTS = [
    "plait.checkpoint._lease",
    "plait.pregel._arun",
    "plait.checkpoint.sqlite._saver",
    "plait.types",
]
ISSUE_PATH = ("plait.checkpoint._lease", "asyncio.subprocess.subprocess.Popen")
"""The record of the issue: getattr through what ``_lease`` imports reaches ``subprocess.Popen``."""
try:
    _ISSUE_REACHES = walk(*ISSUE_PATH) is subprocess.Popen
except AttributeError:
    _ISSUE_REACHES = False
if not _ISSUE_REACHES:  # _lease stopped importing asyncio: use another path found by search instead
    ISSUE_PATH = path_to(subprocess.Popen, PLAIT_ROOTS)


def _gadgets(tmp_path: Path) -> list[tuple[str, int, str, str, Any, Path]]:
    """Records that, with attribute walking, would start a process / create a file."""
    out = []
    places = {
        "popen": [ISSUE_PATH, path_to(subprocess.Popen, PLAIT_ROOTS)],
        "fileio": [
            path_to(io.FileIO, PLAIT_ROOTS),
            path_to(io.FileIO, ["langchain_core.messages.ai", "langchain_core.messages.base"]),
        ],
        "sqlite": [
            path_to(sqlite3.Connection, ["plait.checkpoint.sqlite._saver", "plait.checkpoint.sqlite"])
        ],
    }
    for kind, paths in places.items():
        for n, (module, qualname) in enumerate(paths):
            assert walk(module, qualname) in (subprocess.Popen, io.FileIO, sqlite3.Connection)
            for code in CLASS_CODES:
                marker = tmp_path / f"{kind}-{n}-{code}"
                if kind == "popen":
                    args = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
                    body: Any = {ENUM: args, NAMEDTUPLE: [args]}.get(code, {"args": args})
                elif kind == "fileio":
                    body = {ENUM: str(marker), NAMEDTUPLE: [str(marker), "w"]}.get(
                        code, {"file": str(marker), "mode": "w"}
                    )
                else:
                    body = {ENUM: str(marker), NAMEDTUPLE: [str(marker)]}.get(code, {"database": str(marker)})
                out.append((kind, code, module, qualname, body, marker))
    return out


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The arguments of every process started (through ``subprocess.Popen``) while the test runs:
    a test asserts none was, at once, instead of waiting for a marker such a process would write."""
    calls: list[Any] = []
    execute = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def spy(self: Any, args: Any, *rest: Any) -> Any:
        calls.append(args)
        return execute(self, args, *rest)

    monkeypatch.setattr(subprocess.Popen, "_execute_child", spy)
    return calls


def test_popen_fileio_and_sqlite_records_are_refused_and_run_nothing(
    tmp_path: Path, spawned: list[Any]
) -> None:
    gadgets = _gadgets(tmp_path)
    for kind, code, module, qualname, body, marker in gadgets:
        data = record(code, module, qualname, body)
        for ser in (
            Serializer(),
            Serializer(compress=False),
            Serializer(allowed=["plait", "langchain_core"]),
        ):
            with pytest.raises(SerializationError, match="not allowed|not a class defined"):
                ser.loads(data)
            nested = ormsgpack.packb(
                {
                    "pad": "x" * 200,
                    "messages": [ormsgpack.Ext(code, ormsgpack.packb([module, qualname, body]))],
                }
            )
            packer = zlib.compressobj(1, zlib.DEFLATED, -15)
            deflated = b"\xc1" + packer.compress(nested) + packer.flush()
            for wrapped in (nested, deflated):  # inside plain data, inside a (pre-header) deflated payload
                with pytest.raises(SerializationError):
                    ser.loads(wrapped)
        assert not marker.exists(), (kind, code)
    assert spawned == []  # no process started (it would write its marker later)
    assert [m for *_, m in gadgets if m.exists()] == []


def test_allowing_a_namespace_does_not_open_what_its_modules_import(tmp_path: Path) -> None:
    """Even with plait and langchain_core allowed wholesale, a class is found only where it is defined."""
    ser = Serializer(allowed=["plait", "langchain_core", "plait.checkpoint._lease"])
    marker = tmp_path / "m"
    for qualname in (
        "subprocess.Popen",
        "asyncio.subprocess.subprocess.Popen",
        "os.system",
        "socket.socket",
        "LeaseSql.__class__",
        "LeaseSql._make.__globals__.sys",
    ):
        with pytest.raises(SerializationError):
            ser.loads(
                record(DATACLASS, "plait.checkpoint._lease", qualname, {"args": ["touch", str(marker)]})
            )
    # allowing a dotted path makes it rebuildable only if it names a data class; os.system is a function
    with pytest.raises(SerializationError):
        Serializer(allowed=["os.system"]).loads(record(ENUM, "os", "system", "touch " + str(marker)))
    assert not marker.exists()


@dataclasses.dataclass
class Outer:
    x: int

    @dataclasses.dataclass
    class Inner:
        y: int


def test_exact_names_nested_classes_and_registered_local_classes_still_work() -> None:
    ser = Serializer(allowed=[__name__])
    assert ser.loads(ser.dumps([Outer(1), Outer.Inner(2)])) == [Outer(1), Outer.Inner(2)]

    @dataclasses.dataclass
    class Local:
        z: int

    with pytest.raises(SerializationError, match="Local"):  # refused at write time: it could not be read back
        ser.dumps(Local(1))
    ser.allow(Local)
    assert ser.loads(ser.dumps(Local(3))) == Local(3)
    with pytest.raises(SerializationError):  # a serializer that did not register the local class refuses it
        Serializer().loads(ser.dumps(Local(3)))


class Shade(enum.Enum):
    DARK = 1


class NotData:
    def __init__(self, **kwargs: Any) -> None:
        raise AssertionError("must never be constructed")


def test_record_kind_must_match_the_class() -> None:
    ser = Serializer(allowed=[__name__])
    for code, qualname, body in [
        (ENUM, "Outer", {"x": 1}),
        (PYDANTIC, "Outer", {"x": 1}),
        (NAMEDTUPLE, "Outer", [1]),
        (DATACLASS, "Shade", {}),
        (DATACLASS, "NotData", {}),
        (PYDANTIC, "NotData", {}),
        (ENUM, "NotData", 1),
        (NAMEDTUPLE, "NotData", []),
    ]:
        with pytest.raises(SerializationError, match="is not"):
            ser.loads(record(code, __name__, qualname, body))
    with pytest.raises(SerializationError):  # plait.types.Send is a dataclass, not a pydantic model
        ser.loads(ext(KNOWN_PYDANTIC, [codes.KNOWN_INDEX[("plait.types", "Send")], {"node": "a", "arg": 1}]))
    with pytest.raises(SerializationError):
        ser.loads(ext(KNOWN_DATACLASS, [0, {"content": "hi"}]))
    with pytest.raises(SerializationError, match="not allowed"):  # plait data classes are not all rebuilt
        Serializer().loads(record(DATACLASS, "plait.types", "RetryPolicy", {}))


# The search: every class reachable from the modules plait allowed before (all of plait and langchain_core)


def _all_modules() -> dict[str, types.ModuleType]:
    names = {"plait", "langchain_core"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for root in ("plait", "langchain_core"):
            pkg = importlib.import_module(root)
            names.update(
                i.name for i in pkgutil.walk_packages(pkg.__path__, root + ".", onerror=lambda _: None)
            )
        found = {}
        for name in sorted(names):
            try:
                found[name] = importlib.import_module(name)
            except Exception:  # noqa: BLE001, S112 - optional dependencies
                continue
    return found


def _reachable(modules: dict[str, types.ModuleType]) -> dict[type, tuple[str, str]]:
    """Every class reachable by attribute (modules, classes, bases) from ``modules``, with one path to it."""
    classes: dict[type, tuple[str, str]] = {}
    queue = collections.deque((mod, name, "") for name, mod in modules.items())
    seen = {id(m) for m in modules.values()}
    while queue:
        obj, root, path = queue.popleft()
        try:
            space = list(vars(obj).items())
        except TypeError:
            continue
        if isinstance(obj, type):
            space += [(b.__name__, b) for b in obj.__mro__[1:]]
        for name, value in space:
            if (
                not isinstance(name, str)
                or not isinstance(value, (type, types.ModuleType))
                or id(value) in seen
            ):
                continue
            seen.add(id(value))
            here = f"{path}.{name}" if path else name
            if isinstance(value, type):
                classes.setdefault(value, (root, here))
            queue.append((value, root, here))
    return classes


def _natural(cls: type) -> int:
    if isinstance(cls, type) and issubclass(cls, enum.Enum):
        return ENUM
    if isinstance(cls, type) and issubclass(cls, pydantic.BaseModel):
        return PYDANTIC
    if isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return NAMEDTUPLE
    return DATACLASS


INTENDED = {
    "plait.types.Send",
    "plait.types.Overwrite",
    "plait.types.Interrupt",
    "plait.types.Command",
    "langchain_core.documents.base.Document",
    "langchain_core.documents.base.Blob",
    "langchain_core.documents.base.BaseMedia",
    "langchain_core.outputs.generation.Generation",
    "langchain_core.outputs.generation.GenerationChunk",
    "langchain_core.outputs.chat_generation.ChatGeneration",
    "langchain_core.outputs.chat_generation.ChatGenerationChunk",
    "langchain_core.outputs.chat_result.ChatResult",
    "langchain_core.outputs.llm_result.LLMResult",
    "langchain_core.outputs.run_info.RunInfo",
    "langchain_core.agents.AgentAction",
    "langchain_core.agents.AgentActionMessageLog",
    "langchain_core.agents.AgentStep",
    "langchain_core.agents.AgentFinish",
}
"""The data classes a default serializer rebuilds, besides the message classes of langchain_core.messages."""


def _intended(cls: type) -> bool:
    name = f"{cls.__module__}.{cls.__qualname__}"
    return name in INTENDED or (
        cls.__module__.startswith("langchain_core.messages.") and issubclass(cls, BaseMessage)
    )


class _Spy(Serializer):
    """Records which class a record resolves to instead of constructing anything."""

    built: set[type]

    def _build(self, code: int, cls: type, body: Any) -> Any:  # type: ignore[override]
        self.built.add(cls)


def test_search_every_reachable_class_only_intended_data_classes_load() -> None:
    modules = _all_modules()
    assert (
        len(modules) > 100
        and "plait.checkpoint._lease" in modules
        and "langchain_core.runnables.base" in modules
    )
    classes = _reachable(modules)
    assert {subprocess.Popen, io.FileIO, sqlite3.Connection, pydantic.BaseModel} <= set(classes)
    assert len(classes) > 2000

    records: set[tuple[int, str, str]] = set()
    for cls, (root, path) in classes.items():
        module, qualname = getattr(cls, "__module__", None), getattr(cls, "__qualname__", None)
        if isinstance(module, str) and isinstance(qualname, str):
            records.update((code, module, qualname) for code in CLASS_CODES)  # its own name, every kind
        records.add((_natural(cls), root, path))  # the path it was found by (re-exports, imports of imports)
    for name, mod in modules.items():  # everything one or two attributes away from each module
        for attr, value in list(vars(mod).items()):
            if isinstance(value, type):
                records.add((_natural(value), name, attr))
            elif isinstance(value, types.ModuleType):
                for inner, cls in list(vars(value).items()):
                    if isinstance(cls, type):
                        records.add((_natural(cls), name, f"{attr}.{inner}"))

    spy = _Spy()
    spy.built = set()
    refused = 0
    for code, module, qualname in records:
        try:
            spy.loads(record(code, module, qualname, {} if code != NAMEDTUPLE else []))
        except SerializationError:
            refused += 1
    loaded = spy.built
    unexpected = sorted(f"{c.__module__}.{c.__qualname__}" for c in loaded if not _intended(c))
    assert unexpected == []
    assert refused > len(records) - 200
    names = {f"{c.__module__}.{c.__qualname__}" for c in loaded}
    assert INTENDED <= names  # the search really reached the intended classes (not a vacuous pass)
    assert {"langchain_core.messages.ai.AIMessage", "langchain_core.messages.tool.ToolMessageChunk"} <= names
    for bad in (subprocess.Popen, io.FileIO, sqlite3.Connection):
        assert bad not in loaded


def test_default_write_side_keeps_storing_every_message_and_plait_type() -> None:
    import langchain_core.messages as m

    from plait.types import Command, Interrupt, Overwrite, Send

    ser = Serializer()
    msgs = [
        cls(content="x", **extra)
        for cls, extra in [
            (m.HumanMessage, {}),
            (m.AIMessage, {"tool_calls": [{"name": "f", "args": {}, "id": "1"}]}),
            (m.SystemMessage, {}),
            (m.ToolMessage, {"tool_call_id": "1"}),
            (m.ChatMessage, {"role": "r"}),
            (m.FunctionMessage, {"name": "f"}),
            (m.HumanMessageChunk, {}),
            (m.AIMessageChunk, {}),
            (m.SystemMessageChunk, {}),
            (m.ToolMessageChunk, {"tool_call_id": "1"}),
            (m.ChatMessageChunk, {"role": "r"}),
            (m.FunctionMessageChunk, {"name": "f"}),
        ]
    ] + [m.RemoveMessage(id="x")]
    value = {
        "m": msgs,
        "t": [Send("n", 1), Overwrite([1]), Interrupt("q", "i"), Command(goto="a", update={"k": 1})],
    }
    out = ser.loads(ser.dumps(value))
    assert out == value and [type(x) for x in out["m"]] == [type(x) for x in msgs]
    from langchain_core.agents import AgentAction
    from langchain_core.documents import Document
    from langchain_core.outputs import ChatGeneration

    other = [
        Document("d", metadata={"a": 1}),
        AgentAction("t", {"q": 1}, "log"),
        ChatGeneration(message=msgs[1]),
    ]
    assert ser.loads(ser.dumps(other)) == other


# -- 1b. the same through real SQLite files and real graphs -----------------------------------------


def _echo(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(f"echo {len(state['messages'])}", id=f"ai-{uuid.uuid4().hex[:6]}")]}


def _db(tmp_path: Path) -> str:
    path = str(tmp_path / "app.sqlite")
    with SqliteSaver.from_conn_string(path) as saver:
        graph = (
            StateGraph(MessagesState)
            .add_node("echo", _echo)
            .add_edge(START, "echo")
            .add_edge("echo", END)
            .compile(checkpointer=saver)
        )
        for text in ("hi", "more " * 60):
            graph.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "t"}})
    return path


def _plant(path: str, where: str, value: bytes) -> None:
    conn = sqlite3.connect(path)
    with conn:
        if where == "blobs":
            conn.execute("UPDATE plait_checkpoint_blobs SET value = ?", (value,))
        elif where == "checkpoint":
            conn.execute("UPDATE checkpoints SET checkpoint = ?", (value,))
        elif where == "metadata":
            conn.execute("UPDATE checkpoints SET metadata = ?", (value,))
        else:
            head = conn.execute("SELECT MAX(checkpoint_id) FROM checkpoints").fetchone()[0]
            conn.execute(
                "INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, "
                "channel, task_path, value) VALUES ('t', '', ?, 'task', 0, 'messages', '', ?)",
                (head, value),
            )
    conn.close()


@pytest.mark.parametrize("where", ["blobs", "checkpoint", "metadata", "writes"])
def test_planted_popen_row_in_a_real_sqlite_file_is_refused_by_get_state_history_and_invoke(
    tmp_path: Path, where: str, spawned: list[Any]
) -> None:
    path = _db(tmp_path)
    marker = tmp_path / "pwned"
    args = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    evil = record(DATACLASS, *ISSUE_PATH, {"args": args})
    if where in ("checkpoint", "metadata"):  # these rows are maps: put the record inside one
        evil = ormsgpack.packb(
            {"a": ormsgpack.Ext(DATACLASS, ormsgpack.packb([*ISSUE_PATH, {"args": args}]))}
        )
    _plant(path, where, evil)
    config = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(path) as saver:
        graph = (
            StateGraph(MessagesState)
            .add_node("echo", _echo)
            .add_edge(START, "echo")
            .add_edge("echo", END)
            .compile(checkpointer=saver)
        )
        with pytest.raises(SerializationError, match="Popen"):
            graph.get_state(config)
        with pytest.raises(SerializationError, match="Popen"):
            list(graph.get_state_history(config))
        with pytest.raises(SerializationError, match="Popen"):
            graph.invoke({"messages": [HumanMessage("again")]}, config)
        with pytest.raises(SerializationError, match="Popen"):
            saver.get_tuple(config)
    assert spawned == [] and not marker.exists()


@pytest.mark.parametrize("where", ["blobs", "checkpoint"])
def test_junk_over_a_row_is_an_error_not_an_empty_conversation(tmp_path: Path, where: str) -> None:
    path = _db(tmp_path)
    _plant(path, where, b"\x80" + b"\x00 junk that overwrote the row" * 3)  # {} followed by garbage
    with SqliteSaver.from_conn_string(path) as saver:
        graph = (
            StateGraph(MessagesState)
            .add_node("echo", _echo)
            .add_edge(START, "echo")
            .add_edge("echo", END)
            .compile(checkpointer=saver)
        )
        with pytest.raises(SerializationError, match="after the value|corrupt"):
            graph.get_state({"configurable": {"thread_id": "t"}})


# -- 2. bounded inflating ---------------------------------------------------------------------------


def _zeros_deflated(megabytes: int) -> bytes:
    """Raw deflate data of ``megabytes`` MiB of zeros (~1 KiB per MiB), built without inflating anything."""
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = block.compress(b"\0" * 2**20) + block.flush(zlib.Z_FULL_FLUSH)
    tail = zlib.compressobj(9, zlib.DEFLATED, -15)
    tail.compress(b"")
    return chunk * megabytes + tail.flush()


def _bin_header(n: int) -> bytes:
    return b"\xc6" + n.to_bytes(4, "big")  # msgpack bin32: the zeros decode as one bytes value


def _peak_bytes(call: Any) -> int:
    """The most memory Python held at once (``tracemalloc``) while ``call()`` ran: what it inflated."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _refused(ser: Serializer, data: bytes, match: str) -> Any:
    def call() -> None:
        with pytest.raises(SerializationError, match=match):
            ser.loads(data)

    return call


def test_old_format_bomb_is_refused_within_the_cap() -> None:
    raw = _zeros_deflated(1024)  # 1 GiB of zeros in ~1 MB
    assert len(raw) < 2**21
    stream = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = stream.compress(_bin_header(2**30)) + stream.flush(zlib.Z_FULL_FLUSH)
    bomb = b"\xc1" + head + raw
    assert _peak_bytes(_refused(Serializer(), bomb, "max_value_bytes")) < 2**30  # cap 256 MiB, not the GiB
    with pytest.raises(SerializationError, match="max_value_bytes=1048576"):
        Serializer(max_value_bytes=2**20).loads(bomb)


def test_new_format_declares_its_length_and_lies_are_refused() -> None:
    ser = Serializer(max_value_bytes=2**20)
    value = {"text": " ".join(f"word{i}" for i in range(1000))}
    data = ser.dumps(value)
    assert data[:2] == b"\xc1\xff" and int.from_bytes(data[2:6], "big") == len(
        Serializer(compress=False).dumps(value)
    )
    assert ser.loads(data) == value
    beyond = b"\xc1\xff" + (2**31).to_bytes(4, "big") + _zeros_deflated(1024)
    assert _peak_bytes(_refused(ser, beyond, "declares")) < 2**24  # beyond the cap: refused before inflating
    stream = zlib.compressobj(9, zlib.DEFLATED, -15)
    lying = (
        b"\xc1\xff"
        + (100).to_bytes(4, "big")
        + stream.compress(_bin_header(2**30))
        + stream.flush(zlib.Z_FULL_FLUSH)
        + _zeros_deflated(1024)
    )
    says_100 = _refused(Serializer(), lying, "declared length")  # inflates to a GiB: stopped at 101 bytes
    assert _peak_bytes(says_100) < 2**24
    for broken in (data[:-3], data[:5], data + b"x", data[:2] + (5).to_bytes(4, "big") + data[6:]):
        with pytest.raises(SerializationError):
            ser.loads(broken)


def test_values_over_the_cap_are_refused_when_written() -> None:
    with pytest.raises(SerializationError, match="max_value_bytes"):
        Serializer(max_value_bytes=1000).dumps("x" * 2000)
    with pytest.raises(SerializationError, match="max_value_bytes"):
        Serializer(max_value_bytes=1000, compress=False).dumps(b"x" * 2000)
    with pytest.raises(ValueError):
        Serializer(max_value_bytes=2**32)


def test_rows_written_before_the_length_header_still_read() -> None:
    ser = Serializer()
    value = {"messages": [HumanMessage("hello " * 40, id="1"), AIMessage("hi " * 40, id="2")], "n": [1, 2]}
    raw = Serializer(compress=False).dumps(value)
    old = zlib.compressobj(1, zlib.DEFLATED, -15)
    legacy = b"\xc1" + old.compress(raw) + old.flush()  # exactly what plait wrote before
    assert ser.loads(legacy) == value
    assert Serializer(compress=False).loads(legacy) == value
    with pytest.raises(SerializationError):
        ser.loads(legacy[:-2])
    with pytest.raises(SerializationError):
        ser.loads(legacy + b"\x00")


# -- 3. strict decoding -----------------------------------------------------------------------------

S = Serializer()
_K = len(codes.KNOWN)

BAD_SHAPES = [
    (ENUM, "not a list"),
    (ENUM, [__name__, "Shade"]),
    (ENUM, [__name__, "Shade", 1, 2]),
    (ENUM, [1, "Shade", 1]),
    (DATACLASS, ["plait.types", "Send", [1, 2]]),
    (NAMEDTUPLE, ["plait.types", "PregelTask", {"id": 1}]),
    (KNOWN_PYDANTIC, [_K, {}]),
    (KNOWN_PYDANTIC, [-1, {}]),
    (KNOWN_PYDANTIC, [True, {"content": "x"}]),
    (KNOWN_PYDANTIC, [0]),
    (KNOWN_PYDANTIC, "x"),
    (KNOWN_PYDANTIC, [0, ["content"]]),
    (KNOWN_DATACLASS, [13, "x"]),
    (codes.TUPLE, "abc"),
    (codes.TUPLE, {"a": 1}),
    (codes.SET, "abc"),
    (codes.SET, {"a": 1}),
    (codes.SET, [[1], {"a": 1}]),
    (codes.FROZENSET, 5),
    (codes.TIMEDELTA, [1, 2]),
    (codes.TIMEDELTA, [1, 2, 3, 4]),
    (codes.TIMEDELTA, "123"),
    (codes.TIMEDELTA, [1.5, 2, 3]),
    (codes.DECIMAL, 5),
    (codes.DECIMAL, "abc"),
    (codes.UUID, b"short"),
    (codes.UUID, "x" * 16),
    (codes.DATETIME, 5),
    (codes.DATETIME, "nope"),
    (codes.DATE, [2024]),
    (codes.TIME, "25:00"),
    (codes.BIGINT, "zz"),
    (codes.BIGINT, 5),
    (codes.PAIRS, [[1]]),
    (codes.PAIRS, [1, 2]),
    (codes.PAIRS, "ab"),
    (codes.PAIRS, [[[1], 2], [{"a": 1}, 3]]),
    (99, []),
    (-5, []),
    (0, []),
]


@pytest.mark.parametrize(("code", "payload"), BAD_SHAPES, ids=[f"{c}-{p!r}"[:40] for c, p in BAD_SHAPES])
def test_wrong_shapes_raise_serialization_error(code: int, payload: Any) -> None:
    with pytest.raises(SerializationError) as info:
        S.loads(ext(code, payload))
    assert type(info.value) is SerializationError


def test_class_numbers_are_ints_even_once_cached() -> None:
    ser = Serializer()
    assert type(ser.loads(ext(KNOWN_PYDANTIC, [1, {"content": "x"}]))) is AIMessage  # number 1 is now cached
    for number in (True, 1.0):  # equal to 1 and hash alike: must not hit the cache
        with pytest.raises(SerializationError, match="unknown class number"):
            ser.loads(ext(KNOWN_PYDANTIC, [number, {"content": "x"}]))


def test_trailing_bytes_and_non_bytes_are_errors() -> None:
    assert ormsgpack.unpackb(ormsgpack.packb({}) + b"junk") == {}  # what ormsgpack alone does
    for value in ({}, [1, 2], {"messages": [HumanMessage("x" * 300)]}, None, "s"):
        for ser in (Serializer(), Serializer(compress=False)):
            data = ser.dumps(value)
            assert ser.loads(data) == value
            for junk in (b"\x00", b"\xc0", b"\xc4\x08", b"{}" * 5, data):
                with pytest.raises(SerializationError):
                    ser.loads(data + junk)
    for nothing in (b"", None, 5, "text"):
        with pytest.raises(SerializationError):
            S.loads(nothing)  # type: ignore[arg-type]
    assert S.loads(bytearray(S.dumps([1]))) == [1] and S.loads(memoryview(S.dumps([1]))) == [1]


class Pt(NamedTuple):
    a: int
    b: str


SEEDS = [
    {
        "messages": [
            HumanMessage("hello", id="1"),
            AIMessage("x" * 150, id="2", tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c"}]),
        ]
    },
    [(1, 2), {3, 4}, frozenset({"a"}), uuid.UUID(int=5), {1: "int key"}, 2**80],
    {
        "when": __import__("datetime").datetime(2024, 1, 2),
        "d": __import__("decimal").Decimal("1.5"),
        "td": __import__("datetime").timedelta(3),
        "s": "t" * 200,
    },
]
SEED_BYTES = [ser.dumps(v) for v in SEEDS for ser in (Serializer(), Serializer(compress=False))]


def _check_loads(data: bytes) -> None:
    """Decodes or raises SerializationError, and (at most 300 bytes in) holds under 16 MiB meanwhile."""

    def call() -> None:
        try:
            S.loads(data)
        except SerializationError:
            pass

    assert _peak_bytes(call) < 2**24


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes_decode_or_raise_serialization_error(data: bytes) -> None:
    _check_loads(data)
    _check_loads(b"\xc1" + data)
    _check_loads(b"\xc1\xff" + data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SEED_BYTES), st.binary(min_size=1, max_size=40))
def test_any_bytes_after_a_valid_payload_are_an_error(seed: bytes, junk: bytes) -> None:
    with pytest.raises(SerializationError):
        S.loads(seed + junk)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SEED_BYTES),
    st.lists(
        st.tuples(
            st.integers(0, 10**6), st.integers(0, 255), st.sampled_from(["set", "insert", "delete", "cut"])
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_mutated_payloads_decode_or_raise_serialization_error(
    seed: bytes, edits: list[tuple[int, int, str]]
) -> None:
    data = bytearray(seed)
    for pos, byte, how in edits:
        at = pos % (len(data) + 1)
        if how == "set" and at < len(data):
            data[at] = byte
        elif how == "insert":
            data.insert(at, byte)
        elif how == "delete" and at < len(data):
            del data[at]
        elif how == "cut":
            del data[at:]
    _check_loads(bytes(data))


_plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.text(max_size=5)
    | st.binary(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    max_leaves=8,
)
_names = st.sampled_from(
    [
        "plait.types",
        "langchain_core.messages.ai",
        "langchain_core.messages.human",
        __name__,
        "os",
        "builtins",
        "",
        "plait.types.Send",
    ]
)
_quals = st.sampled_from(
    [
        "Send",
        "Command",
        "AIMessage",
        "HumanMessage",
        "Shade",
        "Outer",
        "Outer.Inner",
        "Pt",
        "object",
        "getattr",
        "",
        "a..b",
        "Send.__init__",
    ]
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(-3, 20),
    st.one_of(
        _plain,
        st.tuples(_names, _quals, _plain).map(list),
        st.tuples(st.integers(-2, _K + 2), _plain).map(list),
    ),
)
def test_random_extension_records_decode_or_raise_serialization_error(code: int, payload: Any) -> None:
    ser = Serializer(allowed=[__name__])
    try:
        ser.loads(ext(code, payload))
    except SerializationError:
        pass


@pytest.mark.parametrize("planted", [5, [[0, 0, 99]], [[7]], [[1, "x"]], ["junk"], [[0, 2, 1]]])
def test_a_malformed_delta_row_is_a_serialization_error(tmp_path: Any, planted: Any) -> None:
    """A delta row of the wrong shape (damaged or planted) is refused by name, never a TypeError."""
    from langchain_core.messages import AIMessage, HumanMessage

    from plait.checkpoint.sqlite import SqliteSaver
    from plait.graph import END, START, MessagesState, StateGraph

    path = tmp_path / "cp.db"
    with SqliteSaver.from_conn_string(path) as saver:
        graph = (
            StateGraph(MessagesState)
            .add_node("a", lambda s: {"messages": [AIMessage("x")]})
            .add_edge(START, "a")
            .add_edge("a", END)
            .compile(checkpointer=saver)
        )
        config = {"configurable": {"thread_id": "t"}}
        graph.invoke({"messages": [HumanMessage("hi")]}, config)
        graph.invoke({"messages": [HumanMessage("again")]}, config)
        saver.conn.execute(
            "UPDATE plait_checkpoint_blobs SET value = ? WHERE kind = 'delta'", [saver.serde.dumps(planted)]
        )
        saver.conn.commit()
    with SqliteSaver.from_conn_string(path) as cold:
        graph = (
            StateGraph(MessagesState)
            .add_node("a", lambda s: {})
            .add_edge(START, "a")
            .compile(checkpointer=cold)
        )
        with pytest.raises(SerializationError, match="messages"):
            graph.get_state(config)


def test_a_row_naming_a_submodule_of_an_allowed_package_never_imports_it(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """Allowing a whole package must not let a stored row run the top-level code of its other modules."""
    package = tmp_path / "pkg_allowed"
    package.mkdir()
    marker = tmp_path / "ran"
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(
        "import dataclasses\n\n@dataclasses.dataclass\nclass Order:\n    id: int\n"
    )
    (package / "__main__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    serializer = Serializer(allowed=["pkg_allowed"])
    from pkg_allowed.models import Order  # type: ignore[import-not-found]  # made by this test

    assert serializer.loads(serializer.dumps(Order(1))) == Order(1)
    row = ormsgpack.packb(ormsgpack.Ext(codes.DATACLASS, ormsgpack.packb(["pkg_allowed.__main__", "X", {}])))
    with pytest.raises(SerializationError, match="not imported"):
        serializer.loads(row)
    assert not marker.exists()
    exact = Serializer(allowed=["pkg_allowed.models"])  # a module allowed by its exact name is imported
    stored = exact.dumps(Order(2))
    monkeypatch.delitem(sys.modules, "pkg_allowed.models")
    assert exact.loads(stored).id == 2 and "pkg_allowed.models" in sys.modules


def test_inflating_is_bounded_by_the_stored_size() -> None:
    """A row inflates to at most 32 times its stored size (256 for rows of the old form), so the memory
    one read can take is proportional to what is stored, whatever the row holds."""
    ser = Serializer()
    repetitive = {"text": "=" * 100_000}  # compresses ~200 times: stored uncompressed instead
    data = ser.dumps(repetitive)
    assert data[:1] != b"\xc1" and ser.loads(data) == repetitive
    many = ormsgpack.packb([{} for _ in range(1_000_000)])  # a million dicts from a few kB
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    small = packer.compress(many) + packer.flush()
    with pytest.raises(SerializationError, match="32 times its stored size"):
        ser.loads(b"\xc1\xff" + len(many).to_bytes(4, "big") + small)
    with pytest.raises(SerializationError, match="256 times its stored size"):
        ser.loads(b"\xc1" + small)


def test_allowing_what_is_allowed_already_keeps_every_serializers_cache() -> None:
    from plait.checkpoint import _allow

    class Answer:
        pass

    _allow.allow(Answer, "plait_tests.some.Name")
    version = _allow.VERSION[0]
    _allow.allow(Answer, "plait_tests.some.Name")  # an agent built per request allows its classes each time
    assert _allow.VERSION[0] == version
    _allow.allow("plait_tests.other.Name")
    assert _allow.VERSION[0] == version + 1
