"""Malformed run configs raise InvalidConfigError before anything is written, never a driver's error."""

from __future__ import annotations

import asyncio
import operator
import os
import pickle
import tempfile
import uuid
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from _pg import pg_saver

from plait.checkpoint.base import MAX_ID_BYTES, check_thread_id, get_checkpoint_id, thread_key
from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite import SqliteSaver
from plait.errors import InvalidConfigError
from plait.graph import START, StateGraph

MISSING = "Checkpointer requires one or more of the following 'configurable' keys: thread_id, checkpoint_ns, checkpoint_id"


class S(TypedDict):
    log: Annotated[list, operator.add]


@pytest.fixture(scope="module", params=["memory", "sqlite", "postgres"])
def saver(request: pytest.FixtureRequest) -> Iterator[Any]:
    """One saver per backend for the whole module (each test uses its own thread ids)."""
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "sqlite":
        with (
            tempfile.TemporaryDirectory() as tmp,
            SqliteSaver.from_conn_string(os.path.join(tmp, "cp.db")) as s,
        ):
            yield s
    else:
        yield from pg_saver("plait_cfg")


def _graph(saver: Any = None) -> Any:
    return (
        StateGraph(S).add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a").compile(checkpointer=saver)
    )


def _threads(saver: Any) -> list[Any]:
    return sorted((t.thread_id, t.checkpoints, t.head_id) for t in saver.threads())


def _works(saver: Any) -> None:
    """The saver still reads and writes after the errors."""
    graph, config = _graph(saver), {"configurable": {"thread_id": f"ok-{uuid.uuid4().hex}"}}
    assert graph.invoke({"log": []}, config) == {"log": ["a"]}
    assert graph.get_state(config).values == {"log": ["a"]}


def conf(**configurable: Any) -> dict[str, Any]:
    return {"configurable": configurable}


# (id, config, field the error names)
BAD = [
    ("nul-thread", conf(thread_id="a\x00b"), "thread_id"),
    ("1mb-thread", conf(thread_id="x" * 1_000_000), "thread_id"),
    ("long-multibyte-thread", conf(thread_id="é" * (MAX_ID_BYTES // 2 + 1)), "thread_id"),
    ("surrogate-thread", conf(thread_id="\ud800"), "thread_id"),
    ("float-thread", conf(thread_id=1.5), "thread_id"),
    ("bool-thread", conf(thread_id=True), "thread_id"),
    ("int-ns", conf(thread_id="t-ns", checkpoint_ns=5), "checkpoint_ns"),
    ("nul-ns", conf(thread_id="t-ns", checkpoint_ns="a\x00"), "checkpoint_ns"),
    ("int-checkpoint-id", conf(thread_id="t-cid", checkpoint_id=7), "checkpoint_id"),
    ("nul-checkpoint-id", conf(thread_id="t-cid", checkpoint_id="\x00"), "checkpoint_id"),
    ("surrogate-checkpoint-id", conf(thread_id="t-cid", checkpoint_id="\udcff"), "checkpoint_id"),
    ("str-config", "t", "config"),
    ("list-config", [("configurable", {})], "config"),
    ("str-configurable", {"configurable": "x"}, "configurable"),
    ("no-thread", conf(), "thread_id"),
    ("empty-thread", conf(thread_id=""), "thread_id"),
]


@pytest.mark.parametrize(("config", "field"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_config_is_rejected_before_anything_is_written(saver: Any, config: Any, field: str) -> None:
    graph = _graph(saver)
    before = _threads(saver)
    for call in (
        lambda: graph.invoke({"log": []}, config),
        lambda: list(graph.stream({"log": []}, config)),
        lambda: graph.get_state(config),
        lambda: list(graph.get_state_history(config)),
        lambda: graph.update_state(config, {"log": ["x"]}),
    ):
        with pytest.raises(InvalidConfigError) as info:
            call()
        assert info.value.field == field
        assert isinstance(info.value, ValueError)
    assert _threads(saver) == before, "nothing may be written"
    _works(saver)


@pytest.mark.parametrize(
    ("config", "field"),
    [b[1:] for b in BAD[:4] + BAD[6:7] + BAD[11:13]],
    ids=[b[0] for b in BAD[:4] + BAD[6:7] + BAD[11:13]],
)
async def test_bad_config_async(saver: Any, config: Any, field: str) -> None:
    graph = _graph(saver)
    before = _threads(saver)
    for call in (
        lambda: graph.ainvoke({"log": []}, config),
        lambda: graph.aget_state(config),
        lambda: graph.aupdate_state(config, {"log": ["x"]}),
    ):
        with pytest.raises(InvalidConfigError) as info:
            await call()
        assert info.value.field == field
    assert _threads(saver) == before
    await asyncio.to_thread(_works, saver)


def test_missing_thread_id_keeps_langgraph_wording(saver: Any) -> None:
    with pytest.raises(ValueError, match=MISSING):
        _graph(saver).invoke({"log": []})
    with pytest.raises(InvalidConfigError, match=MISSING):
        _graph(saver).get_state({"configurable": {"user": "u"}})


def test_messages_name_the_field_and_the_fix(saver: Any) -> None:
    cases = {
        "a\x00b": ("['thread_id']", "NUL", "replace"),
        "x" * 1_000_000: (
            "['thread_id']",
            "1000000 bytes",
            f"limit is {MAX_ID_BYTES} bytes",
            "hashlib.sha256",
        ),
        "\ud800": ("['thread_id']", "surrogate", "UTF-8"),
        2.5: ("['thread_id']", "expected a str, int or UUID", "float"),
    }
    for thread_id, parts in cases.items():
        with pytest.raises(InvalidConfigError) as info:
            _graph(saver).invoke({"log": []}, conf(thread_id=thread_id))
        text = str(info.value)
        assert all(p in text for p in parts), text
        assert len(text) < 400, "a megabyte-long id is not echoed back"
    with pytest.raises(InvalidConfigError, match=r"config\['configurable'\]: expected a dict, got str 'x'"):
        _graph(saver).invoke({"log": []}, {"configurable": "x"})
    with pytest.raises(InvalidConfigError, match=r"Invalid config: expected a dict \(or None\), got str 't'"):
        _graph(saver).invoke({"log": []}, "t")


def test_good_ids_of_every_accepted_kind_work(saver: Any) -> None:
    graph = _graph(saver)
    number = uuid.uuid4().int % 10**12
    ident = uuid.uuid4()
    longest = uuid.uuid4().hex + "k" * (MAX_ID_BYTES - 32)
    unicode = "ü-" + uuid.uuid4().hex + "-日本"
    for thread_id, same in (
        (number, str(number)),
        (ident, str(ident)),
        (longest, longest),
        (unicode, unicode),
    ):
        assert graph.invoke({"log": []}, conf(thread_id=thread_id)) == {"log": ["a"]}
        assert graph.get_state(conf(thread_id=same)).values == {"log": ["a"]}
    # an empty checkpoint_id means "the newest", as in LangGraph
    assert graph.get_state(conf(thread_id=unicode, checkpoint_id="")).values == {"log": ["a"]}


def test_bad_before_in_get_state_history(saver: Any) -> None:
    graph = _graph(saver)
    config = conf(thread_id=f"h-{uuid.uuid4().hex}")
    graph.invoke({"log": []}, config)
    with pytest.raises(InvalidConfigError) as info:
        list(graph.get_state_history(config, before={"configurable": {"checkpoint_id": 3}}))
    assert info.value.field == "checkpoint_id"
    with pytest.raises(InvalidConfigError):
        list(graph.get_state_history(config, before="x"))


@pytest.mark.parametrize("limit", [0, -1, -100])
def test_recursion_limit_below_one_is_langgraphs_value_error(saver: Any, limit: int) -> None:
    before = _threads(saver)
    config = {"configurable": {"thread_id": f"rl-{uuid.uuid4().hex}"}, "recursion_limit": limit}
    with pytest.raises(ValueError, match="recursion_limit must be at least 1") as info:
        _graph(saver).invoke({"log": []}, config)
    assert isinstance(info.value, InvalidConfigError)
    assert (info.value.field, info.value.value) == ("recursion_limit", limit)
    assert _threads(saver) == before


@pytest.mark.parametrize("limit", ["5", 5.0, True, [5]])
def test_recursion_limit_must_be_an_int(limit: Any) -> None:
    with pytest.raises(InvalidConfigError, match="recursion_limit must be an int") as info:
        _graph().invoke({"log": []}, {"recursion_limit": limit})
    assert info.value.field == "recursion_limit"


async def test_recursion_limit_checked_in_async_and_stream() -> None:
    with pytest.raises(InvalidConfigError, match="at least 1"):
        await _graph().ainvoke({"log": []}, {"recursion_limit": 0})
    with pytest.raises(InvalidConfigError, match="at least 1"):
        list(_graph().stream({"log": []}, {"recursion_limit": 0}))
    with pytest.raises(InvalidConfigError, match="at least 1"):
        [c async for c in _graph().astream({"log": []}, {"recursion_limit": 0})]


def test_recursion_limit_none_means_the_default() -> None:
    assert _graph().invoke({"log": []}, {"recursion_limit": None}) == {"log": ["a"]}
    assert _graph().invoke({"log": []}, {"recursion_limit": 2}) == {"log": ["a"]}


def test_config_shape_checked_without_a_checkpointer() -> None:
    graph = _graph()
    for config, field in (
        ("t", "config"),
        ({"configurable": "x"}, "configurable"),
        ({"metadata": "m"}, "metadata"),
        ({"tags": "nightly"}, "tags"),
        ({"tags": [1]}, "tags"),
    ):
        with pytest.raises(InvalidConfigError) as info:
            graph.invoke({"log": []}, config)
        assert info.value.field == field
    with pytest.raises(InvalidConfigError):
        graph.batch([{"log": []}, {"log": []}], "t")
    assert graph.invoke({"log": []}, {"metadata": {"k": 1}, "tags": ["a"]}) == {"log": ["a"]}


def test_bad_config_for_a_graph_invoked_inside_a_node(saver: Any) -> None:
    inner = _graph()

    def call(state: S) -> dict:
        return inner.invoke(state, "t")

    outer = StateGraph(S).add_node("call", call).add_edge(START, "call").compile(checkpointer=saver)
    with pytest.raises(InvalidConfigError):
        outer.invoke({"log": []}, conf(thread_id=f"n-{uuid.uuid4().hex}"))


def test_thread_key_and_get_checkpoint_id() -> None:
    assert thread_key(conf(thread_id=7)) == ("7", "", None)
    assert thread_key(conf(thread_id="t", checkpoint_ns=None, checkpoint_id="")) == ("t", "", None)
    assert thread_key(conf(thread_id="t", checkpoint_ns="a|b", checkpoint_id="c")) == ("t", "a|b", "c")
    assert get_checkpoint_id(None) is None
    assert get_checkpoint_id(conf(checkpoint_id="c")) == "c"
    for bad in ("t", conf(thread_id="\x00"), conf(thread_id=b"bytes"), None):
        with pytest.raises(InvalidConfigError):
            thread_key(bad)
    with pytest.raises(InvalidConfigError):
        get_checkpoint_id(conf(checkpoint_id=1))


def test_error_fields_and_pickling() -> None:
    err = InvalidConfigError("bad id", field="thread_id", value="a\x00")
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), str(back), back.field, back.value) == (
        InvalidConfigError,
        "bad id",
        "thread_id",
        "a\x00",
    )
    assert isinstance(back, ValueError)


def test_check_thread_id_for_bare_ids() -> None:
    assert check_thread_id(5) == "5"
    assert check_thread_id(uuid.UUID(int=1)) == "00000000-0000-0000-0000-000000000001"
    for bad in ("", None, "a\x00", "\ud800", "x" * (MAX_ID_BYTES + 1), 1.0, False):
        with pytest.raises(InvalidConfigError) as info:
            check_thread_id(bad)
        assert info.value.field == "thread_id"
