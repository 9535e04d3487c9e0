"""Short-term memory for chat histories: trim, summarize, keep tool calls whole.

Every helper takes the current message list and returns either ``RemoveMessage``
updates for an ``add_messages`` key (``keep_last``, ``keep_within_tokens``,
``summarize``) or a model-only view (``view_last``, ``view_within_tokens``,
``with_summary``). Use them inside nodes, as nodes (``trim_node``,
``summarize_node``) or on a thread with ``graph.update_state(config,
{"messages": removals})``. See ``docs/memory.md`` for which tool fits which
situation.
"""

from __future__ import annotations

from plait.memory._groups import check_tool_groups
from plait.memory.summarize import (
    DEFAULT_EXTEND_PROMPT,
    DEFAULT_PROMPT,
    SUMMARY_ID,
    SUMMARY_PREFIX,
    SummarizationError,
    SummaryResult,
    current_summary,
    summarize,
    summarize_node,
    with_summary,
)
from plait.memory.trim import (
    MemoryBudgetWarning,
    MissingMessageIdError,
    TokenCounterError,
    keep_last,
    keep_within_tokens,
    per_message,
    resolve_token_counter,
    trim_node,
    view_last,
    view_within_tokens,
)

__all__ = [
    "DEFAULT_EXTEND_PROMPT",
    "DEFAULT_PROMPT",
    "SUMMARY_ID",
    "SUMMARY_PREFIX",
    "MemoryBudgetWarning",
    "MissingMessageIdError",
    "SummarizationError",
    "SummaryResult",
    "TokenCounterError",
    "check_tool_groups",
    "current_summary",
    "keep_last",
    "keep_within_tokens",
    "per_message",
    "resolve_token_counter",
    "summarize",
    "summarize_node",
    "trim_node",
    "view_last",
    "view_within_tokens",
    "with_summary",
]
