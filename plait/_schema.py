"""State schemas -> field specs.

A schema (TypedDict, dataclass or pydantic model) is read once, when the graph
is built, into a tuple of :class:`FieldSpec`: the key, its reducer (or none),
the value a reducer starts from, and the default a node sees before the key is
written. Nothing here runs per step.
"""

from __future__ import annotations

import collections.abc
import copy
import dataclasses
import inspect
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, cast, get_args, get_origin

import typing_extensions

from plait.errors import GraphBuildError

__all__ = ["MISSING", "FieldSpec", "SchemaKind", "fields_of", "is_schema", "schema_kind", "validate_reducer"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()
"""Marker for "no value" (distinct from ``None``, which is a value)."""

_ABSTRACT_TO_CONCRETE: dict[Any, type] = {
    collections.abc.Sequence: list,
    collections.abc.MutableSequence: list,
    collections.abc.Set: set,
    collections.abc.MutableSet: set,
    collections.abc.Mapping: dict,
    collections.abc.MutableMapping: dict,
}


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One state key as declared by a schema.

    Attributes:
        name: The key.
        annotation: The declared type, without ``Annotated`` extras.
        reducer: ``f(old, new) -> merged``, or ``None`` for overwrite.
        initial: Factory of the value a reducer starts from (zero value or
            declared default), or ``None`` when there is none.
        default: Value nodes see while the key is unset (overwrite keys only).
    """

    name: str
    annotation: Any
    reducer: Callable[[Any, Any], Any] | None
    initial: Callable[[], Any] | None
    default: Any = MISSING


class SchemaKind:
    """How a schema turns a dict of values into what a node receives."""

    TYPED_DICT = "typeddict"
    DATACLASS = "dataclass"
    PYDANTIC = "pydantic"


class _PydanticField(Protocol):
    """What plait reads of a pydantic ``FieldInfo`` (pydantic is optional, so it is not imported)."""

    annotation: Any
    metadata: list[Any]

    def is_required(self) -> bool: ...

    def get_default(self, *, call_default_factory: bool) -> Any: ...


class _PydanticModel(Protocol):
    """A pydantic model class, as plait reads it."""

    model_fields: dict[str, _PydanticField]


def _model_fields(schema: type) -> dict[str, _PydanticField]:
    """The fields of a pydantic model class (``schema_kind(schema) == SchemaKind.PYDANTIC``)."""
    return cast(_PydanticModel, schema).model_fields


def _annotated(info: _PydanticField) -> Any:
    """A pydantic field's annotation with its metadata put back (``Annotated[tp, *metadata]``)."""
    if not info.metadata:
        return info.annotation
    args = (info.annotation, *info.metadata)
    return Annotated[args]


def _is_pydantic(tp: Any) -> bool:
    pyd = sys.modules.get("pydantic")
    return pyd is not None and isinstance(tp, type) and issubclass(tp, pyd.BaseModel)


def schema_kind(tp: Any) -> str | None:
    """Return the :class:`SchemaKind` of ``tp``, or ``None`` if it is not a state schema."""
    if isinstance(tp, type) and typing_extensions.is_typeddict(tp):
        return SchemaKind.TYPED_DICT
    if _is_pydantic(tp):
        return SchemaKind.PYDANTIC
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return SchemaKind.DATACLASS
    return None


def is_schema(tp: Any) -> bool:
    """Whether ``tp`` can describe state (TypedDict, dataclass or pydantic model)."""
    return schema_kind(tp) is not None


def validate_reducer(reducer: Any) -> None:
    """Reject a reducer that cannot be called as ``reducer(old, new)``.

    Builtins without an introspectable signature (``max``, ``min``) are
    accepted: they do take two positional arguments.

    Raises:
        ValueError: ``reducer`` is not callable or takes other than two positional arguments.
    """
    if not callable(reducer):
        raise GraphBuildError(f"Invalid reducer {reducer!r}: a reducer must be callable as f(old, new)")
    try:
        sig = inspect.signature(reducer)
    except (TypeError, ValueError):
        return  # builtins such as max/min: callable with two arguments
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = any(p.kind is p.VAR_POSITIONAL for p in params)
    if len(positional) == 2 or (star and len(positional) < 2):
        return
    raise GraphBuildError(f"Invalid reducer signature. Expected (a, b) -> c. Got {sig}")


def _zero_factory(annotation: Any) -> Callable[[], Any] | None:
    tp = get_origin(annotation) or annotation
    tp = _ABSTRACT_TO_CONCRETE.get(tp, tp)
    if not isinstance(tp, type):
        return None
    try:
        tp()
    except Exception:  # noqa: BLE001 - any failure means "no zero value"
        return None
    return tp


def _split_annotated(hint: Any) -> tuple[Any, Callable[[Any, Any], Any] | None]:
    if get_origin(hint) is not Annotated:
        return hint, None
    base, *extras = get_args(hint)
    reducer = None
    for extra in reversed(extras):
        if callable(extra):
            reducer = extra
            break
    if reducer is not None:
        validate_reducer(reducer)
    return base, reducer


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


def _copying(value: Any) -> Callable[[], Any]:
    if isinstance(value, (str, bytes, int, float, bool, type(None), tuple, frozenset)):
        return _constant(value)
    return lambda: copy.copy(value)


def _declared_defaults(schema: type, kind: str, names: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if kind == SchemaKind.DATACLASS:
        for f in dataclasses.fields(schema):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
    elif kind == SchemaKind.PYDANTIC:
        for name, info in _model_fields(schema).items():
            if not info.is_required():
                out[name] = info.get_default(call_default_factory=True)
    else:  # TypedDict: plait honours class-level defaults (seeds 001/002)
        for klass in reversed(_typeddict_lineage(schema)):
            out.update({n: v for n, v in vars(klass).items() if n in names})
    return out


def _typeddict_lineage(schema: type) -> list[type]:
    """``schema`` and the TypedDicts it derives from, nearest first (TypedDict MROs skip them)."""
    found: list[type] = []
    todo = [schema]
    while todo:
        klass = todo.pop(0)
        if klass in found or not typing_extensions.is_typeddict(klass):
            continue
        found.append(klass)
        todo.extend(b for b in getattr(klass, "__orig_bases__", ()) if isinstance(b, type))
    return found


def fields_of(schema: type) -> tuple[FieldSpec, ...]:
    """Read ``schema`` into field specs, in declaration order.

    Raises:
        GraphBuildError: ``schema`` is not a TypedDict, dataclass or pydantic model,
            or one of its reducers has the wrong signature.
    """
    kind = schema_kind(schema)
    if kind is None:
        raise GraphBuildError(
            f"Invalid state schema {schema!r}: use a TypedDict, a dataclass or a pydantic BaseModel"
        )
    if kind == SchemaKind.PYDANTIC:
        hints = {n: _annotated(f) for n, f in _model_fields(schema).items()}
    else:
        try:
            hints = typing.get_type_hints(schema, include_extras=True)
        except NameError as exc:
            raise GraphBuildError(
                f"Cannot resolve the annotations of state schema {schema.__qualname__}: {exc}. Names used in "
                "annotations (reducers, types) must be importable from the schema's module: define them at module "
                "level, or drop `from __future__ import annotations` for a schema defined inside a function."
            ) from exc
    defaults = _declared_defaults(schema, kind, list(hints))
    specs: list[FieldSpec] = []
    for name, hint in hints.items():
        if name.startswith("__") or get_origin(hint) is typing.ClassVar:
            continue
        annotation, reducer = _split_annotated(hint)
        default = defaults.get(name, MISSING)
        initial = None
        if reducer is not None:
            initial = (
                _copying(default)
                if default is not MISSING and default is not None
                else _zero_factory(annotation)
            )
            default = MISSING
        specs.append(FieldSpec(name, annotation, reducer, initial, default))
    return tuple(specs)
