"""Fold older messages into a running summary written by a chat model.

When the history is over budget, the messages older than the newest
``keep_last`` are sent to ``model.invoke`` followed by an instruction (a first
summary, or an extension of the existing one), then removed. The summary goes
where a model expects it:

* ``placement="system"``: one ``SystemMessage`` with a stable id
  (``"plait-summary"``) right after the leading system messages and before the
  kept window. Later runs replace that message in place; summaries never stack.
  ``add_messages`` can only append or replace, so when the summary message must
  be *inserted* (the first time, or when it is out of place) the update is
  ``RemoveMessage(REMOVE_ALL_MESSAGES)`` followed by the whole rebuilt history.
* ``placement="field"``: the text goes to a separate state key and only
  ``RemoveMessage`` updates touch the messages; use :func:`with_summary` to
  show it to a model.

Leading system messages are never summarized, and the kept window never splits
a tool-call group (a group straddling the boundary is summarized whole).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

from langchain_core.messages import BaseMessage, HumanMessage, RemoveMessage, SystemMessage

from plait._internal._narrow import is_str_mapping
from plait.graph.message import REMOVE_ALL_MESSAGES, add_messages
from plait.memory.trim import (
    TokenCounter,
    removals_between,
    resolve_token_counter,
    state_messages,
    window_by_count,
)

__all__ = [
    "DEFAULT_EXTEND_PROMPT",
    "DEFAULT_PROMPT",
    "SUMMARY_ID",
    "SUMMARY_PREFIX",
    "SummarizationError",
    "SummaryResult",
    "SupportsInvoke",
    "current_summary",
    "summarize",
    "summarize_node",
    "with_summary",
]

DEFAULT_PROMPT = "Create a summary of the conversation above:"
"""Instruction for the first summary."""

DEFAULT_EXTEND_PROMPT = (
    "This is summary of the conversation to date: {summary}\n\n"
    "Extend the summary by taking into account the new messages above:"
)
"""Instruction for extending an existing summary; ``{summary}`` is replaced by it."""

SUMMARY_ID = "plait-summary"
"""Id of the summary ``SystemMessage`` with ``placement="system"``."""

SUMMARY_PREFIX = "Summary of the conversation so far: "
"""Text put before the summary in the summary ``SystemMessage``."""

Placement = Literal["system", "field"]


class SummarizationError(RuntimeError):
    """The model did not produce a usable summary; nothing was removed."""


class SupportsInvoke(Protocol):
    """A chat model: ``invoke(messages)`` returns an ``AIMessage`` (or text)."""

    def invoke(self, input: Any) -> object:  # noqa: A002 - mirrors Runnable.invoke
        """Answer ``input``, a list of messages."""


@dataclass(frozen=True)
class SummaryResult:
    """What one summarization did.

    Attributes:
        summary: The new summary text (without prefix).
        summarized: The messages folded into it and removed.
        messages_update: The update for the ``add_messages`` key.
        placement: Where the summary lives.
    """

    summary: str
    summarized: list[BaseMessage]
    messages_update: list[BaseMessage]
    placement: Placement

    def state_update(self, key: str = "messages", summary_key: str = "summary") -> dict[str, object]:
        """The state update to return from a node or pass to ``update_state``."""
        update: dict[str, object] = {key: list(self.messages_update)}
        if self.placement == "field":
            update[summary_key] = self.summary
        return update


@dataclass(frozen=True)
class _Options:
    """Validated settings shared by :func:`summarize` and :func:`summarize_node`."""

    max_messages: int | None
    max_tokens: int | None
    keep_last: int
    placement: Placement
    prompt: str
    extend_prompt: str
    count: Callable[[Sequence[BaseMessage]], float]
    summary_id: str
    summary_prefix: str


def _options(model: object, **settings: Any) -> _Options:
    """Validate the settings and build :class:`_Options`."""
    if not callable(getattr(model, "invoke", None)):
        raise TypeError(f"model must have an .invoke(messages) method, got {type(model).__name__}")
    if settings["placement"] not in ("system", "field"):
        raise ValueError(f"placement must be 'system' or 'field', got {settings['placement']!r}")
    for name in ("max_messages", "max_tokens", "keep_last"):
        value = settings[name]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    if settings["keep_last"] is None:
        raise ValueError("keep_last must be an int >= 0, got None")
    settings["count"] = resolve_token_counter(settings.pop("token_counter"))
    return _Options(**settings)


def current_summary(
    messages: Sequence[BaseMessage], *, summary_id: str = SUMMARY_ID, summary_prefix: str = SUMMARY_PREFIX
) -> str | None:
    """The text of the summary ``SystemMessage`` in ``messages``, if there is one."""
    for message in messages:
        if message.id == summary_id:
            text = _text_of(message)
            return text[len(summary_prefix) :] if text.startswith(summary_prefix) else text
    return None


def with_summary(
    messages: Sequence[BaseMessage], summary: str | None, *, summary_prefix: str = SUMMARY_PREFIX
) -> list[BaseMessage]:
    """A model view of ``messages`` with ``summary`` after the leading system messages.

    Use it with ``placement="field"``; the state is not touched.
    """
    messages = list(messages)
    if not summary:
        return messages
    head_end = 0
    while head_end < len(messages) and isinstance(messages[head_end], SystemMessage):
        head_end += 1
    note = SystemMessage(content=f"{summary_prefix}{summary}", id=SUMMARY_ID)
    return [*messages[:head_end], note, *messages[head_end:]]


def _text_of(response: object) -> str:
    """The text of a model response: a message (string or block content) or a string."""
    if isinstance(response, str):
        return response
    content = getattr(response, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # block content: strings and {"type": ..., "text": ...} dicts (isinstance() leaves them Unknown)
        blocks = cast("list[object]", content)
        parts = [
            p if isinstance(p, str) else cast("dict[str, object]", p).get("text", "")
            for p in blocks
            if isinstance(p, (str, dict))
        ]
        return "".join(part for part in parts if isinstance(part, str))
    raise SummarizationError(f"cannot read a summary from a {type(response).__name__} response")


def _over_budget(messages: Sequence[BaseMessage], opts: _Options) -> bool:
    """Whether the history exceeds a configured budget (always, when none is set)."""
    if opts.max_messages is None and opts.max_tokens is None:
        return True
    if opts.max_messages is not None and len(messages) > opts.max_messages:
        return True
    return opts.max_tokens is not None and opts.count(messages) > opts.max_tokens


def _ask(model: SupportsInvoke, older: list[BaseMessage], existing: str | None, opts: _Options) -> str:
    """Have the model write the new summary of ``older``."""
    if existing:
        instruction = opts.extend_prompt.replace("{summary}", existing)
    else:
        instruction = opts.prompt
    text = _text_of(model.invoke([*older, HumanMessage(content=instruction)])).strip()
    if not text:
        raise SummarizationError("the model returned an empty summary; nothing was removed")
    return text


def _system_update(
    messages: list[BaseMessage],
    head: list[BaseMessage],
    window: list[BaseMessage],
    older: list[BaseMessage],
    note: SystemMessage,
) -> list[BaseMessage]:
    """Messages update placing ``note`` between ``head`` and ``window``.

    Prefers plain removals plus an in-place replacement; falls back to
    ``REMOVE_ALL_MESSAGES`` and a rebuilt history when ``note`` must be inserted.
    """
    cheap: list[BaseMessage] = [*removals_between(older, 0, len(older)), note]
    wanted = [m.id for m in (*head, note, *window)]
    if [m.id for m in add_messages(messages, cheap)] == wanted:
        return cheap
    return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *head, note, *window]


def _run(
    messages: Sequence[BaseMessage], model: SupportsInvoke, opts: _Options, existing: str | None
) -> SummaryResult | None:
    """Summarize ``messages`` with validated options."""
    messages = list(messages)
    system = opts.placement == "system"
    others = [m for m in messages if not (system and m.id == opts.summary_id)]
    head_end, start = window_by_count(others, opts.keep_last, keep_system=True, keep_first=False)
    head, older, window = others[:head_end], others[head_end:start], others[start:]
    if not older or not _over_budget(messages, opts):
        return None
    if system:
        existing = current_summary(messages, summary_id=opts.summary_id, summary_prefix=opts.summary_prefix)
    removals = removals_between(older, 0, len(older))  # fail on missing ids before calling the model
    text = _ask(model, older, existing, opts)
    if not system:
        return SummaryResult(text, older, list(removals), "field")
    note = SystemMessage(content=f"{opts.summary_prefix}{text}", id=opts.summary_id)
    return SummaryResult(text, older, _system_update(messages, head, window, older, note), "system")


def summarize(  # noqa: PLR0913 - the documented keyword API
    messages: Sequence[BaseMessage],
    model: SupportsInvoke,
    *,
    max_messages: int | None = None,
    max_tokens: int | None = None,
    keep_last: int = 4,
    placement: Placement = "system",
    existing_summary: str | None = None,
    token_counter: TokenCounter = None,
    prompt: str = DEFAULT_PROMPT,
    extend_prompt: str = DEFAULT_EXTEND_PROMPT,
    summary_id: str = SUMMARY_ID,
    summary_prefix: str = SUMMARY_PREFIX,
) -> SummaryResult | None:
    """Summarize the older part of ``messages`` if the history is over budget.

    Args:
        messages: The current history, oldest first.
        model: A chat model; ``model.invoke(older + [HumanMessage(instruction)])``
            must return an ``AIMessage`` (or a string).
        max_messages: Summarize when there are more messages than this.
        max_tokens: Summarize when ``token_counter(messages)`` exceeds this.
            With neither budget set, always summarize.
        keep_last: How many of the newest messages stay verbatim (a tool-call
            group straddling the boundary is summarized whole).
        placement: ``"system"`` (a summary ``SystemMessage``) or ``"field"``.
        existing_summary: The summary so far (``"field"`` only; ``"system"``
            reads it from the summary message).
        token_counter: See :func:`plait.memory.resolve_token_counter`.
        prompt: Instruction for a first summary.
        extend_prompt: Instruction to extend; ``{summary}`` is substituted.
        summary_id: Id of the summary message (``"system"``).
        summary_prefix: Text before the summary in that message.

    Returns:
        A :class:`SummaryResult`; ``None`` if under budget or nothing is older.

    Raises:
        ValueError: On a bad budget, ``keep_last`` or ``placement``;
            ``TypeError`` if ``model`` has no ``invoke``.
        SummarizationError: If the model's answer holds no summary text.
        MissingMessageIdError: If a message to remove has no id.
    """
    opts = _options(
        model,
        max_messages=max_messages,
        max_tokens=max_tokens,
        keep_last=keep_last,
        placement=placement,
        token_counter=token_counter,
        prompt=prompt,
        extend_prompt=extend_prompt,
        summary_id=summary_id,
        summary_prefix=summary_prefix,
    )
    return _run(messages, model, opts, existing_summary)


def summarize_node(  # noqa: PLR0913 - the documented keyword API
    model: SupportsInvoke,
    *,
    max_messages: int | None = None,
    max_tokens: int | None = None,
    keep_last: int = 4,
    placement: Placement = "system",
    key: str = "messages",
    summary_key: str = "summary",
    token_counter: TokenCounter = None,
    prompt: str = DEFAULT_PROMPT,
    extend_prompt: str = DEFAULT_EXTEND_PROMPT,
    summary_id: str = SUMMARY_ID,
    summary_prefix: str = SUMMARY_PREFIX,
) -> Callable[[object], dict[str, object]]:
    """Build a graph node that runs :func:`summarize` on ``state[key]``.

    Arguments are those of :func:`summarize`, plus ``key`` (the
    ``add_messages`` key) and ``summary_key`` (the state key holding the text
    with ``placement="field"``; it needs no reducer). Settings are validated
    when the node is built.

    Returns:
        A node returning ``{key: update}`` (plus ``{summary_key: text}`` with
        ``"field"``), or ``{}`` when there is nothing to do.
    """
    opts = _options(
        model,
        max_messages=max_messages,
        max_tokens=max_tokens,
        keep_last=keep_last,
        placement=placement,
        token_counter=token_counter,
        prompt=prompt,
        extend_prompt=extend_prompt,
        summary_id=summary_id,
        summary_prefix=summary_prefix,
    )

    def summarize_messages(state: object) -> dict[str, object]:
        existing: Any = None
        if opts.placement == "field":
            existing = state.get(summary_key) if is_str_mapping(state) else getattr(state, summary_key, None)
        result = _run(state_messages(state, key), model, opts, existing or None)
        return result.state_update(key, summary_key) if result else {}

    return summarize_messages
