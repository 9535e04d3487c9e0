"""``langgraph.utils.runnable``: where older code imports ``RunnableCallable`` from."""

from plait._internal._runnable import RunnableCallable, RunnableLike

__all__ = ["RunnableCallable", "RunnableLike"]
