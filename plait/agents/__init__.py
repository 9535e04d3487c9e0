"""Agents as LangChain's ``langchain.agents`` builds them: ``create_agent`` (the name seed 004 uses)."""

from __future__ import annotations

from plait.agents._memory import memory_hook
from plait.agents.factory import AgentState, create_agent

__all__ = ["AgentState", "create_agent", "memory_hook"]
