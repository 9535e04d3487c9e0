"""JSON schemas (and pydantic models) of a compiled graph's input, output and context."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Union, get_args, get_origin

import typing_extensions
from pydantic import BaseModel, TypeAdapter

from plait._internal._pydantic import create_model, is_supported_by_pydantic
from plait._schema import ROOT, FieldSpec, fields_of

__all__ = ["config_model", "context_jsonschema", "schema_model", "state_jsonschema"]


def _optional(tp: object) -> bool:
    if get_origin(tp) is typing.Annotated:
        return _optional(get_args(tp)[0])
    return get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp)


def _default(schema: type[object], spec: FieldSpec) -> object:
    """The field's default in a generated model: ``...`` when required (LangGraph's rules)."""
    optional_keys: frozenset[str] = getattr(schema, "__optional_keys__", frozenset())
    if spec.name in optional_keys:
        return None
    if dataclasses.is_dataclass(schema):
        for f in dataclasses.fields(schema):
            if f.name != spec.name:
                continue
            if f.default is not dataclasses.MISSING and f.default is not ...:
                return f.default
            if f.default_factory is not dataclasses.MISSING:
                return f.default_factory()
    return None if _optional(spec.annotation) else ...


def schema_model(schema: type[object], specs: tuple[FieldSpec, ...], name: str) -> type[BaseModel]:
    """A pydantic model of ``schema`` (the class itself when it is one), named ``name``.

    Keys pydantic reserves (``_private``, ``schema``…) keep their names as aliases.
    """
    given = _pydantic(schema)
    if given is not None:
        return given
    if len(specs) == 1 and specs[0].name == ROOT:
        return create_model(name, root=(specs[0].annotation, None))
    fields: dict[str, tuple[object, object]] = {
        s.name: (s.annotation, _default(schema, s)) for s in specs if s.managed is None
    }
    return create_model(name, field_definitions=fields)


def _pydantic(schema: object) -> type[BaseModel] | None:
    return schema if isinstance(schema, type) and issubclass(schema, BaseModel) else None


def _adapted(schema: type[object]) -> dict[str, object]:
    adapter: TypeAdapter[object] = TypeAdapter(schema)
    return adapter.json_schema()


def state_jsonschema(schema: Any, specs: tuple[FieldSpec, ...], name: str) -> dict[str, object]:
    """The JSON schema of a state schema, as LangGraph reports it."""
    model = _pydantic(schema)
    if model is not None:
        return model.model_json_schema()
    if typing_extensions.is_typeddict(schema):
        if is_supported_by_pydantic(schema):
            return _adapted(schema)
        name = schema.__name__  # typing.TypedDict before Python 3.12: built from its keys
    return schema_model(schema, specs, name).model_json_schema()


def context_jsonschema(schema: type[object] | None) -> dict[str, object] | None:
    """The JSON schema of a context schema, or ``None`` without one.

    Raises:
        ValueError: the context schema is not a pydantic model, TypedDict or dataclass.
    """
    if schema is None:
        return None
    model = _pydantic(schema)
    if model is not None:
        return model.model_json_schema()
    if is_supported_by_pydantic(schema):
        return _adapted(schema)
    if typing_extensions.is_typeddict(schema):  # typing.TypedDict before Python 3.12: built from its keys
        return schema_model(schema, fields_of(schema), schema.__name__).model_json_schema()
    raise ValueError(f"Invalid context schema type: {schema}. Must be a BaseModel, TypedDict or dataclass.")


def config_model(context_schema: type[object] | None) -> type[BaseModel]:
    """The deprecated config schema: a ``LangGraphConfig`` model whose ``configurable`` is the context."""
    configurable: object = context_schema if context_schema is not None else dict[str, object]
    return create_model("LangGraphConfig", field_definitions={"configurable": (configurable, None)})
