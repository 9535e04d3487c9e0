"""``ValidationNode``: check the tool calls of the last AI message against schemas, without running them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import get_executor_for_config
from langchain_core.tools import BaseTool, create_schema_from_function
from pydantic import BaseModel, ValidationError
from pydantic.v1 import BaseModel as BaseModelV1
from pydantic.v1 import ValidationError as ValidationErrorV1

__all__ = ["ValidationNode"]

ErrorFormatter = Callable[[BaseException, ToolCall, Any], str]
"""``format_error(error, call, schema) -> text`` for a call that fails validation."""


def _default_format_error(error: BaseException, call: ToolCall, schema: Any) -> str:
    return f"{error!r}\n\nRespond after fixing all validation errors."


def _schema_of(item: object) -> tuple[str, object]:
    """Raises: ValueError (a tool without a pydantic schema, or an unsupported item)."""
    if isinstance(item, BaseTool):
        schema = item.args_schema
        if schema is None:
            raise ValueError(f"Tool {item.name} does not have an args_schema defined.")
        if not isinstance(schema, type):
            raise ValueError(
                "Validation node only works with tools that have a pydantic BaseModel args_schema. "
                f"Got {item.name} with args_schema: {schema}."
            )
        return item.name, schema
    if isinstance(item, type) and issubclass(item, (BaseModel, BaseModelV1)):
        return item.__name__, item
    if callable(item):  # pyright: ignore[reportUnknownArgumentType]  # isinstance leaves type arguments unknown
        fn = cast("Callable[..., object]", item)
        return getattr(fn, "__name__", "function"), create_schema_from_function("Validation", fn)
    raise ValueError(
        f"Unsupported input to ValidationNode. Expected BaseModel, tool or function. Got: {type(item)}."
    )


class ValidationNode(Runnable[Any, Any]):
    """A node that answers each tool call with its validated arguments as JSON, or the error.

    Useful for structured output: the model "calls" a schema, and a failed validation
    goes back to it as a ``ToolMessage`` (with ``additional_kwargs={"is_error": True}``)
    so it can try again. Nothing is executed.

    Args:
        schemas: Pydantic models, tools with a pydantic ``args_schema``, or functions.
        format_error: Text for a failed validation (default: the error and a request to fix it).
        name: The node name.
        tags: Tags for callbacks.

    Raises:
        ValueError: a schema of an unsupported kind.
    """

    def __init__(
        self,
        schemas: Sequence[BaseTool | type[BaseModel] | Callable[..., Any]],
        *,
        format_error: ErrorFormatter | None = None,
        name: str = "validation",
        tags: list[str] | None = None,
    ) -> None:
        self.name = name
        self.tags = tags
        self._format_error = format_error or _default_format_error
        self.schemas_by_name: dict[str, Any] = dict(_schema_of(item) for item in schemas)

    def _run_one(self, call: ToolCall) -> ToolMessage:
        schema = self.schemas_by_name[call["name"]]
        call_id = cast("str", call["id"])
        try:
            if issubclass(schema, BaseModel):
                content = schema.model_validate(call["args"]).model_dump_json()
            else:
                content = schema.validate(call["args"]).json()
        except (ValidationError, ValidationErrorV1) as exc:
            return ToolMessage(
                content=self._format_error(exc, call, schema),
                name=call["name"],
                tool_call_id=call_id,
                additional_kwargs={"is_error": True},
            )
        return ToolMessage(content=content, name=call["name"], tool_call_id=call_id)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: object) -> Any:  # noqa: A002
        """Validate every tool call of the last message.

        Raises:
            ValueError: no messages, or the last one is not an ``AIMessage``.
        """
        if isinstance(input, list):
            messages: list[Any] = list(cast("Sequence[Any]", input))
        else:
            messages = cast("dict[str, Any]", input).get("messages", [])
            if not messages:
                raise ValueError("No message found in input")
        last = messages[-1]
        if not isinstance(last, AIMessage):
            raise ValueError("Last message is not an AIMessage")
        with get_executor_for_config(config) as executor:
            outputs = list(executor.map(self._run_one, last.tool_calls))
        return outputs if isinstance(input, list) else {"messages": outputs}
