"""InMemorySaver's copy guarantees on its fast paths: what was stored never changes when the values given
to ``put``/``put_writes`` or those read back are changed afterwards, and the pending writes it remembers
(read back without decoding) read back exactly as decoding their bytes does."""

from __future__ import annotations

import random
from typing import Any

from typing_extensions import TypedDict

from plait.checkpoint._delta import EMPTY_FIELDS
from plait.checkpoint._make import now_iso
from plait.checkpoint._memory_fields import pack_ts, unpack_ts
from plait.checkpoint.base import empty_checkpoint
from plait.checkpoint.memory import InMemorySaver
from plait.graph import START, StateGraph
from plait.types import Command, Interrupt, interrupt


def cfg(thread: str = "t", cid: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if cid is not None:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def _put(saver: InMemorySaver, thread: str, values: dict[str, Any]) -> dict[str, Any]:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = dict.fromkeys(values, 1)
    return saver.put(
        cfg(thread), checkpoint, {"source": "loop", "step": 0, "parents": {}}, dict.fromkeys(values, 1)
    )


def _decoded(saver: InMemorySaver, config: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """The pending writes of ``config`` decoded from their bytes (the saver's memo moved to another thread)."""
    _put(saver, "elsewhere", {"x": 1})
    saver.put_writes(_put(saver, "elsewhere", {"x": 2}), [("x", 3)], "other")
    found = saver.get_tuple(config)
    assert found is not None and found.pending_writes is not None
    return found.pending_writes


class Text(str):
    """A str subclass: stored as str, so it reads back as a plain str."""


VALUES: list[Any] = [
    "",
    "text",
    Text("sub"),
    0,
    -(2**70),
    1.5,
    True,
    None,
    b"raw",
    (1, "a"),
    [1, "a", None],
    [[1], 2],
    {"k": [1]},
    Interrupt("why?", id="i1"),
    [Interrupt("why?", id="i1"), Interrupt({"q": 1}, id="i2")],
    [Interrupt(["a"], id="i3")],
]


def test_remembered_writes_read_back_as_their_bytes_decode() -> None:
    for value in VALUES:
        saver = InMemorySaver()
        config = _put(saver, "t", {"a": 1})
        saver.put_writes(config, [("a", value), ("__interrupt__", [Interrupt("x", id="i")])], "task")
        remembered = saver.get_tuple(config)
        assert remembered is not None
        decoded = _decoded(saver, config)
        assert remembered.pending_writes == decoded, value
        assert [type(w[2]) for w in remembered.pending_writes or []] == [type(w[2]) for w in decoded]


def test_changing_written_values_afterwards_changes_nothing_stored() -> None:
    saver = InMemorySaver()
    config = _put(saver, "t", {"a": 1})
    items = [1, 2]
    nested = {"k": [1]}
    asked = [Interrupt({"q": [1]}, id="i")]
    saver.put_writes(config, [("a", items), ("b", nested), ("__interrupt__", asked)], "task")
    items.append(3)
    nested["k"].append(2)
    asked[0].value["q"].append(2)
    asked.append(Interrupt("more", id="j"))
    expected = [
        ("task", "a", [1, 2]),
        ("task", "b", {"k": [1]}),
        ("task", "__interrupt__", [Interrupt({"q": [1]}, id="i")]),
    ]
    got = saver.get_tuple(config)
    assert got is not None and got.pending_writes == expected
    for _, _, value in got.pending_writes:  # and changing what was read back changes nothing either
        if isinstance(value, list):
            value.append("read")
    again = saver.get_tuple(config)
    assert again is not None and again.pending_writes == expected
    assert _decoded(saver, config) == expected


def test_writes_merge_the_same_with_and_without_the_memo() -> None:
    """Random put_writes over two checkpoints of two threads, against a model of what is kept."""
    rng = random.Random(7)
    saver = InMemorySaver()
    configs = [_put(saver, thread, {"a": 0}) for thread in ("p", "q") for _ in range(2)]
    model: dict[str, list[tuple[str, str, Any]]] = {c["configurable"]["checkpoint_id"]: [] for c in configs}
    for step in range(400):
        config = rng.choice(configs)
        task = rng.choice(["t1", "t2"])
        writes = [
            (rng.choice(["a", "b", "__interrupt__", "__resume__"]), rng.choice([step, [step], "s"]))
            for _ in range(rng.randint(1, 3))
        ]
        saver.put_writes(config, writes, task)
        last = {
            channel: i for i, (channel, _) in enumerate(writes) if channel in ("__interrupt__", "__resume__")
        }
        new = [(task, c, v) for i, (c, v) in enumerate(writes) if last.get(c, i) == i]
        written = {c for _, c, _ in new}
        cid = config["configurable"]["checkpoint_id"]
        model[cid] = [
            w
            for w in model[cid]
            if w[0] != task or (w[1] in ("__interrupt__", "__resume__") and w[1] not in written)
        ] + new
        if step % 7 == 0:
            probe = rng.choice(configs)
            found = saver.get_tuple(probe)
            assert found is not None
            assert found.pending_writes == model[probe["configurable"]["checkpoint_id"]]
    for config in configs:
        found = saver.get_tuple(config)
        assert found is not None and found.pending_writes == model[config["configurable"]["checkpoint_id"]]


def test_changing_put_values_and_fields_afterwards_changes_nothing_stored() -> None:
    saver = InMemorySaver()
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"d": {"k": [1]}, "s": "x"}
    checkpoint["channel_versions"] = {"d": 1, "s": 1}
    checkpoint["next"] = ["n"]
    config = saver.put(cfg(), checkpoint, {"source": "loop", "step": 0, "parents": {}}, {"d": 1, "s": 1})
    checkpoint["channel_values"]["d"]["k"].append(2)
    checkpoint["channel_versions"]["d"] = 9
    checkpoint["next"].append("m")
    got = saver.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"d": {"k": [1]}, "s": "x"}
    assert got.checkpoint["channel_versions"] == {"d": 1, "s": 1} and got.checkpoint["next"] == ["n"]
    got.checkpoint["sends"].append("changed")  # a field left at its default is a new list
    got.checkpoint["barriers"]["x"] = 1
    assert EMPTY_FIELDS["sends"] == [] and EMPTY_FIELDS["barriers"] == {}
    again = saver.get_tuple(config)
    assert again is not None and again.checkpoint["sends"] == [] and again.checkpoint["barriers"] == {}


def test_the_time_now_iso_wrote_packs_as_parsing_it_does() -> None:
    for _ in range(200):
        text = now_iso()
        packed = pack_ts(text)
        assert type(packed) is int and unpack_ts(packed) == text
        if len(text) == 32:  # (a time with no fraction is written without one)
            assert pack_ts(text[:20] + "1" + text[21:]) == packed + (1 - int(text[20])) * 100_000


def test_interrupt_and_resume_pairs_keep_their_history() -> None:
    class Ask(TypedDict):
        name: str

    def ask(state: Ask) -> dict[str, str]:
        return {"name": interrupt("name?")}

    graph = StateGraph(Ask).add_node("ask", ask).add_edge(START, "ask").compile(checkpointer=InMemorySaver())
    for i in range(20):
        config = cfg(f"t{i}")
        paused = graph.invoke({"name": ""}, config)
        assert paused["__interrupt__"][0].value == "name?"
        assert graph.get_state(config).tasks[0].interrupts[0].value == "name?"
        assert graph.invoke(Command(resume=f"ada{i}"), config) == {"name": f"ada{i}"}
        history = list(graph.get_state_history(config))
        assert [h.values for h in history] == [{"name": f"ada{i}"}, {"name": ""}, {}]
        assert [h.next for h in history] == [(), ("ask",), ("__start__",)]


def test_task_ids_are_the_uuid5_of_their_recipe() -> None:
    import uuid

    from plait.checkpoint._task_ids import _SPACE, legacy_task_key, task_key

    rng = random.Random(5)
    for i in range(3000):
        cid = rng.choice([None, str(uuid.uuid4()), "x" * rng.randint(1, 40), f"é☃{i}"])
        name, index = rng.choice(["ask", "n", "__start__", "ünï", "a:b"]), rng.randint(0, 99)
        assert task_key(cid, name, index) == str(uuid.uuid5(_SPACE, legacy_task_key(cid, name, index)))


def test_the_in_memory_lease_holds_refuses_and_lets_go() -> None:
    import threading

    import pytest

    from plait.checkpoint import _locks
    from plait.errors import ThreadBusyError

    saver = InMemorySaver()
    name = saver.lease_id("held")
    with saver.lease("held"):
        assert name in _locks._locks
        with pytest.raises(ThreadBusyError, match="busy"), saver.lease("held", wait=False):
            pass
        failed = threading.Event()

        def other() -> None:
            try:
                with saver.lease("held", timeout=0.01):
                    pass
            except ThreadBusyError:
                failed.set()

        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        assert failed.is_set()
        with saver.lease("free", wait=False):  # another thread is free
            pass
    assert name not in _locks._locks  # no one holds or waits: the entry is gone
    with saver.lease("held", wait=False):  # and it can be taken again
        pass
    with pytest.raises(RuntimeError), saver.lease("held"):
        raise RuntimeError("the block fails: the lease is let go")
    assert name not in _locks._locks
