"""The shapes of a human-in-the-loop ``interrupt()`` request and its answer (Agent Inbox convention)."""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

__all__ = ["ActionRequest", "HumanInterrupt", "HumanInterruptConfig", "HumanResponse"]


class HumanInterruptConfig(TypedDict):
    """What the person may do with a paused step."""

    allow_ignore: bool
    """Skip the step."""
    allow_respond: bool
    """Answer with text."""
    allow_edit: bool
    """Change the request before it runs."""
    allow_accept: bool
    """Approve it as it is."""


class ActionRequest(TypedDict):
    """The action waiting for approval."""

    action: str
    """Its name, e.g. a tool name."""
    args: dict[str, Any]
    """Its arguments."""


class HumanInterrupt(TypedDict):
    """The value passed to ``interrupt()`` when a person must look at an action."""

    action_request: ActionRequest
    """The action."""
    config: HumanInterruptConfig
    """What the person may do."""
    description: str | None
    """Text shown to the person."""


class HumanResponse(TypedDict):
    """The value a run is resumed with after a :class:`HumanInterrupt`."""

    type: Literal["accept", "ignore", "response", "edit"]
    """What the person chose."""
    args: None | str | ActionRequest
    """``None`` (accept, ignore), a text (response) or the edited action (edit)."""
