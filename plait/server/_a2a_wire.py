"""A2A's shapes for :mod:`plait.server._a2a`: messages in and out, task states, artifacts, and the
1.0 / 0.3 spellings of results."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from plait.server._wire import as_dict, as_list, dumps

__all__ = [
    "TERMINAL",
    "Fail",
    "accepts",
    "agent_message",
    "history",
    "interrupt_artifact",
    "now",
    "outcome",
    "reply_artifact",
    "run_input",
    "said",
    "status_update",
    "task_doc",
    "task_state",
    "to_wire",
]

INVALID_PARAMS, CONTENT_TYPE_NOT_SUPPORTED = -32602, -32005
TERMINAL = frozenset(
    {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
)
_RUN_STATES = {
    "pending": "TASK_STATE_SUBMITTED",
    "running": "TASK_STATE_WORKING",
    "success": "TASK_STATE_COMPLETED",
    "interrupted": "TASK_STATE_CANCELED",  # (a run cancelled; a graph's interrupt ends its run in success)
    "error": "TASK_STATE_FAILED",
    "timeout": "TASK_STATE_FAILED",
}
_LEGACY_ROLES = {"ROLE_USER": "user", "ROLE_AGENT": "agent"}
_LEGACY_STATES = {
    "TASK_STATE_SUBMITTED": "submitted",
    "TASK_STATE_WORKING": "working",
    "TASK_STATE_COMPLETED": "completed",
    "TASK_STATE_FAILED": "failed",
    "TASK_STATE_CANCELED": "canceled",
    "TASK_STATE_INPUT_REQUIRED": "input-required",
    "TASK_STATE_REJECTED": "rejected",
    "TASK_STATE_AUTH_REQUIRED": "auth-required",
}
_WRAP = {
    "task": "task",
    "message": "message",
    "status-update": "statusUpdate",
    "artifact-update": "artifactUpdate",
}


class Fail(Exception):
    """A JSON-RPC error answer: its code and message (``http``: the HTTP status it goes with: 200 but
    for an agent URL that names no assistant, 404)."""

    def __init__(self, code: int, message: str, http: int = 200) -> None:
        super().__init__(message)
        self.code, self.message, self.http = code, message, http

    def response(self, rpc_id: Any) -> dict[str, object]:
        """The JSON-RPC response carrying it."""
        return {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": self.code, "message": self.message}}


def accepts(header: str, media: str) -> bool:
    """Whether an Accept header takes ``media`` (``*/*`` and ``type/*`` included)."""
    for item in header.lower().split(","):
        kind = item.split(";", 1)[0].strip()
        if kind in ("*/*", media) or (kind.endswith("/*") and media.startswith(kind[:-1])):
            return True
    return False


def task_state(run_status: str, thread_status: str) -> str:
    """A task's A2A state from its run's status (a successful run whose thread waits: input required)."""
    if run_status == "success" and thread_status == "interrupted":
        return "TASK_STATE_INPUT_REQUIRED"
    return _RUN_STATES.get(run_status, "TASK_STATE_SUBMITTED")


def to_wire(result: dict[str, object], legacy: bool) -> dict[str, object]:
    """A result as A2A 0.3 spells it (lower-case roles and states, each result its ``kind``) or as
    1.0 does (upper-case enums, a stream result wrapped by its kind: ``{"statusUpdate": …}``)."""
    if not legacy:
        return {_WRAP[str(result.get("kind"))]: result}
    return as_dict(_legacy(result))


def _legacy(data: Any) -> Any:
    if isinstance(data, list):
        return [_legacy(item) for item in as_list(data)]
    if not isinstance(data, dict):
        return data
    out: dict[str, object] = {}
    for key, value in as_dict(data).items():
        if key == "role" and isinstance(value, str):
            out[key] = _LEGACY_ROLES.get(value, value)
        elif key == "state" and isinstance(value, str):
            out[key] = _LEGACY_STATES.get(value, value)
        else:
            out[key] = _legacy(value)
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        str(as_dict(block).get("text", ""))
        for block in as_list(content)
        if as_dict(block).get("type") == "text"
    )


def _role(message: dict[str, object]) -> str | None:
    kind = str(message.get("type") or message.get("role") or "").lower()
    if kind in ("human", "user", "humanmessage", "humanmessagechunk"):
        return "ROLE_USER"
    if kind in ("ai", "assistant", "aimessage", "aimessagechunk"):
        return "ROLE_AGENT"
    return None  # (system prompts and tool results are not the conversation's)


def history(
    messages: list[object], task_id: str, context: str, length: int | None
) -> list[dict[str, object]]:
    """A thread's human and AI messages as A2A messages (the last ``length`` of them)."""
    out: list[dict[str, object]] = []
    for raw in messages:
        message = as_dict(raw)
        role, text = _role(message), _text(message.get("content"))
        if role is None or (role == "ROLE_AGENT" and not text):
            continue
        out.append(
            {
                "kind": "message",
                "role": role,
                "parts": [{"kind": "text", "text": text}],
                "messageId": str(message.get("id") or uuid.uuid4()),
                "taskId": task_id,
                "contextId": context,
            }
        )
    return out if length is None else out[-length:] if length else []


def reply_artifact(values: Any, assistant_id: str) -> dict[str, object]:
    """The response artifact: the last AI message since the last human one (without messages, the
    output as JSON text)."""
    messages = as_list(as_dict(values).get("messages")) if isinstance(values, dict) else []
    if not messages:
        text = dumps(values).decode()
    else:
        last_human = max((i for i, m in enumerate(messages) if _role(as_dict(m)) == "ROLE_USER"), default=-1)
        replies = [
            _text(as_dict(m).get("content"))
            for m in messages[last_human + 1 :]
            if _role(as_dict(m)) == "ROLE_AGENT"
        ]
        text = next((t for t in reversed(replies) if t), "")
    return {
        "artifactId": str(uuid.uuid4()),
        "name": "Assistant Response",
        "description": f"Response from assistant {assistant_id}",
        "parts": [{"kind": "text", "text": text}],
    }


def interrupt_artifact(interrupts: list[object]) -> dict[str, object]:
    """The ``Interrupt`` artifact of a task that waits for input: each interrupt's id and value."""
    parts = [
        {"kind": "data", "data": {"id": as_dict(i).get("id"), "value": as_dict(i).get("value")}}
        for i in interrupts
    ]
    return {
        "artifactId": str(uuid.uuid4()),
        "name": "Interrupt",
        "description": "Agent requires input to continue",
        "parts": parts,
    }


def run_input(
    message: dict[str, object], input_keys: set[str], assistant: str
) -> tuple[dict[str, object], Any]:
    """A message's parts as the graph's input (text parts: ``messages``, data parts: more keys), and
    as the answer to an interrupt (the data, else the text).

    Raises:
        Fail: the message has no id, role or parts, a part is not text or data, or the graph's input
            has no ``messages`` for its text.
    """
    for key in ("messageId", "role"):
        if not message.get(key):
            raise Fail(INVALID_PARAMS, f"Missing required {key!r} in message")
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        raise Fail(INVALID_PARAMS, "message.parts must be a non-empty list of parts")
    role = str(message["role"]).lower()
    speaker = "assistant" if role in ("role_agent", "agent") else "human"
    texts: list[str] = []
    data: dict[str, object] = {}
    for n, raw in enumerate(as_list(parts)):
        part = as_dict(raw)
        if "text" in part:
            texts.append(str(part["text"]))
        elif "data" in part:
            if not isinstance(part["data"], dict):
                raise Fail(
                    INVALID_PARAMS, f"message.parts[{n}].data must be a JSON object (the input's keys)"
                )
            data.update(as_dict(part["data"]))
        else:
            raise Fail(
                CONTENT_TYPE_NOT_SUPPORTED,
                f"message.parts[{n}] is not a text or data part ({sorted(part)}): plait serve takes only those",
            )
    if texts and "messages" not in input_keys:
        raise Fail(
            INVALID_PARAMS,
            f"assistant {assistant}'s input has no 'messages' key for the text: send a data part with its "
            f"input ({', '.join(sorted(input_keys)) or 'no keys'}) instead",
        )
    made: dict[str, object] = {**data}
    if texts:
        made["messages"] = [{"role": speaker, "content": "\n".join(texts), "id": str(message["messageId"])}]
    return made, (data if data else "\n".join(texts))


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def task_doc(  # noqa: PLR0913 - the parts of a task
    task_id: str,
    context: str,
    values: Any,
    state: str,
    length: int | None,
    assistant_id: str,
    error: str = "",
) -> dict[str, object]:
    """An A2A task (internal form: 1.0's enums, parts with their ``kind``)."""
    task: dict[str, object] = {"kind": "task", "id": task_id, "contextId": context}
    status: dict[str, object] = {"state": state, "timestamp": now()}
    if error:
        status["message"] = {
            "kind": "message",
            "role": "ROLE_AGENT",
            "parts": [{"kind": "text", "text": error}],
            "messageId": str(uuid.uuid4()),
            "taskId": task_id,
            "contextId": context,
        }
    task["status"] = status
    if length != 0:
        task["history"] = history(as_list(as_dict(values).get("messages")), task_id, context, length)
    if state == "TASK_STATE_INPUT_REQUIRED":
        task["artifacts"] = [interrupt_artifact(as_list(as_dict(values).get("__interrupt__")))]
    elif state == "TASK_STATE_COMPLETED":
        task["artifacts"] = [reply_artifact(values, assistant_id)]
    return task


def outcome(output: Any) -> tuple[str, str]:
    """A run's output as a task state and error text."""
    found = as_dict(output)
    if "__error__" in found:
        error = as_dict(found["__error__"])
        return "TASK_STATE_FAILED", f"{error.get('error', 'Error')}: {error.get('message', '')}".rstrip(": ")
    if found.get("__interrupt__"):
        return "TASK_STATE_INPUT_REQUIRED", ""
    return "TASK_STATE_COMPLETED", ""


def agent_message(parts: list[dict[str, object]], task_id: str, context: str) -> dict[str, object]:
    return {
        "kind": "message",
        "role": "ROLE_AGENT",
        "parts": parts,
        "messageId": str(uuid.uuid4()),
        "taskId": task_id,
        "contextId": context,
    }


def said(data: Any, task_id: str, context: str) -> dict[str, object] | None:
    """A ``messages`` event's AI text as an agent message (``None``: no text, or not the AI's)."""
    chunk = as_dict(as_list(data)[0]) if as_list(data) else {}
    if str(chunk.get("type", "")).lower() not in ("ai", "aimessagechunk", "aimessage"):
        return None
    content = chunk.get("content")
    text = (
        content
        if isinstance(content, str)
        else "".join(
            str(as_dict(b).get("text", "")) for b in as_list(content) if as_dict(b).get("type") == "text"
        )
    )
    return agent_message([{"kind": "text", "text": text}], task_id, context) if text else None


def status_update(
    task_id: str, context: str, state: str, message: dict[str, object] | None, *, final: bool
) -> dict[str, object]:
    status: dict[str, object] = {"state": state, "timestamp": now()}
    if message is not None:
        status["message"] = message
    return {
        "kind": "status-update",
        "taskId": task_id,
        "contextId": context,
        "status": status,
        "final": final,
    }
