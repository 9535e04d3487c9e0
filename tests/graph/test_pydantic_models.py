"""The pydantic models plait builds for schemas (``plait._internal._pydantic``) and the JSON schemas built on them."""

from __future__ import annotations

import dataclasses
import operator
import sys
import threading
import typing
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any

import pydantic
import pytest
import typing_extensions

from plait._internal._pydantic import create_model, is_supported_by_pydantic
from plait.constants import START
from plait.graph import StateGraph


def test_fields_keep_the_names_pydantic_reserves() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "shadows an attribute" / protected namespace warning
        model = create_model(
            "Reserved",
            field_definitions={"schema": (str, ...), "_hidden": (int, 1), "model_kind": (str, "k")},
        )
    item = model.model_validate({"schema": "s", "_hidden": "2"})
    assert item.model_dump(by_alias=True) == {"schema": "s", "_hidden": 2, "model_kind": "k"}
    schema = model.model_json_schema()
    assert schema["title"] == "Reserved"
    assert schema["required"] == ["schema"]
    assert schema["properties"]["_hidden"] == {"default": 1, "title": "Hidden", "type": "integer"}
    with pytest.raises(pydantic.ValidationError, match="frozen_instance"):
        item.model_kind = "other"


def test_models_are_cached_by_definition() -> None:
    first = create_model("Cached", field_definitions={"a": (int, 0)})
    assert create_model("Cached", field_definitions={"a": (int, 0)}) is first
    assert create_model("Cached", field_definitions={"a": (int, False)}) is not first  # 0 == False
    listed = create_model("Listed", field_definitions={"a": (list[int], [])})  # unhashable: built again
    assert create_model("Listed", field_definitions={"a": (list[int], [])}) is not listed
    assert listed().model_dump() == {"a": []}


def test_root_models() -> None:
    plain = create_model("Plain", root=int)
    assert plain.model_validate("3").model_dump() == 3
    with pytest.raises(pydantic.ValidationError):
        plain()
    defaulted = create_model("Defaulted", root=(list[int], []))
    assert defaulted().model_dump() == []
    assert defaulted.model_json_schema() == {
        "default": [],
        "items": {"type": "integer"},
        "title": "Defaulted",
        "type": "array",
    }
    with pytest.raises(NotImplementedError):
        create_model("Both", root=int, field_definitions={"a": (int, 0)})


def test_warnings_of_schema_building_reach_the_caller() -> None:
    class Noisy:
        @classmethod
        def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
            warnings.warn("noisy schema", UserWarning, stacklevel=1)
            return handler(int)

    with pytest.warns(UserWarning, match="noisy schema"):
        create_model("NoisyModel", field_definitions={"n": (Noisy, ...)})


def test_building_leaves_other_threads_warnings_and_filters_alone() -> None:
    started, go_on = threading.Event(), threading.Event()

    class Slow:
        @classmethod
        def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
            started.set()
            assert go_on.wait(5)
            return handler(int)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ThreadPoolExecutor(max_workers=1) as pool:
            future = pool.submit(create_model, "SlowModel", root=(Slow, 0))
            try:
                assert started.wait(5)
                warnings.warn("meanwhile", UserWarning, stacklevel=1)
                warnings.simplefilter("error", FutureWarning)
            finally:
                go_on.set()
            model = future.result(5)
        assert [str(w.message) for w in caught] == ["meanwhile"]
        with pytest.raises(FutureWarning):
            warnings.warn("still an error", FutureWarning, stacklevel=1)
    assert model.model_validate(4).model_dump() == 4


def test_is_supported_by_pydantic() -> None:
    class Extended(typing_extensions.TypedDict):
        x: int

    class Builtin(typing.TypedDict):  # noqa: UP013
        x: int

    @dataclasses.dataclass
    class Data:
        x: int

    class Model(pydantic.BaseModel):
        x: int

    class Plain:
        x: int

    assert is_supported_by_pydantic(Extended)
    assert is_supported_by_pydantic(Builtin) is (sys.version_info >= (3, 12))
    assert is_supported_by_pydantic(Data)
    assert is_supported_by_pydantic(Model)
    assert not is_supported_by_pydantic(Plain)
    assert not is_supported_by_pydantic(int)


def _compile(schema: Any) -> Any:
    return StateGraph(schema).add_node("n", lambda s: {}).add_edge(START, "n").compile()


def test_graph_schemas_keep_reserved_key_names() -> None:
    @dataclasses.dataclass
    class State:
        a: int
        model_dump: str = "q"
        _note: int = 3

    schema = _compile(State).get_input_jsonschema()
    assert set(schema["properties"]) == {"a", "model_dump", "_note"}
    assert schema["required"] == ["a"]
    assert _compile(State).get_input_schema() is _compile(State).get_input_schema()


def test_graph_schema_of_a_one_value_state() -> None:
    app = _compile(Annotated[list, operator.add])
    assert app.get_input_jsonschema() == {
        "default": None,
        "items": {},
        "title": "LangGraphInput",
        "type": "array",
    }
    assert app.get_output_jsonschema()["title"] == "LangGraphOutput"


def test_graph_schema_of_a_builtin_typed_dict() -> None:
    class State(typing.TypedDict):  # noqa: UP013
        a: int

    class Context(typing.TypedDict):  # noqa: UP013
        user: str

    app = StateGraph(State, context_schema=Context).add_node("n", lambda s: {}).add_edge(START, "n").compile()
    assert app.get_input_jsonschema() == {
        "properties": {"a": {"title": "A", "type": "integer"}},
        "required": ["a"],
        "title": "State",
        "type": "object",
    }
    assert app.get_context_jsonschema()["required"] == ["user"]
