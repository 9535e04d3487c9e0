"""Strict mode: turn the silent failures of seed 000 §9 into errors and warnings.

Enabled with ``compile(strict=True)`` or ``PLAIT_STRICT=1``. Each check costs
time (deep copies of the values involved), which is why it is opt-in; with it
off, none of this code runs.
"""

from __future__ import annotations

import collections.abc
import copy
import difflib
import inspect
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import UnionType
from typing import Annotated, Any, Literal, Union, cast, get_args, get_origin, overload

from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage, ToolMessage

from plait._internal._narrow import is_list, is_sequence, is_str_dict
from plait._schema import MISSING, FieldSpec
from plait.channels import BaseChannel
from plait.errors import StrictModeError
from plait.graph.message import REMOVE_ALL_MESSAGES, add_messages
from plait.pregel._context import TaskContext

__all__ = ["StrictChannel", "StrictModeWarning", "strict_call"]


class StrictModeWarning(UserWarning):
    """A pattern that is usually a bug, reported by strict mode without stopping the run."""


def _message_types(tp: object) -> bool:
    origin = get_origin(tp)
    if origin is Annotated:
        return _message_types(get_args(tp)[0])
    if origin in (Union, UnionType):
        return all(_message_types(arg) for arg in get_args(tp))
    return isinstance(tp, type) and issubclass(tp, BaseMessage)


def _is_message_list(annotation: object) -> bool:
    if get_origin(annotation) not in (list, Sequence, collections.abc.Sequence):
        return False
    args = get_args(annotation)
    return bool(args) and _message_types(args[0])


def _safe_copy(value: object) -> object:
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - uncopyable values simply skip the mutation check
        return MISSING


def _as_list(value: object) -> list[object]:
    return list(value) if is_sequence(value) else [value]


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class StrictChannel(BaseChannel):
    """Wraps a channel with strict-mode checks for its key."""

    __slots__ = ("inner", "is_add_messages", "message_list", "plain_list", "reducer_name")

    def __init__(self, inner: BaseChannel, spec: FieldSpec) -> None:
        super().__init__(inner.key)
        self.inner = inner
        self.is_add_messages = spec.reducer is add_messages
        self.message_list = (
            spec.reducer is not None and not self.is_add_messages and _is_message_list(spec.annotation)
        )
        # another reducer on a list whose type does not say "messages" (e.g. Annotated[list, operator.add])
        self.plain_list = spec.reducer is not None and not self.is_add_messages and not self.message_list
        self.reducer_name = getattr(spec.reducer, "__name__", repr(spec.reducer))

    def initial(self) -> object:
        """Delegates to the wrapped channel."""
        return self.inner.initial()

    def merge(self, current: object, values: Sequence[object], nodes: Sequence[str]) -> object:
        """Check the writes, merge them with the wrapped channel, check the result.

        Raises:
            StrictModeError: non-message written to a message list, a raw str beside messages in
                any list, REMOVE_ALL after new messages, a reducer mutating its first argument, or a
                broken tool-call group.
        """
        for value, node in zip(values, nodes, strict=True):
            if self.message_list:
                self._check_messages(value, node)
            if self.is_add_messages:
                self._check_update(current, value, node)
        before = _safe_copy(current) if current is not MISSING else MISSING
        merged = self.inner.merge(current, values, nodes)
        if before is not MISSING and _changed(before, current):
            raise StrictModeError(
                f"Reducer {self.reducer_name!r} of key {self.key!r} modified its first argument in place "
                f"(merging {_writer(nodes[0])}). That rewrites earlier checkpoints and parallel snapshots. "
                "Return a new value instead, e.g. `return existing + new` rather than `existing.extend(new)`.",
                key=self.key,
                node=nodes[0],
                value=values[0],
                nodes=tuple(nodes),
            )
        if self.is_add_messages and is_list(merged):
            self._check_groups(merged, nodes)
        elif self.plain_list and is_list(merged):
            self._check_mixed(current, merged, values, nodes)
        return merged

    def _check_messages(self, value: object, node: str) -> None:
        for item in _as_list(value):
            if not isinstance(item, BaseMessage):
                raise StrictModeError(
                    f"{_writer(node).capitalize()} wrote {_short(item)} ({type(item).__name__}) to message list "
                    f"{self.key!r}, "
                    f"whose reducer {self.reducer_name!r} does not convert it to a message. "
                    "Use Annotated[list[AnyMessage], add_messages] or write message objects.",
                    key=self.key,
                    node=node,
                    value=item,
                )

    def _check_mixed(
        self, current: object, merged: Sequence[object], values: Sequence[object], nodes: Sequence[str]
    ) -> None:
        """A raw ``str`` beside message objects in any list: it stays a str, and ``m.content`` fails later."""
        if not any(isinstance(item, BaseMessage) for item in merged):
            return
        culprit = next(
            (
                (node, item)
                for value, node in zip(values, nodes, strict=True)
                for item in _as_list(value)
                if isinstance(item, str)
            ),
            None,
        )
        if culprit is None:  # a str stored earlier, now joined by messages: name the update that did it
            old = _as_list(current) if is_sequence(current) else []
            text = next((item for item in old if isinstance(item, str)), None)
            if text is None:
                return
            culprit = (nodes[0], text)
        node, text = culprit
        raise StrictModeError(
            f"After {_writer(node)}, list {self.key!r} holds the raw str {_short(text)} beside message "
            f"objects; its reducer {self.reducer_name!r} does not convert strings to messages, so "
            "`m.content` fails on it later. Use Annotated[list[AnyMessage], add_messages] (it turns a str "
            "into a HumanMessage) or write message objects, e.g. HumanMessage(...).",
            key=self.key,
            node=node,
            value=text,
            nodes=tuple(nodes),
        )

    def _check_update(self, current: object, value: object, node: str) -> None:
        items = _as_list(value)
        seen_new = False
        for item in items:
            if isinstance(item, RemoveMessage) and item.id == REMOVE_ALL_MESSAGES and seen_new:
                raise StrictModeError(
                    f"Node {node!r} put RemoveMessage(id=REMOVE_ALL_MESSAGES) after new messages in one update "
                    f"to {self.key!r}: it deletes them too. Put the REMOVE_ALL marker first, then the messages "
                    "to keep.",
                    key=self.key,
                    node=node,
                    value=value,
                )
            if not isinstance(item, RemoveMessage):
                seen_new = True
        if is_list(current) and current:
            _warn_edit_without_id(self.key, node, current, items)

    def _check_groups(self, messages: Sequence[object], nodes: Sequence[str]) -> None:
        problems = broken_tool_groups(messages)
        if problems:
            raise StrictModeError(
                f"After the update by {list(nodes)}, {self.key!r} has a broken tool-call group: "
                f"{'; '.join(problems)}. Chat providers reject such a history; remove or keep an AIMessage with "
                "tool_calls together with all its ToolMessages (plait.memory helpers do).",
                key=self.key,
                node=nodes[0],
                nodes=tuple(nodes),
            )


def _writer(node: str) -> str:
    return "the graph input" if node == "__start__" else f"the update of node {node!r}"


def _changed(before: object, after: object) -> bool:
    try:
        return bool(before != after)
    except Exception:  # noqa: BLE001 - incomparable values: assume unchanged
        return False


def _warn_edit_without_id(key: str, node: str, current: Sequence[object], items: list[object]) -> None:
    """Warn when an id-less message looks like an edit of the last message (seed 000 §6.4).

    Only the newest message is a candidate, and only when the new text is the same
    (ignoring case and spacing) or nearly so: a new turn that happens to start
    the same way is not an edit.
    """
    old = current[-1]
    if not isinstance(old, BaseMessage):
        return
    old_text = " ".join(str(old.content).split()).casefold()
    for item in items:
        if not isinstance(item, BaseMessage) or item.id is not None or isinstance(item, RemoveMessage):
            continue
        text = " ".join(str(item.content).split()).casefold()
        if item.type != old.type or min(len(text), len(old_text)) < 8:
            continue
        if text == old_text or difflib.SequenceMatcher(None, text, old_text).ratio() >= 0.9:
            warnings.warn(
                f"Node {node!r} added a {type(item).__name__} without an id to {key!r} that looks like an edit "
                f"of message id={old.id!r} ({_short(old.content)}). add_messages appends it as a new message; "
                f"did you mean to replace it? Pass id={old.id!r}.",
                StrictModeWarning,
                stacklevel=2,
            )
            return


def broken_tool_groups(messages: Sequence[object]) -> list[str]:
    """Tool-call problems in a history, ignoring calls still in flight at its end."""
    problems: list[str] = []
    pending: dict[str, int] = {}
    for idx, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in pending:
                problems.append(
                    f"ToolMessage #{idx} (id={message.id!r}) answers tool call "
                    f"{message.tool_call_id!r}, which no earlier AIMessage requested"
                )
            else:
                del pending[message.tool_call_id]
            continue
        if pending:  # a non-tool message after calls that are still unanswered
            for call_id, at in pending.items():
                problems.append(f"AIMessage #{at} requests tool call {call_id!r}, which has no ToolMessage")
            pending.clear()
        if isinstance(message, AIMessage):
            # ToolCall read as a Mapping: its TypedDict is partly Unknown to pyright (langchain-core
            # imports typing.NotRequired, absent from Python 3.10), and .get() tolerates a missing "id"
            calls = cast("Sequence[Mapping[str, Any]]", message.tool_calls)
            pending.update({new_id: idx for c in calls if (new_id := c.get("id"))})
    return problems


def _state_fields(state: object) -> dict[str, object] | None:
    """The keys of a state: the mapping itself, or an object's ``__dict__`` (``None`` without one)."""
    if is_str_dict(state):
        return state
    fields = getattr(state, "__dict__", None)
    return fields if is_str_dict(fields) else None


def _fingerprint(state: object) -> tuple[dict[str, object], dict[str, object]] | None:
    fields = _state_fields(state)
    if fields is None:
        return None
    return dict(fields), {k: _safe_copy(v) for k, v in fields.items()}


def _check_input(
    name: str, state: object, print_: tuple[dict[str, object], dict[str, object]] | None
) -> None:
    if print_ is None:
        return
    shallow, deep = print_
    fields = _state_fields(state)  # found by _fingerprint() already
    if fields is None:
        return
    for key in set(shallow) | set(fields):
        if key not in fields or key not in shallow or fields[key] is not shallow[key]:
            raise StrictModeError(
                f"Node {name!r} assigned state[{key!r}] on the state it received; that changes nothing. "
                f"Return the update instead: return {{{key!r}: ...}}.",
                node=name,
                key=key,
                value=fields.get(key),
            )
        if deep[key] is not MISSING and _changed(deep[key], fields[key]):
            raise StrictModeError(
                f"Node {name!r} modified state[{key!r}] in place; the change leaks into other nodes' snapshots and "
                f"checkpoints without going through the reducer. Build a new value and return {{{key!r}: new}}.",
                node=name,
                key=key,
                value=fields[key],
            )


@overload
def strict_call(
    name: str, call: Callable[[object, TaskContext], Awaitable[object]], is_async: Literal[True]
) -> Callable[[object, TaskContext], Awaitable[object]]: ...


@overload
def strict_call(
    name: str, call: Callable[[object, TaskContext], object], is_async: bool
) -> Callable[[object, TaskContext], object]: ...


def strict_call(
    name: str, call: Callable[[object, TaskContext], object], is_async: bool
) -> Callable[[object, TaskContext], object]:
    """Wrap a node call so that mutating the received state raises."""
    if is_async:

        async def acall(state: object, ctx: TaskContext) -> object:
            print_ = _fingerprint(state)
            result = call(state, ctx)
            if inspect.isawaitable(result):
                result = await result
            _check_input(name, state, print_)
            return result

        return acall

    def scall(state: object, ctx: TaskContext) -> object:
        print_ = _fingerprint(state)
        result = call(state, ctx)
        _check_input(name, state, print_)
        return result

    return scall
