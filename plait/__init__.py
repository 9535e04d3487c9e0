"""plait: stateful LLM applications as state graphs.

Import what you need from its own module, as with LangGraph: ``plait.graph``,
``plait.types``, ``plait.errors``, ``plait.checkpoint.memory`` and so on.
"""

__version__ = "0.1.0"
