"""Which classes a checkpoint record may name: the allow-lists and the exact-name lookup.

Used by :mod:`plait.checkpoint.serde` (whose docstring states the rule). A record names its class
by ``(module, qualname)``; :meth:`AllowList.find` returns the class only if it was registered under
exactly that name, or if the name is allowed and the class is *defined* there: the module is imported
and the class taken from the module's own namespace, hopping through ``Outer.Inner`` only via classes
of that module, never by ``getattr`` through whatever the module imports.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import sys
import threading
import typing
from collections.abc import Iterable
from typing import Any

from plait._internal._narrow import is_str_dict
from plait.errors import SerializationError

__all__ = [
    "DEFAULT_ALLOWED_CLASSES",
    "DEFAULT_ALLOWED_MODULES",
    "VERSION",
    "AllowList",
    "NotAllowed",
    "allow",
    "classes_in",
]

DEFAULT_ALLOWED_MODULES: tuple[str, ...] = (
    "langchain_core.messages",
    "langchain_core.documents.base",
    "langchain_core.outputs",
    "langchain_core.agents",
)
"""Module namespaces (submodules included) whose data classes are always rebuilt."""

DEFAULT_ALLOWED_CLASSES: tuple[str, ...] = (
    "plait.types.Send",
    "plait.types.Overwrite",
    "plait.types.Interrupt",
    "plait.types.Command",
)
"""Classes (exact dotted paths) that are always rebuilt."""

HOW = (
    "Allow it with plait.checkpoint.serde.allow({name!r}) (process-wide) or "
    "Serializer(allowed=[{name!r}]) passed to the saver as serde=..."
)

_GLOBAL_NAMES: set[str] = set()
_GLOBAL_CLASSES: dict[tuple[str, str], type] = {}
_LOCK = threading.Lock()
VERSION = [0]
"""Bumped by :func:`allow`, so serializers drop the classes they cached."""


class NotAllowed(SerializationError):
    """The name is on no allow-list (writing then points to ``allow``)."""


def _register(item: type | str, names: set[str], classes: dict[tuple[str, str], type]) -> None:
    if isinstance(item, type):
        classes[(item.__module__, item.__qualname__)] = item
    elif isinstance(item, str) and _dotted(item):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: callers may pass anything
        names.add(item)
    else:
        raise TypeError(f"allow() takes classes or dotted names, got {item!r}")


def allow(*items: type | str) -> None:
    """Allow classes or modules for every serializer in this process.

    Args:
        *items: Classes (found by their exact name, even if defined in a function), dotted class
            paths, or module names (the data classes defined in the module and its submodules).
    """
    with _LOCK:
        new = False
        for item in items:
            if isinstance(item, type):
                new = new or _GLOBAL_CLASSES.get((item.__module__, item.__qualname__)) is not item
            else:
                new = new or not isinstance(item, str) or item not in _GLOBAL_NAMES  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: callers may pass anything
            _register(item, _GLOBAL_NAMES, _GLOBAL_CLASSES)
        if new:  # (an agent built per request allows the same classes each time: caches stay)
            VERSION[0] += 1


class AllowList:
    """The classes one serializer may store and rebuild: its own entries, the process-wide ones, the defaults."""

    def __init__(self, items: Iterable[type | str] = ()) -> None:
        self.names: set[str] = set()
        self.classes: dict[tuple[str, str], type] = {}
        self.add(*items)

    def add(self, *items: type | str) -> None:
        for item in items:
            _register(item, self.names, self.classes)

    def _state(self, module: str, qualname: str) -> tuple[type | None, tuple[str, ...]]:
        with _LOCK:
            found = self.classes.get((module, qualname)) or _GLOBAL_CLASSES.get((module, qualname))
            return found, (*self.names, *_GLOBAL_NAMES, *DEFAULT_ALLOWED_MODULES, *DEFAULT_ALLOWED_CLASSES)

    def is_allowed(self, module: str, qualname: str) -> bool:
        """Whether the *name* is registered, or is a class path or lies in a module namespace allowed."""
        found, names = self._state(module, qualname)
        return found is not None or _within(module, qualname, names)

    def find(self, module: str, qualname: str) -> type:
        """The class recorded as ``module``/``qualname``, by exact name only.

        Raises:
            NotAllowed: The name is on no allow-list.
            SerializationError: The name is no class defined under exactly that name.
        """
        name = f"{module}.{qualname}"
        found, names = self._state(module, qualname)
        if found is None:
            if not (_dotted(module) and _dotted(qualname)):
                raise SerializationError(f"Stored value names {name!r}, which is not a class name")
            if not _within(module, qualname, names):
                raise NotAllowed(
                    f"Stored value is an instance of {name}, which is not allowed to be rebuilt (only "
                    "registered data classes are). If it is one of your data classes: "
                    + HOW.format(name=name)
                )
            found = _lookup(module, qualname, _importable(module, qualname, names))
        if not isinstance(found, type) or found.__module__ != module or found.__qualname__ != qualname:
            raise SerializationError(
                f"Stored value names {name}, which is not a class defined under that name"
            )
        return found


def _importable(module: str, qualname: str, names: Iterable[str]) -> bool:
    """Whether reading a record may import ``module``: it was allowed by exact name, or is a default one.

    A submodule of a package allowed as a whole is only looked up once the application has
    imported it: a stored row must never make a module run its top-level code.
    """
    path = f"{module}.{qualname}"
    return any(path == n or module == n for n in names) or any(
        module == n or module.startswith(n + ".") for n in DEFAULT_ALLOWED_MODULES
    )


def _lookup(module: str, qualname: str, may_import: bool) -> Any:
    """Take ``qualname`` from ``module``'s own namespace, hopping only through its own classes.

    ``module`` is imported only when ``may_import`` (see :func:`_importable`).
    """
    name = f"{module}.{qualname}"
    found: Any = sys.modules.get(module)
    if found is None and not may_import:
        raise SerializationError(
            f"Stored value is an instance of {name}, but module {module} is not imported. plait never "
            "imports a module that a stored row names unless it was allowed by its exact name: import "
            f"{module} before reading, or allow({module!r}) or allow({name!r})."
        )
    try:
        found = found or importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any import failure is a decode failure
        raise SerializationError(
            f"Stored value is an instance of {name}, which cannot be imported: {exc}. Make "
            "sure the module is installed and the class still exists under that name."
        ) from exc
    for part in qualname.split("."):
        # the namespace itself: no module __getattr__, no descriptors, no imported names
        found = vars(found).get(part) if hasattr(found, "__dict__") else None
        if not isinstance(found, type) or found.__module__ != module:
            raise SerializationError(
                f"Stored value is an instance of {name}, which is not a class defined in "
                f"{module} (renamed or moved? only classes defined there are rebuilt)"
            )
    return found


def _dotted(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def _within(module: str, qualname: str, names: Iterable[str]) -> bool:
    path = f"{module}.{qualname}"
    return any(path == n or module == n or module.startswith(n + ".") for n in names)


_TUPLE: type = tuple


def _stored_kind(item: type[object]) -> bool:
    """A class whose instances checkpoints store by name: a pydantic model, dataclass, enum or NamedTuple."""
    if dataclasses.is_dataclass(item) or issubclass(item, enum.Enum):
        return True
    if getattr(item, "_fields", None) is not None and issubclass(item, _TUPLE):
        return True
    pydantic = sys.modules.get("pydantic")
    model: Any = getattr(pydantic, "BaseModel", None)
    return model is not None and issubclass(item, model)


def _field_types(item: type) -> list[object]:
    model_fields: object = getattr(item, "model_fields", None)
    if is_str_dict(model_fields):  # a pydantic model
        return [getattr(f, "annotation", None) for f in model_fields.values()]
    try:
        return list(typing.get_type_hints(item).values())
    except Exception:  # noqa: BLE001 - an unresolvable name: the annotations that are types still count
        raw: dict[str, object] = getattr(item, "__annotations__", {})
        return [a for a in raw.values() if not isinstance(a, str)]


def classes_in(*annotations: object) -> list[type]:
    """The classes a value of these annotations may hold: the pydantic models, dataclasses, enums and
    NamedTuples they name, directly or inside ``list[...]``, ``dict[...]``, ``Annotated[...]``,
    ``Optional[...]`` and the fields of such classes."""
    found: list[type] = []
    todo: list[object] = list(annotations)
    while todo:
        item = todo.pop()
        if not isinstance(item, type) or typing.get_args(item):
            todo.extend(typing.get_args(item))
            origin = typing.get_origin(item)
            if isinstance(origin, type) and origin not in (list, dict, set, frozenset, tuple, type):
                todo.append(origin)
            continue
        if item in found or not _stored_kind(item):
            continue
        found.append(item)
        todo.extend(_field_types(item))
    return found
