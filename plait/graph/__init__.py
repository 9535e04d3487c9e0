"""Build state graphs: ``StateGraph``, ``START``/``END``, ``MessagesState`` and ``add_messages``."""

from plait.constants import END, START
from plait.graph.message import MessagesState, add_messages
from plait.graph.state import CompiledStateGraph, StateGraph

__all__ = ["END", "START", "CompiledStateGraph", "MessagesState", "StateGraph", "add_messages"]
