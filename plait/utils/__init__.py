"""LangGraph's ``langgraph.utils`` paths, kept for code that still imports them."""
