"""Rebuilding langchain-core messages from plait's own rows without validating them again.

A stored message holds the fields of a message that was validated when it was
created. Validating them again is most of the cost of reading a conversation,
so a message is assembled the way pydantic's ``model_construct`` does, with each
class's defaults worked out once (``model_construct`` itself inspects every
default factory's signature on every call, which costs more than validating).

Only used for the classes stored by number (the langchain-core messages of
:data:`plait.checkpoint._ext.KNOWN`), after the allow-list and kind checks; a
record that is not a map of ``str`` keys with ``str`` or list ``content``, that
names a field the class does not have, or whose fields do not hold the types
langchain-core gives them (``additional_kwargs=5``), is built the validating way
(and refused as a new message with those fields would be).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel

__all__ = ["construct"]


class _Blueprint(NamedTuple):
    template: dict[str, object]
    """Every field in the class's order, with its default (``None`` for fields filled in later)."""
    factories: tuple[tuple[str, Callable[[], object]], ...]
    """Fields whose default is made by a factory, called per message."""
    names: frozenset[str]
    required: frozenset[str]
    extra: bool
    """Whether unknown keys are kept (``extra="allow"``)."""


_UNUSABLE = _Blueprint({}, (), frozenset(), frozenset(), False)
_blueprints: dict[type, _Blueprint] = {}
_lock = threading.Lock()


def _blueprint(cls: Any) -> _Blueprint:
    template: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    required: set[str] = set()
    # a message is made as object.__new__ makes it: a class with a __new__ of its own is validated
    usable = not getattr(cls, "__private_attributes__", None) and cls.__new__ is _NEW
    for name, info in cls.__pydantic_fields__.items():
        factory = info.default_factory
        if (factory is not None and info.default_factory_takes_validated_data) or info.alias not in (
            None,
            name,
        ):
            usable = False
        if info.is_required():
            required.add(name)
            template[name] = None
        elif factory is not None:
            factories.append((name, factory))
            template[name] = None
        else:
            template[name] = info.default
    extra = cls.model_config.get("extra") == "allow"
    built = _Blueprint(template, tuple(factories), frozenset(template), frozenset(required), extra)
    with _lock:
        _blueprints[cls] = built if usable else _UNUSABLE
    return _blueprints[cls]


_SLOTS = {
    name: BaseModel.__dict__[name]
    for name in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
}
"""pydantic's slot descriptors, set directly (``object.__setattr__`` looks each one up every time)."""
_DICT = _SLOTS["__dict__"].__set__
_FIELDS_SET = _SLOTS["__pydantic_fields_set__"].__set__
_EXTRA = _SLOTS["__pydantic_extra__"].__set__
_PRIVATE = _SLOTS["__pydantic_private__"].__set__
_NEW = object.__new__


_NONE = type(None)
_CALLS = (list,)
"""A list of tool calls (maps)."""
_KINDS: dict[str, tuple[type, ...]] = {
    "content": (str, list),
    "additional_kwargs": (dict,),
    "response_metadata": (dict,),
    "type": (str,),
    "name": (str, _NONE),
    "id": (str, _NONE),
    "tool_calls": _CALLS,
    "invalid_tool_calls": _CALLS,
    "tool_call_chunks": _CALLS,
    "usage_metadata": (dict, _NONE),
    "tool_call_id": (str,),
    "role": (str,),
    "status": (str,),
}
"""The types langchain-core's message fields hold (a field not listed is validated by its class)."""


def _plain(fields: Mapping[str, Any]) -> bool:
    """Whether each known field holds its type (and each tool call is a map): else the message is validated."""
    for name, value in fields.items():
        kinds = _KINDS.get(name)
        if kinds is None:
            continue
        if type(value) not in kinds:
            return False
        if kinds is _CALLS and value and any(type(c) is not dict for c in value):
            return False
    return True


def construct(cls: Any, fields: Mapping[str, Any]) -> Any | None:
    """The message ``cls(**fields)`` would build, without validation; ``None`` when it must be validated."""
    plan = _blueprints.get(cls) or _blueprint(cls)
    keys = fields.keys()
    if plan is _UNUSABLE or not plan.required <= keys or not _plain(fields):
        return None
    extra: dict[str, Any] | None = None
    if keys <= plan.names:
        values = {**plan.template, **fields}
    elif plan.extra:
        extra = {k: v for k, v in fields.items() if k not in plan.names}
        values = {**plan.template, **{k: v for k, v in fields.items() if k in plan.names}}
    else:
        return None
    for name, factory in plan.factories:
        if name not in fields:
            values[name] = factory()
    message = _NEW(cls)
    _DICT(message, values)
    _FIELDS_SET(message, set(keys))  # as validation sets it (extra keys included)
    _EXTRA(message, (extra or {}) if plan.extra else None)
    _PRIVATE(message, None)
    return message
