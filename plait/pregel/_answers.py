"""``interrupt(response_schema=)``: the schema shown with a question and the check of its answer."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from pydantic import BaseModel, TypeAdapter, ValidationError

from plait._internal._narrow import is_str_dict
from plait.checkpoint._allow import allow
from plait.errors import mark_invalid_resume

__all__ = ["ResponseSchema"]


@dataclass(frozen=True, slots=True)
class ResponseSchema:
    """What an interrupt expects as its answer.

    Attributes:
        shown: The JSON Schema surfaced on the ``Interrupt`` (``None``: no schema).
        adapter: Validates answers (``None``: answers are taken as they are).
    """

    shown: dict[str, Any] | None = None
    adapter: TypeAdapter[Any] | None = None

    @staticmethod
    def of(schema: object) -> ResponseSchema:
        """The response schema for ``interrupt(response_schema=schema)``.

        A ``dict`` is a JSON Schema shown as is (answers are not checked); a pydantic model,
        ``TypedDict`` or dataclass is shown as its JSON Schema and validates answers.

        Raises:
            pydantic.PydanticSchemaGenerationError: a type pydantic cannot validate.
        """
        if schema is None:
            return _NONE
        if is_str_dict(schema):
            return ResponseSchema(shown=schema)
        return _typed(schema)

    def validate(self, answer: object) -> object:
        """``answer`` as the schema's type.

        Raises:
            pydantic.ValidationError: the answer does not fit (tagged: ``is_invalid_resume``).
        """
        if self.adapter is None:
            return answer
        try:
            return self.adapter.validate_python(answer)
        except ValidationError as exc:
            mark_invalid_resume(exc)
            raise


_NONE = ResponseSchema()


@lru_cache(maxsize=256)
def _typed(schema: Any) -> ResponseSchema:
    adapter: TypeAdapter[Any] = TypeAdapter(schema)
    kind = cast("type[Any]", schema)
    if isinstance(schema, type) and (issubclass(kind, BaseModel) or dataclasses.is_dataclass(kind)):
        # the graph's own code names the class its answers become: they may be checkpointed
        allow(kind)
    return ResponseSchema(shown=adapter.json_schema(), adapter=adapter)
