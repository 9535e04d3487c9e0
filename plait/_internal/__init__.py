"""Helpers plait shares between its parts; not a public API (LangGraph's ``langgraph._internal`` path)."""
