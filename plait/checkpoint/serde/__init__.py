"""The checkpoint codec (:mod:`plait.checkpoint.serde._codec`) and LangGraph's serializer paths."""

from __future__ import annotations

from plait.checkpoint.serde._codec import (
    DEFAULT_ALLOWED_CLASSES,
    DEFAULT_ALLOWED_MODULES,
    DEFAULT_MAX_VALUE_BYTES,
    Serializer,
    allow,
)

__all__ = [
    "DEFAULT_ALLOWED_CLASSES",
    "DEFAULT_ALLOWED_MODULES",
    "DEFAULT_MAX_VALUE_BYTES",
    "Serializer",
    "allow",
]
