"""Trim a chat history by message count or by token budget.

Every helper here works on a plain list of messages and never changes it. The
``keep_*`` functions return ``RemoveMessage`` updates for an ``add_messages``
key (return them from a node, or pass them to ``graph.update_state``); the
``view_*`` functions return the messages a model should see, leaving the state
alone; :func:`trim_node` wraps ``keep_last`` / ``keep_within_tokens`` as a node.

Shape of the kept history: a *head* (the leading ``SystemMessage`` block when
``keep_system``, plus the first conversational unit when ``keep_first``)
followed by the newest messages that fit the budget, as one contiguous
*window*. Everything between head and window is removed. The window never
splits a tool-call group: when the budget boundary falls inside a group, the
whole group is dropped, so the budget is never exceeded by the window. If even
the newest unit does not fit, the window is empty and a
:class:`MemoryBudgetWarning` is emitted.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from numbers import Real
from typing import Any, Protocol, Union, cast

from langchain_core.messages import BaseMessage, RemoveMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately

from plait._internal._narrow import is_str_mapping
from plait.memory._groups import Span, units

__all__ = [
    "MemoryBudgetWarning",
    "MissingMessageIdError",
    "SupportsTokenCount",
    "TokenCounter",
    "TokenCounterError",
    "keep_last",
    "keep_within_tokens",
    "per_message",
    "resolve_token_counter",
    "trim_node",
    "view_last",
    "view_within_tokens",
]


class MissingMessageIdError(ValueError):
    """A message that must be removed has no id, so no ``RemoveMessage`` can name it."""


class TokenCounterError(TypeError):
    """A token counter is not usable: wrong kind of object, or a bad result."""


class MemoryBudgetWarning(UserWarning):
    """The budget is too small for the messages that had to be kept."""


class SupportsTokenCount(Protocol):
    """Anything that counts tokens like a langchain chat model."""

    def get_num_tokens_from_messages(self, messages: list[BaseMessage]) -> int:
        """Return the number of tokens ``messages`` take up."""
        ...


ListCounter = Callable[[Sequence[BaseMessage]], float]
"""A function from a whole list of messages to a token count."""

TokenCounter = Union[ListCounter, SupportsTokenCount, None]  # noqa: UP007 - runtime alias on 3.10
"""What ``token_counter=`` accepts: ``None`` (approximate), a list counter or a chat model."""


def per_message(count: Callable[[BaseMessage], float]) -> ListCounter:
    """Turn a per-message token function into a list counter.

    Token counters receive the whole list of messages (as in langchain's
    ``trim_messages``). Wrap a function that measures one message at a time,
    such as ``lambda m: len(str(m.content)) // 2``, with this helper.

    Args:
        count: Returns the tokens of a single message.

    Returns:
        A counter that sums ``count`` over the list.
    """

    def count_list(messages: Sequence[BaseMessage]) -> float:
        return sum(count(message) for message in messages)

    count_list.__qualname__ = f"per_message({getattr(count, '__qualname__', repr(count))})"
    return count_list


def resolve_token_counter(token_counter: TokenCounter = None) -> ListCounter:
    """Normalise the accepted kinds of token counter into one list counter.

    Args:
        token_counter: ``None`` for langchain-core's
            ``count_tokens_approximately``; an object with
            ``get_num_tokens_from_messages`` (a chat model); or a callable
            taking the whole list of messages. A per-message callable must be
            wrapped with :func:`per_message`.

    Returns:
        A list counter that checks its results.

    Raises:
        TokenCounterError: If ``token_counter`` is none of the above.
    """
    if token_counter is None:
        return _checked(count_tokens_approximately)
    method = getattr(token_counter, "get_num_tokens_from_messages", None)
    if callable(method):
        return _checked(method)
    if callable(token_counter):
        return _checked(token_counter)
    raise TokenCounterError(
        f"token_counter must be None, a callable taking a list of messages, or an object with "
        f"get_num_tokens_from_messages; got {type(token_counter).__name__}"
    )


def _checked(count: Callable[..., object]) -> ListCounter:
    """Wrap ``count`` so misuse surfaces as a clear :class:`TokenCounterError`."""

    def count_list(messages: Sequence[BaseMessage]) -> float:
        try:
            result = count(list(messages))
        except (AttributeError, TypeError) as exc:
            raise TokenCounterError(
                f"token counter {count!r} failed on a list of messages ({exc}); a token counter "
                "receives the whole list, wrap per-message functions with plait.memory.per_message()"
            ) from exc
        if isinstance(result, bool) or not isinstance(result, Real) or result < 0:
            raise TokenCounterError(f"token counter {count!r} returned {result!r}, not a count >= 0")
        return result if isinstance(result, (int, float)) else float(result)

    return count_list


def _check_messages(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Return ``messages`` as a list, rejecting anything that is not a message."""
    # runtime guard: callers pass whatever they hold (a state dict, a single message)
    if isinstance(messages, (BaseMessage, dict, str)) or not isinstance(messages, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
        hint = " (pass state['messages'], not the state)" if isinstance(messages, dict) else ""
        raise TypeError(f"expected a list of messages, got {type(messages).__name__}{hint}")
    for idx, message in enumerate(messages):
        if not isinstance(message, BaseMessage):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: untyped callers
            raise TypeError(f"messages[{idx}] is {type(message).__name__}, expected a BaseMessage")
    return list(messages)


def _check_budget(value: int, name: str) -> None:
    """Reject a negative or non-integer budget."""
    # runtime guard: a budget may come from untyped configuration (a float, a string)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")


def _head_end(
    messages: Sequence[BaseMessage], spans: list[Span], *, keep_system: bool, keep_first: bool
) -> int:
    """Index where the pinned head (leading system block, first unit) ends."""
    end = 0
    if keep_system:
        while end < len(messages) and isinstance(messages[end], SystemMessage):
            end += 1
    if keep_first:
        end = next((stop for start, stop in spans if start == end), end)
    return end


def _plan(messages: Sequence[BaseMessage], *, keep_system: bool, keep_first: bool) -> tuple[int, list[Span]]:
    """The head's end and the units after it."""
    spans = units(messages)
    head_end = _head_end(messages, spans, keep_system=keep_system, keep_first=keep_first)
    return head_end, [span for span in spans if span[0] >= head_end]


def _warn_dropped(spans: list[Span], what: str) -> None:
    """Warn that the newest unit was dropped because it alone exceeds the budget."""
    start, stop = spans[-1]
    warnings.warn(
        f"the newest {stop - start} message(s) (a tool-call group cannot be split) do not fit in {what}; "
        "they were dropped and the kept window is empty",
        MemoryBudgetWarning,
        stacklevel=4,
    )


def window_by_count(messages: Sequence[BaseMessage], n: int, *, keep_system: bool, keep_first: bool) -> Span:
    """Return ``(head_end, window_start)`` for keeping the newest ``n`` messages."""
    head_end, spans = _plan(messages, keep_system=keep_system, keep_first=keep_first)
    start, used = len(messages), 0
    for span_start, span_stop in reversed(spans):
        if used + span_stop - span_start > n:
            break
        used += span_stop - span_start
        start = span_start
    if n > 0 and spans and start == len(messages):
        _warn_dropped(spans, f"n={n}")
    return head_end, start


def window_by_tokens(
    messages: Sequence[BaseMessage],
    max_tokens: int,
    count: ListCounter,
    *,
    keep_system: bool,
    keep_first: bool,
) -> Span:
    """Return ``(head_end, window_start)`` for the newest messages within ``max_tokens``.

    Assumes that adding messages never lowers the count, and binary-searches
    the oldest unit boundary whose suffix, together with the head, fits.
    """
    head_end, spans = _plan(messages, keep_system=keep_system, keep_first=keep_first)
    if count(messages) <= max_tokens:
        return head_end, head_end
    head = list(messages[:head_end])
    starts = [span[0] for span in spans] + [len(messages)]
    low, high = 0, len(starts) - 1
    while low < high:
        mid = (low + high) // 2
        if count(head + list(messages[starts[mid] :])) <= max_tokens:
            high = mid
        else:
            low = mid + 1
    if head and count(head) > max_tokens:
        warnings.warn(
            f"the pinned head ({head_end} message(s)) alone exceeds max_tokens={max_tokens}",
            MemoryBudgetWarning,
            stacklevel=3,
        )
    elif spans and starts[low] == len(messages):
        _warn_dropped(spans, f"max_tokens={max_tokens}")
    return head_end, starts[low]


def removals_between(messages: Sequence[BaseMessage], start: int, stop: int) -> list[RemoveMessage]:
    """``RemoveMessage`` for every message in ``messages[start:stop]``."""
    removals: list[RemoveMessage] = []
    seen: set[str] = set()
    for idx in range(start, stop):
        message_id = messages[idx].id
        if not message_id:
            raise MissingMessageIdError(
                f"messages[{idx}] ({type(messages[idx]).__name__}) has no id and cannot be removed; "
                "messages stored by add_messages always have ids, give hand-built lists explicit ids"
            )
        if message_id not in seen:
            seen.add(message_id)
            removals.append(RemoveMessage(id=message_id))
    return removals


def keep_last(
    messages: Sequence[BaseMessage], n: int, *, keep_first: bool = False, keep_system: bool = True
) -> list[RemoveMessage]:
    """Removals that keep only the newest ``n`` messages (plus the pinned head).

    Args:
        messages: The current history, oldest first.
        n: How many of the newest messages to keep; pinned head messages do
            not count towards ``n``. A tool-call group that would be split by
            the boundary is dropped whole, so fewer than ``n`` may remain.
        keep_first: Also keep the first message after the leading system
            block (with its whole tool-call group, if it has one).
        keep_system: Keep the leading block of ``SystemMessage`` s. System
            messages later in the history are treated like any other message.

    Returns:
        ``RemoveMessage`` updates, oldest first; empty when nothing must go.

    Raises:
        ValueError: If ``n`` is not an int >= 0.
        MissingMessageIdError: If a message to remove has no id.
    """
    _check_budget(n, "n")
    messages = _check_messages(messages)
    head_end, start = window_by_count(messages, n, keep_system=keep_system, keep_first=keep_first)
    return removals_between(messages, head_end, start)


def view_last(
    messages: Sequence[BaseMessage], n: int, *, keep_first: bool = False, keep_system: bool = True
) -> list[BaseMessage]:
    """The messages :func:`keep_last` would keep, for passing to a model only.

    Arguments are those of :func:`keep_last`; the state is not touched.
    """
    _check_budget(n, "n")
    messages = _check_messages(messages)
    head_end, start = window_by_count(messages, n, keep_system=keep_system, keep_first=keep_first)
    return messages[:head_end] + messages[start:]


def keep_within_tokens(
    messages: Sequence[BaseMessage],
    max_tokens: int,
    *,
    token_counter: TokenCounter = None,
    keep_system: bool = True,
    keep_first: bool = False,
) -> list[RemoveMessage]:
    """Removals that bring the history within ``max_tokens``.

    When the whole history fits, nothing is removed. Otherwise the head is
    kept and, after it, the longest run of newest messages such that
    ``token_counter(head + window) <= max_tokens``.

    Args:
        messages: The current history, oldest first.
        max_tokens: The budget for the kept history, head included.
        token_counter: See :func:`resolve_token_counter`; defaults to
            ``count_tokens_approximately``.
        keep_system: Keep the leading block of ``SystemMessage`` s.
        keep_first: Also keep the first message after the leading system block.

    Returns:
        ``RemoveMessage`` updates, oldest first; empty when nothing must go.

    Raises:
        ValueError: If ``max_tokens`` is not an int >= 0.
        TokenCounterError: If the token counter is unusable.
        MissingMessageIdError: If a message to remove has no id.
    """
    _check_budget(max_tokens, "max_tokens")
    messages = _check_messages(messages)
    count = resolve_token_counter(token_counter)
    head_end, start = window_by_tokens(
        messages, max_tokens, count, keep_system=keep_system, keep_first=keep_first
    )
    return removals_between(messages, head_end, start)


def view_within_tokens(
    messages: Sequence[BaseMessage],
    max_tokens: int,
    *,
    token_counter: TokenCounter = None,
    keep_system: bool = True,
    keep_first: bool = False,
) -> list[BaseMessage]:
    """The messages :func:`keep_within_tokens` would keep, for passing to a model only.

    Arguments are those of :func:`keep_within_tokens`; the state is not touched.
    """
    _check_budget(max_tokens, "max_tokens")
    messages = _check_messages(messages)
    count = resolve_token_counter(token_counter)
    head_end, start = window_by_tokens(
        messages, max_tokens, count, keep_system=keep_system, keep_first=keep_first
    )
    return messages[:head_end] + messages[start:]


def state_messages(state: object, key: str) -> list[BaseMessage]:
    """Read the message list stored under ``key`` in a dict or object state."""
    value = state.get(key) if is_str_mapping(state) else getattr(state, key, None)
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"state[{key!r}] is {type(value).__name__}, expected a list of messages")
    return list(cast("Sequence[Any]", value))  # isinstance() leaves the items Unknown


def trim_node(
    n: int | None = None,
    *,
    max_tokens: int | None = None,
    key: str = "messages",
    keep_first: bool = False,
    keep_system: bool = True,
    token_counter: TokenCounter = None,
) -> Callable[[object], dict[str, list[RemoveMessage]]]:
    """Build a graph node that trims ``state[key]`` by count or by tokens.

    Args:
        n: Keep the newest ``n`` messages (see :func:`keep_last`).
        max_tokens: Keep within this many tokens (see :func:`keep_within_tokens`).
        key: The ``add_messages`` state key to trim.
        keep_first: Always keep the first message after the leading system block.
        keep_system: Always keep the leading ``SystemMessage`` block.
        token_counter: Token counter for ``max_tokens``.

    Returns:
        A node ``state -> {key: removals}`` that returns ``{}`` when nothing
        has to be removed.

    Raises:
        ValueError: Unless exactly one of ``n`` and ``max_tokens`` is given,
            or if it is negative.
    """
    if n is not None and max_tokens is None:
        budget, by_count = n, True
        _check_budget(n, "n")
    elif max_tokens is not None and n is None:
        budget, by_count = max_tokens, False
        _check_budget(max_tokens, "max_tokens")
        resolve_token_counter(token_counter)  # fail at build time, not mid-run
    else:
        raise ValueError("trim_node needs exactly one of n= or max_tokens=")

    def trim(state: object) -> dict[str, list[RemoveMessage]]:
        messages = state_messages(state, key)
        if by_count:
            removals = keep_last(messages, budget, keep_first=keep_first, keep_system=keep_system)
        else:
            removals = keep_within_tokens(
                messages,
                budget,
                token_counter=token_counter,
                keep_system=keep_system,
                keep_first=keep_first,
            )
        return {key: removals} if removals else {}

    trim.__name__ = trim.__qualname__ = "trim"
    return trim
