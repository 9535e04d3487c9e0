"""ValidationNode: tool calls checked against schemas, errors sent back to the model."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage
from pydantic import BaseModel

from plait.prebuilt import ValidationNode


class Point(BaseModel):
    x: int
    y: int


def test_valid_and_invalid_calls() -> None:
    calls = [
        {"name": "Point", "args": {"x": 1, "y": 2}, "id": "1", "type": "tool_call"},
        {"name": "Point", "args": {"x": "a"}, "id": "2", "type": "tool_call"},
    ]
    out = ValidationNode([Point]).invoke({"messages": [AIMessage("", tool_calls=calls)]})
    ok, bad = out["messages"]
    assert ok.content == '{"x":1,"y":2}' and not ok.additional_kwargs
    assert bad.additional_kwargs == {"is_error": True} and "Respond after fixing" in bad.content


def test_last_message_must_be_an_ai_message() -> None:
    with pytest.raises(ValueError, match="Last message is not an AIMessage"):
        ValidationNode([Point]).invoke({"messages": [("user", "hi")]})
    with pytest.raises(ValueError, match="Unsupported input"):
        ValidationNode([42])  # type: ignore[list-item]
