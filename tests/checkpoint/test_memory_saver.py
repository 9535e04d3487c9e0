"""InMemorySaver specifics: values stored as bytes, shared rows, prune, tracked lists."""

from __future__ import annotations

import heapq
import operator
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from typing_extensions import TypedDict

from plait.checkpoint._delta import DELTA, Entry
from plait.checkpoint.base import empty_checkpoint
from plait.checkpoint.memory import InMemorySaver
from plait.errors import SerializationError
from plait.graph import END, START, MessagesState, StateGraph
from plait.graph.message import MessageList, add_messages


def cfg(thread: str = "t", cid: str | None = None, ns: str = "") -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if cid is not None:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def put(
    saver: InMemorySaver, parent: dict[str, Any], values: dict[str, Any], changed: dict[str, int], step: int
) -> dict[str, Any]:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = dict(changed)
    return saver.put(parent, checkpoint, {"source": "loop", "step": step, "parents": {}}, changed)


def echo_graph(saver: InMemorySaver) -> Any:
    def echo(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("echo: " + state["messages"][-1].content)]}

    b = StateGraph(MessagesState)
    b.add_node("echo", echo)
    b.add_edge(START, "echo")
    b.add_edge("echo", END)
    return b.compile(checkpointer=saver)


def test_records_are_bytes_and_lists_are_deltas() -> None:
    saver = InMemorySaver()
    g = echo_graph(saver)
    for i in range(5):
        g.invoke({"messages": [HumanMessage(f"q{i}")]}, cfg("c"))
    th = saver._threads["c"]
    assert isinstance(th.buf, bytearray) and isinstance(th.ids, bytearray)  # one buffer, 16-byte ids
    assert len(th.ids) == 16 * len(th) and th.writes(0)  # the input step's pending writes
    last = saver._record(th, len(th) - 1)
    assert isinstance(last[5]["messages"], list)  # a delta row: [prev seq, segments]
    assert len(last[5]["messages"][1]) < 200  # one message, not the transcript


def test_unchanged_keys_share_the_parent_row() -> None:
    saver = InMemorySaver()
    first = put(saver, cfg(), {"a": [1, 2], "b": "x"}, {"a": 1, "b": 1}, 0)
    put(saver, first, {"a": [1, 2], "b": "y"}, {"b": 2}, 1)
    th = saver._threads["t"]
    record = saver._record(th, 1)
    assert record[4] == {"a": 0} and set(record[5]) == {"b"}
    assert saver.get_tuple(cfg()).checkpoint["channel_values"] == {"a": [1, 2], "b": "y"}


def bad(left: list[str], right: list[str]) -> list[str]:
    left.extend(right)
    return left


class LogState(TypedDict):
    log: Annotated[list[str], bad]


def test_history_survives_a_reducer_that_mutates_its_input() -> None:
    State = LogState  # noqa: N806

    def node(state: State) -> dict[str, Any]:
        return {"log": ["n"]}

    b = StateGraph(State)
    b.add_node("n", node)
    b.add_edge(START, "n")
    b.add_edge("n", END)
    saver = InMemorySaver()
    g = b.compile(checkpointer=saver)
    g.invoke({"log": ["a"]}, cfg("m"))
    g.invoke({"log": ["b"]}, cfg("m"))
    history = [s.values.get("log") for s in g.get_state_history(cfg("m"))]
    assert history[0] == ["a", "n", "b", "n"]
    assert ["a"] in history and ["a", "n"] in history


def test_mutating_a_returned_list_does_not_change_the_stored_value() -> None:
    saver = InMemorySaver()
    g = echo_graph(saver)
    g.invoke({"messages": [HumanMessage("hi")]}, cfg("x"))
    got = saver.get_tuple(cfg("x")).checkpoint["channel_values"]["messages"]
    assert isinstance(got, MessageList)
    got.append(HumanMessage("sneaky"))
    got[0] = HumanMessage("changed")
    again = saver.get_tuple(cfg("x")).checkpoint["channel_values"]["messages"]
    assert [m.content for m in again] == ["hi", "echo: hi"]


def test_unserializable_values_raise() -> None:
    saver = InMemorySaver()
    with pytest.raises(SerializationError, match="'bad'"):
        put(saver, cfg(), {"bad": object()}, {"bad": 1}, 0)
    assert saver.get_tuple(cfg()) is None
    config = put(saver, cfg(), {"ok": 1}, {"ok": 1}, 0)
    with pytest.raises(SerializationError, match="'w'"):
        saver.put_writes(config, [("w", object())], "task")


def test_pending_writes_are_decoded_fresh_and_specials_kept() -> None:
    saver = InMemorySaver()
    config = put(saver, cfg(), {"a": 1}, {"a": 1}, 0)
    cid = config["configurable"]["checkpoint_id"]
    saver.put_writes(config, [("__interrupt__", ["why"])], f"{cid}:n:0")
    saver.put_writes(config, [("a", [1])], f"{cid}:n:0")
    saver.put_writes(config, [("a", [2])], f"{cid}:n:0")
    writes = saver.get_tuple(config).pending_writes
    assert writes == [(f"{cid}:n:0", "__interrupt__", ["why"]), (f"{cid}:n:0", "a", [2])]
    writes[1][2].append(3)
    assert saver.get_tuple(config).pending_writes[1][2] == [2]


def test_writes_before_their_checkpoint_are_attached() -> None:
    saver = InMemorySaver()
    checkpoint = empty_checkpoint()
    saver.put_writes(cfg(cid=checkpoint["id"]), [("a", 1)], "task")
    saver.put(cfg(), checkpoint, {"source": "input", "step": -1, "parents": {}}, {})
    assert saver.get_tuple(cfg()).pending_writes == [("task", "a", 1)]


def test_out_of_order_ids_and_namespaces() -> None:
    saver = InMemorySaver()
    late, early = empty_checkpoint(), empty_checkpoint()
    saver.put(cfg(), early, {"step": 1}, {})
    saver.put(cfg(), late, {"step": 0}, {})  # an id smaller than the head's
    ids = [t.config["configurable"]["checkpoint_id"] for t in saver.list(cfg())]
    assert ids == sorted(ids, reverse=True)
    assert saver.get_tuple(cfg(cid=late["id"])).metadata == {"step": 0}
    put(saver, cfg(ns="sub"), {"a": 1}, {"a": 1}, 0)
    assert saver.get_tuple(cfg(ns="sub")).checkpoint["channel_values"] == {"a": 1}
    saver.delete_thread("t")
    assert saver.get_tuple(cfg()) is None and saver.get_tuple(cfg(ns="sub")) is None


def test_prune_keeps_values_whole() -> None:
    saver = InMemorySaver()
    g = echo_graph(saver)
    for i in range(10):
        g.invoke({"messages": [HumanMessage(f"q{i}")]}, cfg("p"))
    head = g.get_state(cfg("p")).values["messages"]
    assert saver.prune("p", keep_last=4) == 26
    history = list(saver.list(cfg("p")))
    assert len(history) == 4
    assert [m.content for m in history[0].checkpoint["channel_values"]["messages"]] == [
        m.content for m in head
    ]
    assert len(history[-1].checkpoint["channel_values"]["messages"]) == 18
    saver._cache = type(saver._cache)(0)  # cold reads rebuild from the rewritten rows
    assert [m.content for m in saver.get_tuple(cfg("p")).checkpoint["channel_values"]["messages"]] == [
        m.content for m in head
    ]
    out = g.invoke({"messages": [HumanMessage("more")]}, cfg("p"))
    assert len(out["messages"]) == 22
    assert saver.prune("p", older_than=3600) == 0
    assert saver.prune("p", older_than=0) == 6


def test_long_chat_appends_are_constant_size_deltas() -> None:
    saver = InMemorySaver()
    g = echo_graph(saver)
    for i in range(60):
        g.invoke({"messages": [HumanMessage(f"q{i}")]}, cfg("long"))
    th = saver._threads["long"]
    sizes = [len(th.record(seq)) for seq in range(len(th) - 30, len(th))]
    assert max(sizes) < 400
    state = g.get_state(cfg("long")).values["messages"]
    assert [m.content for m in state[-2:]] == ["q59", "echo: q59"]


def test_entry_hands_back_the_shared_list_only_while_it_is_unchanged() -> None:
    shared = [1, 2]
    entry = Entry([1, 2], None, 2, shared)
    assert entry.value(None) is shared  # type: ignore[arg-type]
    for change in (
        lambda x: list.append(x, 3),
        lambda x: list.__setitem__(x, 0, 9),
        lambda x: x.sort(reverse=True),
        lambda x: heapq.heappush(x, 0),
        lambda x: operator.iadd(x, [4]),
    ):
        shared = [1, 2]
        entry = Entry([1, 2], None, 2, shared)
        change(shared)
        out = entry.value(None)  # type: ignore[arg-type]
        assert out == [1, 2] and out is not shared


def test_append_is_encoded_as_a_delta() -> None:
    from plait.checkpoint._delta import encode_value
    from plait.checkpoint.serde import Serializer

    dumps = Serializer().dumps
    first = add_messages([], [HumanMessage("a", id="1")])
    _, entry = encode_value(first, None, None, dumps, share=True)
    second = add_messages(first, [AIMessage("b", id="2")])
    blob, _ = encode_value(second, entry, "row", dumps, share=True)
    assert blob.kind == DELTA and blob.prev == "row"


def test_thread_log_ids_order_and_compaction() -> None:
    from plait.checkpoint._records import ThreadLog, pack_id

    log = ThreadLog()
    ids = [
        "00000000-0000-0000-0000-00000000000b",
        "00000000-0000-0000-0000-00000000000a",
        "00000000-0000-0000-0000-00000000000c",
    ]
    for i, cid in enumerate(ids):
        assert log.add(cid, bytes([i]) * 10) == i
    assert isinstance(log.ids, bytearray) and not log.ordered and log.head == ids[2]
    assert [log.find(c) for c in ids] == [0, 1, 2] and log.find(ids[0].upper()) is None
    assert log.newest_first() == [2, 0, 1]
    for n in range(2000):  # replaced writes leave dead bytes; the buffer is compacted
        log.set_writes(1, bytes([n % 256]) * 50)
    assert len(log.buf) < 8192 and log.writes(1) == bytes([1999 % 256]) * 50 and log.record(2) == b"\x02" * 10
    log.add("not-a-uuid", b"r")  # any other id: ids kept as text from then on
    assert log.ids == [*ids, "not-a-uuid"] and log.find("not-a-uuid") == 3 and log.find(ids[1]) == 1
    assert pack_id("00000000-0000-0000-0000-00000000000 ") is None


def test_text_ids_and_replaced_records() -> None:
    saver = InMemorySaver()
    first = put(saver, cfg(), {"a": [1]}, {"a": 1}, 0)
    saver.put_writes(first, [("a", 5)], "task-1")
    second = put(saver, first | {"configurable": {**first["configurable"]}}, {"a": [1, 2]}, {"a": 2}, 1)
    checkpoint = empty_checkpoint()
    checkpoint["id"] = "custom-id"
    checkpoint["channel_values"] = {"a": [1, 2, 3]}
    saver.put(second, checkpoint, {"source": "update", "step": 2, "parents": {}}, {"a": 3})
    assert saver.get_tuple(cfg(cid="custom-id")).checkpoint["channel_values"] == {"a": [1, 2, 3]}
    assert saver.get_tuple(first).pending_writes == [("task-1", "a", 5)]
    again = empty_checkpoint()
    again["id"] = first["configurable"]["checkpoint_id"]
    again["channel_values"] = {"a": [9]}
    saver.put(cfg(), again, {"source": "update", "step": 0, "parents": {}}, {"a": 1})  # same id: replaced
    found = saver.get_tuple(first)
    assert found.checkpoint["channel_values"] == {"a": [9]} and found.pending_writes == [("task-1", "a", 5)]


@pytest.mark.parametrize("window", ["whole", "windowed"])
def test_history_of_3000_checkpoints_is_rebuilt_right(window: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Listing a long thread newest first shares one replay of each chain; every value is still exact."""
    import plait.checkpoint._memory_read as memory

    if window == "windowed":  # a chain replayed 64 rows at a time, through every-64th bases
        monkeypatch.setattr(memory, "_WINDOW_ITEMS", 1)
        monkeypatch.setattr(memory, "_MIN_WINDOW", 64)
    saver = InMemorySaver(cache_size=16)
    config, messages, note = cfg("long"), [], ""
    sample = {*range(0, 3000, 29), 1, 2, 400, 401, 402, 1499, 1500, 2801, 2997, 2998, 2999}
    written: list[tuple[str, Any, str, int]] = []  # (id, message texts or count, note, step), oldest first
    for step in range(3000):
        changed = {"note": step + 1}
        if step % 3:  # two steps in three add a message; every 400th step edits an old one (not an append)
            new = (
                AIMessage(f"edited {step}", id=f"m{step // 2}")
                if step % 400 == 1 and messages
                else HumanMessage(f"m{step}", id=f"m{step}")
            )
            messages = add_messages(messages, [new])
            changed["messages"] = step + 1
        note = f"n{step}" if step % 7 else note  # unchanged values share their parent's row
        config = put(saver, config, {"messages": messages, "note": note}, changed, step)
        texts = [m.content for m in messages] if step in sample else len(messages)
        written.append((config["configurable"]["checkpoint_id"], texts, note, step))

    history = []
    for h, (cid, texts, note, step) in zip(saver.list(cfg("long")), reversed(written), strict=True):
        assert h.config["configurable"]["checkpoint_id"] == cid
        values = h.checkpoint["channel_values"]
        got = values["messages"]
        assert (len(got) if type(texts) is int else [m.content for m in got]) == texts, (cid, step)
        assert values["note"] == note and h.metadata["step"] == step
        got.clear()  # the lists handed out are the caller's: no other checkpoint of the listing changes
        history.append(h)
    assert history[-1].parent_config is None
    assert history[0].parent_config["configurable"]["checkpoint_id"] == written[-2][0]
    saver._cache = type(saver._cache)(0)  # cold single reads rebuild the same values
    for i in (1, 2, 401, 1499, 2801, 2998, 2999):
        cid, texts, note, _ = written[i]
        values = saver.get_tuple(cfg("long", cid)).checkpoint["channel_values"]
        assert [m.content for m in values["messages"]] == texts and values["note"] == note
    page = list(saver.list(cfg("long"), before=cfg("long", written[1501][0]), limit=3))
    assert [p.config["configurable"]["checkpoint_id"] for p in page] == [
        written[i][0] for i in (1500, 1499, 1498)
    ]
    assert [[m.content for m in p.checkpoint["channel_values"]["messages"]] for p in page[:2]] == [
        written[1500][1],
        written[1499][1],
    ]
