"""Pydantic models built for schemas at run time: a graph's input, output and config models.

:func:`create_model` makes a frozen model from ``name -> (type, default)`` pairs, or a root
model of one type. Field names pydantic reserves (``model_dump``, ``schema``…) and names with a
leading underscore are kept under another attribute name, with the original as alias: the
model validates, dumps (``by_alias=True``) and describes itself in JSON schema with the names
given. Models are cached by their definition when it is hashable.

Nothing here touches the warning filters: a warning raised while pydantic builds a schema
reaches the caller, and other threads' warnings and filters are left alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import is_dataclass
from functools import lru_cache
from typing import Any, cast

import typing_extensions
from pydantic import BaseModel, ConfigDict, Field, RootModel
from pydantic import create_model as pydantic_model
from pydantic.fields import FieldInfo

__all__ = ["create_model", "is_supported_by_pydantic"]

_FIELDS_CONFIG = ConfigDict(arbitrary_types_allowed=True, frozen=True, protected_namespaces=())
_ROOT_CONFIG = ConfigDict(arbitrary_types_allowed=True)
_RESERVED = frozenset(name for name in dir(BaseModel) if not name.startswith("_"))
"""Public attributes of ``BaseModel``: a field may not take these names."""
_RENAMED = "field_{}"
_NO_DEFAULT: Any = object()
_CACHE_SIZE = 256

Definition = tuple[str, object, object]
"""``(field name, type, default)``; ``...`` as default: required."""


def create_model(
    model_name: str, *, field_definitions: Mapping[str, Any] | None = None, root: Any = None
) -> type[BaseModel]:
    """A pydantic model named ``model_name``.

    Args:
        model_name: The model's name (its JSON schema title).
        field_definitions: ``{name: (type, default)}`` (``...``: required): a frozen model with
            these fields.
        root: Instead, a root model of this type (or of ``(type, default)``).

    Raises:
        NotImplementedError: both ``root`` and ``field_definitions`` were given.
    """
    fields = dict(field_definitions or {})
    if root is not None:
        if fields:
            raise NotImplementedError(
                f"A root model has no other fields; got root={root!r} and fields {sorted(fields)}"
            )
        kind, default = cast("tuple[Any, Any]", root) if isinstance(root, tuple) else (root, _NO_DEFAULT)
        return _built(_root_model, (model_name, kind, default), (default,))
    definitions = tuple((name, *_pair(name, value)) for name, value in fields.items())
    return _built(_fields_model, (model_name, definitions), tuple(d for _, _, d in definitions))


def is_supported_by_pydantic(type_: object) -> bool:
    """Whether pydantic validates ``type_`` as it is: a pydantic model, a dataclass or a TypedDict
    pydantic accepts (``typing.TypedDict`` only from Python 3.12; ``typing_extensions``' always)."""
    given: object = type_
    if typing_extensions.is_typeddict(given):
        return sys.version_info >= (3, 12) or type(given).__module__ != "typing"
    if is_dataclass(given):
        return True
    return isinstance(given, type) and issubclass(given, BaseModel)


def _pair(name: str, value: Any) -> tuple[object, object]:  # Any: unpacked, or the error says why
    try:
        kind, default = value
    except (TypeError, ValueError):
        raise TypeError(f"Field {name!r}: expected a (type, default) pair, got {value!r}") from None
    return kind, default


def _built(
    build: Callable[..., type[BaseModel]], args: tuple[object, ...], defaults: tuple[object, ...]
) -> type[BaseModel]:
    """``build(*args)``, cached when ``args`` are hashable (an unhashable default, a list…: built each time)."""
    kinds = tuple(map(_kind, defaults))  # 0, 0.0 and False are equal keys: their types tell them apart
    try:
        hash((args, kinds))
    except TypeError:
        return build(*args)
    return _cached(build, args, kinds)


def _kind(value: object) -> type[object]:
    return type(value)


@lru_cache(maxsize=_CACHE_SIZE)
def _cached(
    build: Callable[..., type[BaseModel]], args: tuple[object, ...], kinds: tuple[type[object], ...]
) -> type[BaseModel]:
    return build(*args)


def _fields_model(model_name: str, definitions: tuple[Definition, ...]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name, kind, default in definitions:
        if name.startswith("_") or name in _RESERVED:
            if isinstance(default, FieldInfo):
                raise NotImplementedError(
                    f"Field {name!r}: a pydantic Field() cannot be given for a name pydantic reserves "
                    "(a leading underscore, or a BaseModel attribute); give a plain default"
                )
            title = name.strip("_").replace("_", " ").title()
            fields[_renamed(name, definitions)] = (kind, Field(default, alias=name, title=title))
        else:
            fields[name] = (kind, default)
    model: type[BaseModel] = pydantic_model(model_name, __config__=_FIELDS_CONFIG, **fields)
    return model


def _renamed(name: str, definitions: tuple[Definition, ...]) -> str:
    """The attribute a reserved field name is kept under (one no other field of the model takes)."""
    taken = {n for n, _, _ in definitions}
    attr = _RENAMED.format(name.lstrip("_") or "_")
    while attr in taken or attr in _RESERVED:
        attr = f"{attr}_"
    return attr


def _root_model(model_name: str, kind: object, default: object) -> type[BaseModel]:
    namespace: dict[str, object] = {
        "__annotations__": {"root": kind},
        "model_config": _ROOT_CONFIG,
        "__module__": __name__,
    }
    if default is not _NO_DEFAULT:
        namespace["root"] = default
    model = cast("type[BaseModel]", type(model_name, (RootModel,), namespace))
    return model
