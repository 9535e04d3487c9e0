"""Input, output and context schemas of a compiled graph (LangGraph's rules for required keys)."""

from dataclasses import dataclass, field
from typing import Annotated

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from plait.constants import START
from plait.graph import StateGraph
from plait.managed import RemainingSteps


@dataclass
class Data:
    name: str
    maybe: int | None
    noted: Annotated[float | None, "note"]
    default: str = "d"
    items: list[int] = field(default_factory=list)
    needed: str = field(default=...)  # type: ignore[assignment]  # LangGraph treats ... as required


def _compile(schema: type, **kwargs: object) -> object:
    return StateGraph(schema, **kwargs).add_node("n", lambda s: {}).add_edge(START, "n").compile()


def test_dataclass_optional_and_defaulted_fields_are_not_required() -> None:
    app = _compile(Data)
    schema = app.get_input_jsonschema()
    assert set(schema["required"]) == {"name", "needed"}
    assert set(schema["properties"]) == {"name", "maybe", "noted", "default", "items", "needed"}
    assert app.get_output_jsonschema()["title"] == "LangGraphOutput"
    assert set(app.get_input_schema().model_fields) == set(schema["properties"])


def test_typed_dict_and_pydantic_schemas_and_managed_keys() -> None:
    class TD(TypedDict):
        a: int
        steps: RemainingSteps

    class Model(BaseModel):
        b: str = "x"

    assert _compile(TD).get_input_jsonschema()["required"] == ["a", "steps"]
    assert _compile(Model).get_output_schema() is Model


def test_context_schema() -> None:
    class Ctx(TypedDict):
        user: str

    assert _compile(Data).get_context_jsonschema() is None
    assert _compile(Data, context_schema=Ctx).get_context_jsonschema()["required"] == ["user"]
    with pytest.raises(ValueError, match="context schema"):
        _compile(Data, context_schema=int).get_context_jsonschema()
