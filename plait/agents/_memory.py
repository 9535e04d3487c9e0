"""Bounded context for agents: ``plait.memory``'s trimming and summarizing in front of the model."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from plait.memory import summarize_node, trim_node, view_last, view_within_tokens
from plait.memory.summarize import SupportsInvoke
from plait.memory.trim import TokenCounter
from plait.prebuilt._agent_model import state_value

__all__ = ["memory_hook"]


def memory_hook(
    *,
    keep_last: int | None = None,
    max_tokens: int | None = None,
    summarize: SupportsInvoke | None = None,
    token_counter: TokenCounter = None,
    keep_history: bool = True,
) -> Callable[[object], Mapping[str, object]]:
    """A ``pre_model_hook`` that bounds what the model sees, never splitting a tool call from its result.

    * ``summarize=<chat model>``: when the thread has more than ``keep_last`` messages (or
      more than ``max_tokens`` tokens), the older ones are replaced by one summary message
      (:func:`plait.memory.summarize_node`; the newest 4 stay verbatim).
    * otherwise, with ``keep_history=True`` (default), the thread keeps every message and the
      model sees only the newest ``keep_last`` / those within ``max_tokens`` (a view, written
      to ``llm_input_messages``); with ``keep_history=False`` the older messages are removed
      from the thread (:func:`plait.memory.trim_node`).

    Pass it as ``create_agent(..., pre_model_hook=memory_hook(keep_last=20))`` or to
    ``create_react_agent``.

    Args:
        keep_last: A budget in messages.
        max_tokens: A budget in tokens.
        summarize: A chat model that writes the summaries.
        token_counter: Counts tokens for ``max_tokens`` (default: an approximation).
        keep_history: Keep the whole thread and give the model a view (trimming only).

    Raises:
        ValueError: no budget, or both budgets for trimming.
    """
    if keep_last is None and max_tokens is None:
        raise ValueError("memory_hook needs a budget: keep_last=N or max_tokens=N")
    if summarize is not None:
        return summarize_node(
            summarize, max_messages=keep_last, max_tokens=max_tokens, token_counter=token_counter
        )
    if keep_last is not None and max_tokens is not None:
        raise ValueError("memory_hook trims by keep_last or by max_tokens, not both")
    if not keep_history:
        return trim_node(keep_last, max_tokens=max_tokens, token_counter=token_counter)

    def view(state: object) -> dict[str, object]:
        messages = state_value(state, "messages")
        if keep_last is not None:
            return {"llm_input_messages": view_last(messages, keep_last)}
        return {
            "llm_input_messages": view_within_tokens(messages, max_tokens or 0, token_counter=token_counter)
        }

    return view
