"""LangGraph's private typing helpers (``langgraph._internal._typing``), for code that imports them."""

from __future__ import annotations

from dataclasses import Field
from typing import Any, ClassVar, Protocol, TypeAlias

from pydantic import BaseModel
from typing_extensions import TypedDict

from plait._schema import MISSING

__all__ = [
    "EMPTY_SEQ",
    "MISSING",
    "DataclassLike",
    "DeprecatedKwargs",
    "StateLike",
    "TypedDictLikeV1",
    "TypedDictLikeV2",
]


class TypedDictLikeV1(Protocol):
    """A TypedDict-like class whose key sets are class variables."""

    __required_keys__: ClassVar[frozenset[str]]
    __optional_keys__: ClassVar[frozenset[str]]


class TypedDictLikeV2(Protocol):
    """A TypedDict-like class whose key sets are plain attributes."""

    __required_keys__: frozenset[str]
    __optional_keys__: frozenset[str]


class DataclassLike(Protocol):
    """A dataclass (anything with ``__dataclass_fields__``)."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]


StateLike: TypeAlias = "TypedDictLikeV1 | TypedDictLikeV2 | DataclassLike | BaseModel"
"""What a state schema may be: a TypedDict, a dataclass or a pydantic model."""


class DeprecatedKwargs(TypedDict):
    """``**kwargs: Unpack[DeprecatedKwargs]``: keyword arguments a signature keeps only to deprecate them."""


EMPTY_SEQ: tuple[str, ...] = ()
"""An empty sequence of strings."""
