"""Prebuilt agent parts: ``ToolNode``, ``tools_condition``, ``ValidationNode``, ``create_react_agent``,
``ToolCallTransformer`` (``run.tool_calls`` of ``stream_events(version="v3")``)."""

from __future__ import annotations

from plait.prebuilt._tool_call_transformer import ToolCallTransformer
from plait.prebuilt.chat_agent_executor import create_react_agent
from plait.prebuilt.tool_node import InjectedState, InjectedStore, ToolNode, ToolRuntime, tools_condition
from plait.prebuilt.tool_validator import ValidationNode

__all__ = [
    "InjectedState",
    "InjectedStore",
    "ToolCallTransformer",
    "ToolNode",
    "ToolRuntime",
    "ValidationNode",
    "create_react_agent",
    "tools_condition",
]
