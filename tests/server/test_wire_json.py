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


def test_a_new_message_at_a_reused_address_is_not_taken_for_the_old_one() -> None:
    contents = set()
    for n in range(200):  # freed objects' addresses are reused: each must still be its own
        message = AIMessage(f"m{n}", id=str(n))
        contents.add(orjson.loads(dumps(message))["content"])
        del message
        gc.collect(0)
    assert contents == {f"m{n}" for n in range(200)}
