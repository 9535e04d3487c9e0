"""LangGraph's ``langgraph.pregel._checkpoint`` helpers, where code built on it imports them."""

from plait.checkpoint.base import copy_checkpoint, create_checkpoint, empty_checkpoint

__all__ = ["copy_checkpoint", "create_checkpoint", "empty_checkpoint"]
