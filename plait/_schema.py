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
from plait.managed.base import is_managed_value

__all__ = [
    "MISSING",
    "ROOT",
    "FieldSpec",
    "SchemaKind",
    "fields_of",
    "is_schema",
    "schema_kind",
    "validate_reducer",
    "zero_factory",
]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()
"""Marker for "no value" (distinct from ``None``, which is a value)."""

ROOT = "__root__"
"""The one key of a state that is a single value (``StateGraph(Annotated[list, operator.add])``)."""

_ABSTRACT_TO_CONCRETE: dict[object, type] = {
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
        channel: The channel declared in the annotation (``Annotated[list[str], Topic(str)]``),
            bound to this key, or ``None``.
        managed: The managed value class (``RemainingSteps``…): the key is filled in per
            task and never written or stored.
    """

    name: str
    annotation: Any  # a type expression, as typing and pydantic take it
    reducer: Callable[[object, object], object] | None
    initial: Callable[[], object] | None
    default: object = MISSING
    channel: Any = None  # a BaseChannel (plait.channels imports this module)
    managed: object = None


class SchemaKind:
    """How a schema turns a dict of values into what a node receives."""

    TYPED_DICT = "typeddict"
    DATACLASS = "dataclass"
    PYDANTIC = "pydantic"
    CLASS = "class"
    """A plain class with annotations: its keys, as a dict (LangGraph accepts it)."""
    ROOT = "root"
    """Not a class with keys: the state is one value (key :data:`ROOT`)."""


class _PydanticField(Protocol):
    """What plait reads of a pydantic ``FieldInfo`` (pydantic is optional, so it is not imported)."""

    annotation: object
    metadata: list[object]

    def is_required(self) -> bool: ...

    def get_default(self, *, call_default_factory: bool) -> object: ...


class _PydanticModel(Protocol):
    """A pydantic model class, as plait reads it."""

    model_fields: dict[str, _PydanticField]


def _model_fields(schema: type) -> dict[str, _PydanticField]:
    """The fields of a pydantic model class (``schema_kind(schema) == SchemaKind.PYDANTIC``)."""
    return cast(_PydanticModel, schema).model_fields


def _annotated(info: _PydanticField) -> object:
    """A pydantic field's annotation with its metadata put back (``Annotated[tp, *metadata]``)."""
    if not info.metadata:
        return info.annotation
    args = (info.annotation, *info.metadata)
    return Annotated[args]


def _is_pydantic(tp: object) -> bool:
    pyd = sys.modules.get("pydantic")
    return pyd is not None and isinstance(tp, type) and issubclass(tp, pyd.BaseModel)


def schema_kind(tp: object) -> str | None:
    """Return the :class:`SchemaKind` of ``tp``, or ``None`` if it is not a state schema."""
    if isinstance(tp, type) and typing_extensions.is_typeddict(tp):
        return SchemaKind.TYPED_DICT
    if _is_pydantic(tp):
        return SchemaKind.PYDANTIC
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return SchemaKind.DATACLASS
    return None


def is_schema(tp: object) -> bool:
    """Whether ``tp`` can describe state (TypedDict, dataclass or pydantic model)."""
    return schema_kind(tp) is not None


def validate_reducer(reducer: object) -> None:
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


def zero_factory(annotation: object) -> Callable[[], Any] | None:  # a class: makes a value of the annotation
    """``tp`` when ``tp()`` builds a zero value of ``annotation`` (``list``, ``int``…), else ``None``."""
    if annotation is None:
        return None
    tp = get_origin(annotation) or annotation
    tp = _ABSTRACT_TO_CONCRETE.get(tp, tp)
    if not isinstance(tp, type):
        return None
    try:
        tp()
    except Exception:  # noqa: BLE001 - any failure means "no zero value"
        return None
    return tp


_WRAPPERS = (typing_extensions.Required, typing_extensions.NotRequired, typing_extensions.ReadOnly)


def _unwrap(hint: object) -> object:
    """``hint`` without ``Required[...]`` / ``NotRequired[...]`` / ``ReadOnly[...]`` around it."""
    while get_origin(hint) in _WRAPPERS:
        hint = get_args(hint)[0]
    return hint


def _is_channel(extra: object) -> bool:
    # plait.channels imports this module, so a channel is recognised by its interface
    return callable(getattr(extra, "merge", None)) and callable(getattr(extra, "from_checkpoint", None))


@dataclass(frozen=True, slots=True)
class _Extras:
    base: object
    reducer: Callable[[object, object], object] | None = None
    channel: Any = None  # a BaseChannel (plait.channels imports this module)
    managed: object = None


def _managed_of(hint: object) -> object:
    if get_origin(hint) is Annotated:
        last = get_args(hint)[-1]
        last = get_origin(last) or last
        if is_managed_value(last):
            return last
    return None


def _split_annotated(hint: object) -> _Extras:
    hint = _unwrap(hint)
    managed = _managed_of(hint)
    if managed is not None:
        return _Extras(_unwrap(get_args(hint)[0]), managed=managed)
    if get_origin(hint) is not Annotated:
        return _Extras(hint)
    base, *extras = get_args(hint)
    base = _unwrap(base)
    for extra in extras:
        if _is_channel(extra):
            return _Extras(base, channel=_bind(extra, base))
    reducer = None
    for extra in reversed(extras):
        if callable(extra):
            reducer = extra
            break
    if reducer is not None:
        validate_reducer(reducer)
    return _Extras(base, reducer=reducer)


def _bind(extra: object, base: object) -> object:
    """A channel instance for a key: ``Topic(str)`` is copied, a class such as ``EphemeralValue`` built."""
    if isinstance(extra, type):
        return extra(get_origin(base) or base)
    return extra


def _constant(value: Any) -> Callable[[], object]:
    return lambda: value


def _copying(value: Any) -> Callable[[], object]:  # Any: isinstance() below must not narrow it
    if isinstance(value, (str, bytes, int, float, bool, type(None), tuple, frozenset)):
        return _constant(value)
    return lambda: copy.copy(value)


def _declared_defaults(schema: type, kind: str, names: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
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


def _hints(schema: type, kind: str) -> dict[str, object]:
    if kind == SchemaKind.PYDANTIC:
        return {n: _annotated(f) for n, f in _model_fields(schema).items()}
    try:
        return typing.get_type_hints(schema, include_extras=True)
    except NameError as exc:
        raise GraphBuildError(
            f"Cannot resolve the annotations of state schema {schema.__qualname__}: {exc}. Names used in "
            "annotations (reducers, types) must be importable from the schema's module: define them at module "
            "level, or drop `from __future__ import annotations` for a schema defined inside a function."
        ) from exc


def _spec(name: str, hint: object, default: object) -> FieldSpec:
    extras = _split_annotated(hint)
    annotation, reducer = extras.base, extras.reducer
    if extras.managed is not None:
        return FieldSpec(name, annotation, None, None, managed=extras.managed)
    if extras.channel is not None:
        channel = extras.channel
        if not channel.state_field:
            raise NotImplementedError(
                f"State key {name!r}: {type(channel).__name__} is a runtime channel and cannot serve a state "
                "key; use LastValue, BinaryOperatorAggregate, Topic, EphemeralValue, UntrackedValue or AnyValue"
            )
        return FieldSpec(name, annotation, None, None, channel=channel)
    initial = None
    if reducer is not None:
        initial = (
            _copying(default) if default is not MISSING and default is not None else zero_factory(annotation)
        )
        default = MISSING
    return FieldSpec(name, annotation, reducer, initial, default)


def fields_of(schema: Any) -> tuple[FieldSpec, ...]:  # a schema class, or a type expression
    """Read ``schema`` into field specs, in declaration order.

    A TypedDict, dataclass, pydantic model or any class with annotations has one
    field per annotation. Anything else (``list``, ``Annotated[str, operator.add]``)
    makes the state a single value: one field named :data:`ROOT`.

    Raises:
        GraphBuildError: one of the reducers has the wrong signature, or the
            annotations cannot be resolved.
    """
    kind = schema_kind(schema)
    if kind is None:
        if not _has_keys(schema):
            return (_spec(ROOT, schema, MISSING),)
        kind = SchemaKind.CLASS
    hints = _hints(schema, kind)
    defaults = _declared_defaults(schema, kind, list(hints)) if kind != SchemaKind.CLASS else {}
    specs: list[FieldSpec] = []
    for name, hint in hints.items():
        if name.startswith("__") or get_origin(hint) is typing.ClassVar:
            continue
        specs.append(_spec(name, hint, defaults.get(name, MISSING)))
    return tuple(specs)


def _has_keys(schema: object) -> bool:
    """A class with annotations of its own (LangGraph reads its keys from them)."""
    return isinstance(schema, type) and bool(getattr(schema, "__annotations__", None))
