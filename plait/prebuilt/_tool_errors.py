"""How a failing tool call becomes a ``ToolMessage(status="error")`` (``handle_tool_errors``)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from types import UnionType
from typing import TYPE_CHECKING, Any, Union, cast, get_args, get_origin

from langchain_core.tools.base import ToolException

from plait._internal._narrow import is_str_dict
from plait.prebuilt._injection import InjectedArgs

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails

__all__ = [
    "TOOL_CALL_ERROR_TEMPLATE",
    "TOOL_EXECUTION_ERROR_TEMPLATE",
    "TOOL_INVOCATION_ERROR_TEMPLATE",
    "ErrorHandling",
    "ToolInvocationError",
    "default_handle_tool_errors",
    "error_content",
    "filter_validation_errors",
    "handled_types",
]

ErrorHandling = Union[  # noqa: UP007 - a runtime alias on Python 3.10
    bool, str, Callable[..., str], type[Exception], tuple[type[Exception], ...]
]
"""What ``handle_tool_errors=`` accepts."""

TOOL_CALL_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."
"""The message of a handled error when ``handle_tool_errors`` gives no text of its own."""

TOOL_INVOCATION_ERROR_TEMPLATE = (
    "Error invoking tool '{tool_name}' with kwargs {tool_kwargs} with error:\n"
    " {error}\n"
    " Please fix the error and try again."
)
"""The message the model gets when its arguments do not match the tool's schema."""

TOOL_EXECUTION_ERROR_TEMPLATE = (
    "Error executing tool '{tool_name}' with kwargs {tool_kwargs} with error:\n"
    " {error}\n"
    " Please fix the error and try again."
)
"""A message for an error raised while a tool ran, for handlers that format one themselves
(``ToolNode`` does not use it: an unhandled tool error propagates, a handled one is formatted by
its handler or :data:`TOOL_CALL_ERROR_TEMPLATE`)."""


class ToolInvocationError(ToolException):
    """The model called a tool with arguments its schema rejects (raised only inside ``ToolNode``).

    Args:
        tool_name: The tool.
        source: The validation error.
        tool_kwargs: The arguments the model sent (injected ones left out).
        filtered_errors: The validation errors about those arguments only.
    """

    def __init__(
        self,
        tool_name: str,
        source: ValidationError,
        tool_kwargs: dict[str, Any],
        filtered_errors: list[ErrorDetails] | None = None,
    ) -> None:
        if filtered_errors is not None:
            shown = "\n".join(
                f"{'.'.join(str(part) for part in err.get('loc', ()))}: {err.get('msg', 'Unknown error')}"
                for err in filtered_errors
            )
        else:
            shown = str(source)
        self.message = TOOL_INVOCATION_ERROR_TEMPLATE.format(
            tool_name=tool_name, tool_kwargs=tool_kwargs, error=shown
        )
        self.tool_name = tool_name
        self.tool_kwargs = tool_kwargs
        self.source = source
        self.filtered_errors = filtered_errors
        super().__init__(self.message)


def default_handle_tool_errors(e: Exception) -> str:
    """The default: bad arguments from the model become a message; any other error is raised.

    Raises:
        Exception: ``e`` itself, when it is not a :class:`ToolInvocationError`.
    """
    if isinstance(e, ToolInvocationError):
        return e.message
    raise e


def error_content(e: Exception, flag: ErrorHandling) -> str:
    """The ``ToolMessage`` text for a handled error.

    Raises:
        ValueError: ``flag`` is of no supported kind.
    """
    setting: object = flag  # checked by kind below
    if isinstance(setting, (bool, tuple)) or (isinstance(setting, type) and issubclass(setting, Exception)):
        return TOOL_CALL_ERROR_TEMPLATE.format(error=repr(e))
    if isinstance(setting, str):
        return setting
    if callable(setting):  # pyright: ignore[reportUnknownArgumentType]  # isinstance leaves type arguments unknown
        handler = cast("Callable[[Exception], object]", setting)  # pyright: ignore[reportUnknownArgumentType]  # checked: callable
        return str(handler(e))
    raise ValueError(  # pragma: no cover - the annotations exclude it; kept for untyped callers
        f"Got unexpected type of `handle_tool_error`. Expected bool, str or callable. Received: {flag}"
    )


def _union_types(annotation: object) -> tuple[type[Exception], ...]:
    args = get_args(annotation)
    if all(isinstance(a, type) and issubclass(a, Exception) for a in args):
        return tuple(args)
    raise ValueError(
        "All types in the error handler error annotation must be Exception types. For example, "
        f"`def custom_handler(e: Union[ValueError, TypeError])`. Got '{annotation}' instead."
    )


def _handler_types(handler: Callable[..., str]) -> tuple[type[Exception], ...]:
    """The exception types a handler's first parameter is annotated with (``(Exception,)`` if none).

    Raises:
        ValueError: the annotation names something other than exception types.
    """
    params = list(inspect.signature(handler).parameters.values())
    if not params:
        return (Exception,)
    first = params[1] if params[0].name in ("self", "cls") and len(params) == 2 else params[0]
    hints = typing.get_type_hints(handler)
    if first.name not in hints:
        return (Exception,)
    if get_origin(first.annotation) in (Union, UnionType):
        return _union_types(first.annotation)
    hinted = hints[first.name]
    if get_origin(hinted) in (Union, UnionType):
        return _union_types(hinted)
    if isinstance(hinted, type) and issubclass(hinted, Exception):
        return (hinted,)
    raise ValueError(
        "Arbitrary types are not supported in the error handler signature. Please annotate the error "
        "with either a specific Exception type or a union of Exception types. For example, "
        "`def custom_handler(e: ValueError)` or `def custom_handler(e: Union[ValueError, TypeError])`. "
        f"Got '{hinted}' instead."
    )


def handled_types(flag: ErrorHandling) -> tuple[type[Exception], ...]:
    """The exception types ``handle_tool_errors=flag`` turns into error messages (none when false).

    Raises:
        ValueError: a handler's annotation names something other than exception types.
    """
    setting: object = flag  # checked by kind below
    if setting is False:
        return ()
    if isinstance(setting, type) and issubclass(setting, Exception):
        return (setting,)
    if isinstance(setting, tuple):
        return cast("tuple[type[Exception], ...]", setting)
    if callable(setting) and not isinstance(setting, type):  # pyright: ignore[reportUnknownArgumentType]  # isinstance leaves type arguments unknown
        handler = setting
        return _handler_types(handler)
    return (Exception,)


def filter_validation_errors(error: ValidationError, injected: InjectedArgs | None) -> list[ErrorDetails]:
    """The validation errors about arguments the model controls, injected values left out."""
    hidden: set[str] = set()
    if injected:
        hidden.update(injected.state)
        hidden.update(name for name in (injected.store, injected.runtime) if name)
    kept: list[ErrorDetails] = []
    for detail in error.errors():
        if not detail["loc"] or detail["loc"][0] in hidden:
            continue
        copy: dict[str, Any] = {**detail}
        given = copy.get("input")
        if is_str_dict(given):
            copy["input"] = {k: v for k, v in given.items() if k not in hidden}
        kept.append(cast("ErrorDetails", copy))
    return kept
