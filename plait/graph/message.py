"""The ``add_messages`` reducer and the ready-made ``MessagesState`` schema.

A state key annotated with :func:`add_messages` holds a chat transcript. Each
update is merged into it by message id: a message with a known id replaces the
old one where it stands, a message with a new id is appended, a
``RemoveMessage`` deletes by id, and ``RemoveMessage(id=REMOVE_ALL_MESSAGES)``
clears the transcript.

The merge follows LangGraph's ``langgraph.graph.message.add_messages``,
including its one side effect: a message without an id gets a fresh UUID
written into it, in place, so the caller's own message objects (for example
the input list given to ``invoke``) compare equal to those in the result, and
re-sending the same object later replaces it instead of appending a copy.

Merging costs time proportional to the *update*, not to the transcript: the
result is a :class:`MessageList`, a list that carries an index from message id
to position. Appending to it extends the index; only replacing or removing
messages (or changing the list in place, which the list notices) makes the
next merge rebuild it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Annotated, Any, Literal, SupportsIndex, TypeGuard, TypeVar, overload

from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    BaseMessageChunk,
    MessageLikeRepresentation,
    RemoveMessage,
    convert_to_messages,
    message_chunk_to_message,
)
from typing_extensions import TypedDict

from plait.pregel._context import current_task
from plait.pregel._messages import MessageStreamHandler

__all__ = ["REMOVE_ALL_MESSAGES", "MessageList", "MessagesState", "add_messages", "push_message"]

REMOVE_ALL_MESSAGES = "__remove_all__"
"""Id for a ``RemoveMessage`` that clears every message before it."""

Messages = list[MessageLikeRepresentation] | MessageLikeRepresentation
"""One message-like value, or a list of them."""

_FORMATS = ("langchain-openai",)

# list's own methods, which skip MessageList's index-dropping overrides; spelled through
# list[BaseMessage] (the same function objects at runtime) so that they are typed.
_list_init = list[BaseMessage].__init__
_list_append = list[BaseMessage].append
_list_setitem = list[BaseMessage].__setitem__

_L = TypeVar("_L", bound=MessageLikeRepresentation)
_R = TypeVar("_R", bound=MessageLikeRepresentation)


@overload
def add_messages(
    left: list[_L] | _L,
    right: list[_R] | _R,
    *,
    format: Literal["langchain-openai"] | None = None,
) -> list[BaseMessage]: ...


@overload
def add_messages(
    left: None = None,
    right: None = None,
    *,
    format: Literal["langchain-openai"] | None = None,
) -> Callable[[Messages, Messages], list[BaseMessage]]: ...


def add_messages(
    left: object = None,
    right: object = None,
    *,
    format: Literal["langchain-openai"] | None = None,
) -> list[BaseMessage] | Callable[[Messages, Messages], list[BaseMessage]]:
    """Merge the messages in ``right`` into the transcript ``left`` by id.

    Both sides accept anything ``convert_to_messages`` understands: message
    objects, ``{"role": ..., "content": ...}`` dicts, ``(role, content)``
    tuples and bare strings (human messages). A single value that is not a list
    is treated as a one-item list. Messages without an id get a random UUID.

    Rules, applied to ``right`` in order: a message whose id is already present
    replaces that message in place (its class may change); a new id is
    appended; ``RemoveMessage(id=x)`` deletes ``x`` and raises ``ValueError``
    when no message has that id. If ``right`` holds a
    ``RemoveMessage(id=REMOVE_ALL_MESSAGES)``, ``left`` and everything in
    ``right`` up to the last such marker are dropped, and the messages after it
    are returned as given, without merging. ``add_messages(format=...)``
    without lists returns a reducer with ``format`` bound.

    Args:
        left: The current transcript.
        right: The update to merge into it.
        format: ``None`` to return messages as they are, or
            ``"langchain-openai"`` to normalise their content to OpenAI's
            message format; as in LangGraph this rebuilds them without ids.

    Returns:
        A new list (a :class:`MessageList`); neither input list nor any input
        message is modified. When both lists are omitted, a reducer with
        ``format`` bound.

    Raises:
        ValueError: On an unknown ``format``, when only one of ``left`` and
            ``right`` is given, when a message cannot be converted, or when a
            ``RemoveMessage`` names an id that does not exist.
    """
    if format is not None and format not in _FORMATS:
        raise ValueError(f"Unrecognized format={format!r}. Expected one of 'langchain-openai', None.")
    if left is None and right is None:
        return partial(add_messages, format=format)
    if left is None or right is None:
        given = "left" if left is not None else "right"
        raise ValueError(
            f"Must specify non-null arguments for both 'left' and 'right'. Only received: '{given}'."
        )
    merged = _merge(_coerce(left), _coerce(right))
    return _to_openai_format(merged) if format is not None else merged


class MessageList(list[BaseMessage]):
    """What :func:`add_messages` returns: a plain-behaving list of messages plus an id index.

    The index (message id -> position, the ``id_index`` attribute) is handed on
    to the next merge, which extends it for appended messages. Any list method
    that changes the list in place drops the index, and an index is trusted
    only while it has exactly one entry per message; otherwise the next merge
    rebuilds it. Copies and pickles are plain lists.
    """

    __slots__ = ("id_index",)

    def __init__(self, items: Iterable[BaseMessage] = (), /) -> None:
        _list_init(self, items)
        self.id_index: dict[str | None, int] | None = None

    def changed(self) -> None:
        """Forget the index (called before any in-place change)."""
        self.id_index = None

    def intact(self) -> bool:
        """Whether the list is as the merge built it (so it holds only messages)."""
        index = self.id_index
        return index is not None and len(index) == len(self)

    def take_index(self) -> dict[str | None, int] | None:
        """Hand the index over to a merge (it is extended there), or ``None`` if it is not valid."""
        if not self.intact():
            return None
        index, self.id_index = self.id_index, None
        return index

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[object, ...]:
        return (list, (list(self),))


def _mutator(name: str) -> Callable[..., object]:
    inner = getattr(list, name)

    def method(self: MessageList, *args: object, **kwargs: object) -> object:
        self.id_index = None
        return inner(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = inner.__doc__
    return method


for _name in (
    "__setitem__",
    "__delitem__",
    "__iadd__",
    "__imul__",
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "sort",
    "reverse",
):
    setattr(MessageList, _name, _mutator(_name))


def _is_list(value: object) -> TypeGuard[list[Any]]:
    """``isinstance(value, list)``, typed: the items are anything until checked."""
    return isinstance(value, list)


def _coerce(value: object) -> list[BaseMessage]:
    """Turn one side of an update into a list of (non-chunk) messages.

    The returned list is new whenever it differs from ``value``; callers must
    not mutate it, since it may be the caller's own list.
    """
    items: list[Any] = value if _is_list(value) else [value]
    if type(items) is MessageList and items.intact():
        return items  # built by add_messages and unchanged since: already messages
    for kind in set(map(type, items)):
        if not issubclass(kind, BaseMessage) or issubclass(kind, BaseMessageChunk):
            break
    else:
        return items
    return [message_chunk_to_message(m) for m in convert_to_messages(items)]


def _with_id(message: BaseMessage) -> BaseMessage:
    """Return ``message``, after giving it a new UUID (in place, as LangGraph does) if it has none."""
    if message.id is None:
        message.id = str(uuid.uuid4())
    return message


def _last_remove_all(messages: Sequence[BaseMessage]) -> int | None:
    """Index of the last ``RemoveMessage(id=REMOVE_ALL_MESSAGES)``, if any."""
    for idx in range(len(messages) - 1, -1, -1):
        message = messages[idx]
        if isinstance(message, RemoveMessage) and message.id == REMOVE_ALL_MESSAGES:
            return idx
    return None


def _positions(left: list[BaseMessage]) -> tuple[list[BaseMessage], dict[str | None, int], bool]:
    """The transcript (ids filled in), its id -> position map, and whether the map is exact."""
    if type(left) is MessageList:
        index = left.take_index()
        if index is not None:
            return left, index, True
    position = {m.id: idx for idx, m in enumerate(left)}
    if None in position:  # rare: the transcript itself holds id-less messages
        left = [_with_id(m) for m in left]
        position = {m.id: idx for idx, m in enumerate(left)}
    return left, position, len(position) == len(left)


def _merge(left: list[BaseMessage], right: list[BaseMessage]) -> list[BaseMessage]:
    """Apply the update ``right`` to ``left``; both are already coerced."""
    cut = _last_remove_all(right)
    if cut is not None:
        return MessageList(_with_id(m) for m in right[cut + 1 :])
    left, position, exact = _positions(left)
    merged = MessageList(left)
    removed: set[str | None] = set()
    for message in right:
        message = _with_id(message)
        idx = position.get(message.id)
        if idx is not None and (idx >= len(merged) or merged[idx].id != message.id):
            idx = None  # a stale entry (the index is shared only while exact)
        if idx is None:
            if isinstance(message, RemoveMessage):
                raise ValueError(
                    f"Attempting to delete a message with an ID that doesn't exist ('{message.id}')"
                )
            position[message.id] = len(merged)
            _list_append(merged, message)
            continue
        if isinstance(message, RemoveMessage):
            removed.add(message.id)
        else:
            removed.discard(message.id)
            _list_setitem(merged, idx, message)
    if removed:
        return MessageList(m for m in merged if m.id not in removed)
    if exact and len(position) == len(merged):
        merged.id_index = position
    return merged


def _messages_delta_reducer(state: list[Any], writes: list[Any]) -> list[Any]:  # pyright: ignore[reportUnusedFunction]  # LangGraph's private name, imported by users
    """A step's message writes folded in one call, for ``DeltaChannel`` (LangGraph's experimental
    reducer): same ids replace in place, ``RemoveMessage`` drops its id (an unknown one is
    ignored), ``REMOVE_ALL_MESSAGES`` starts over; messages without an id get none.
    ``r(r(state, xs), ys) == r(state, xs + ys)``; ``state`` is not changed."""
    merged: dict[object, BaseMessage] = {object() if m.id is None else m.id: m for m in _coerce(state)}
    for write in writes:
        for message in _coerce(write):
            if isinstance(message, RemoveMessage):
                if message.id == REMOVE_ALL_MESSAGES:
                    merged.clear()
                else:
                    merged.pop(message.id, None)
                continue
            merged[object() if message.id is None else message.id] = message
    return list(merged.values())


def _to_openai_format(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Normalise message content to the OpenAI chat format."""
    from langchain_core.messages import convert_to_openai_messages

    return convert_to_messages(convert_to_openai_messages(messages))


class MessagesState(TypedDict):
    """State schema with a single ``messages`` key merged by :func:`add_messages`."""

    messages: Annotated[list[AnyMessage], add_messages]


def push_message(
    message: MessageLikeRepresentation | BaseMessageChunk, *, state_key: str | None = "messages"
) -> AnyMessage:
    """Stream ``message`` on ``stream_mode="messages"`` right away, from inside a running node, and
    write it to the state key ``state_key`` (``None``: stream it only).

    Raises:
        ValueError: the message has no id.
        RuntimeError: called outside a running graph node.
    """
    ctx = current_task()
    msg: AnyMessage = convert_to_messages([message])[0]  # type: ignore[assignment]  # AnyMessage is their union
    if msg.id is None:
        raise ValueError("Message ID is required")
    lc = ctx.lc_config
    if lc is not None:
        for handler in lc.get("callbacks") or ():
            if isinstance(handler, MessageStreamHandler):
                handler.push(msg, lc.get("metadata") or {})
    if state_key:
        ctx.pushed.append((state_key, msg))
    return msg
