"""The server's JSON of state values: messages encoded once are reused only while unchanged."""

from __future__ import annotations

import gc

import orjson
from langchain_core.messages import AIMessage, HumanMessage

from plait.server._wire import dumps


def test_a_message_encodes_as_its_model_dump_every_time() -> None:
    messages = [HumanMessage("hi", id="1"), AIMessage("ok", id="2")]
    expected = orjson.dumps({"messages": [m.model_dump() for m in messages]})
    assert dumps({"messages": messages}) == expected
    assert dumps({"messages": messages}) == expected  # from the cache: the same bytes


def test_a_message_whose_content_was_set_anew_is_encoded_again() -> None:
    message = AIMessage("draft", id="3")
    assert orjson.loads(dumps([message]))[0]["content"] == "draft"
    message.content = "final"
    assert orjson.loads(dumps([message]))[0]["content"] == "final"


def test_a_message_given_its_id_after_an_encoding_is_encoded_again() -> None:
    message = AIMessage("a reply")  # a node's message: the state gives it an id, in place
    assert orjson.loads(dumps([message]))[0]["id"] is None
    message.id = "given"
    assert orjson.loads(dumps([message]))[0]["id"] == "given"


def test_a_new_message_at_a_reused_address_is_not_taken_for_the_old_one() -> None:
    contents = set()
    for n in range(200):  # freed objects' addresses are reused: each must still be its own
        message = AIMessage(f"m{n}", id=str(n))
        contents.add(orjson.loads(dumps(message))["content"])
        del message
        gc.collect(0)
    assert contents == {f"m{n}" for n in range(200)}


def test_the_cache_keeps_at_most_its_budget_and_no_chunks() -> None:
    from langchain_core.messages import AIMessageChunk

    from plait.server._wire import _MessageJson

    cache = _MessageJson(size=100, budget=4000)
    messages = [AIMessage("x" * 1000, id=str(n)) for n in range(10)]
    for message in messages:
        assert orjson.loads(orjson.dumps(cache.get(message)))["content"] == message.content
    assert cache.held <= 4000 and len(cache.entries) == 3
    assert set(cache.entries) == {id(m) for m in messages[-3:]}  # the oldest went first
    cache.get(AIMessageChunk("piece"))
    assert len(cache.entries) == 3
