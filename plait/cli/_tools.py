"""``plait chat --tools module:attr``: load the agent's tools from the user's own code, show their calls.

``attr`` names a list (or tuple) of tools, a single tool, or plain functions, as seed 004's
agents pass them to ``create_agent(tools=...)``. The module is imported from the current
directory first, then from ``sys.path``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import cast

import click
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool

from plait._internal._narrow import is_dict, is_list, is_sequence

__all__ = ["Printer", "call_text", "load_tools", "one_line", "tool_name"]


def load_tools(spec: str) -> list[BaseTool | Callable[..., object]]:
    """The tools ``spec`` (``module:attr``, ``attr`` may be dotted) names.

    Raises:
        click.BadParameter: ``spec`` is malformed, its module or attribute is missing, importing
            the module failed, or the attribute is not a tool, a function or a list of them.
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise _bad(f"{spec!r} is not module:attr; e.g. --tools mytools:tools (a list in mytools.py)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        value: object = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise _bad(f"no module {module_name!r} in {os.getcwd()} or on the Python path") from None
        raise _bad(f"importing {module_name!r} failed: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any failure of the user's module is one line
        raise _bad(f"importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(value, part):
            raise _bad(f"{module_name!r} has no attribute {attr!r}")
        value = getattr(value, part)
    tools: list[BaseTool | Callable[..., object]] = []
    for item in value if is_sequence(value) else [value]:
        if not isinstance(item, BaseTool) and not callable(item):
            raise _bad(
                f"{spec} holds {item!r} ({type(item).__name__}), which is not a tool: give a list of "
                "@tool functions, BaseTool objects or plain functions, or a single one"
            )
        tools.append(item)
    return tools


def _bad(message: str) -> click.BadParameter:
    return click.BadParameter(message, param_hint="--tools")


class Printer:
    """Prints a streamed turn: the reply's tokens, and each tool call with its result."""

    def __init__(self) -> None:
        self.started = False  # the reply's "AI：" is printed
        self.open_line = False  # the cursor is after text on the current line
        self.calls: dict[str, str] = {}

    def text(self, text: str) -> None:
        """A piece of the reply (the first one after "AI：")."""
        if not self.started:
            click.echo("AI：", nl=False)
            self.started = self.open_line = True
        click.echo(text, nl=False)

    def update(self, update: object) -> None:
        """A stream "updates" chunk: announce the model's tool calls, then print the tools' results."""
        for message in _messages_of(update):
            if isinstance(message, AIMessage):
                # ToolCall read as a Mapping: its TypedDict is partly Unknown to pyright
                for call in cast("Sequence[Mapping[str, object]]", message.tool_calls):
                    self.calls[str(call.get("id"))] = call_text(str(call.get("name")), call.get("args"))
                    self._line(f"Tool call：{self.calls[str(call.get('id'))]}")
            elif isinstance(message, ToolMessage):
                name = self.calls.get(message.tool_call_id, message.name or "tool")
                self._line(f"Tool result：{name} -> {one_line(message.text)}")

    def _line(self, text: str) -> None:
        if self.open_line:
            click.echo("")
        click.echo(text)
        self.open_line = False
        self.started = False  # text after a tool call is a new reply


def _messages_of(update: object) -> list[object]:
    """The messages in a stream "updates" chunk (``{node: {"messages": [...]}}``)."""
    found: list[object] = []
    if is_dict(update):
        for values in update.values():
            messages = values.get("messages") if is_dict(values) else None
            if is_list(messages):
                found.extend(messages)
    return found


def tool_name(tool: object) -> str:
    """A tool's name: its ``name`` (a ``BaseTool``) or its ``__name__`` (a function)."""
    return str(getattr(tool, "name", None) or getattr(tool, "__name__", None) or tool)


def call_text(name: str, args: object) -> str:
    """``name({"arg": ...})``: a tool call on one line."""
    return f"{name}({json.dumps(args, ensure_ascii=False)})"


def one_line(text: str, width: int = 200) -> str:
    """``text`` with its whitespace runs as single spaces, cut to ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
