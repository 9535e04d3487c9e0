"""``threads.search(extract={alias: path})``: values picked out of each thread found, as ``extracted``.

A path starts with a field of the thread (``values``, ``metadata``, ``config`` or
``interrupts``), then names keys with dots and list items with ``[n]`` (``[-1]`` is the last):
``values.messages[-1].content``. A path that leads nowhere extracts ``null``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from plait.server._wire import ApiError, as_dict, as_list

__all__ = ["MAX_PATHS", "extract_paths", "extracted"]

MAX_PATHS = 10
ROOTS = ("values", "metadata", "config", "interrupts")
_ALIAS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STEP = re.compile(r"\.([^.\[\]]+)|\[(-?\d+)\]")
Step = str | int


def _steps(path: str) -> list[Step]:
    """``values.messages[-1].content`` -> ``["values", "messages", -1, "content"]``, or ValueError."""
    root = path.split(".", 1)[0].split("[", 1)[0]
    steps: list[Step] = [root]
    rest, at = path[len(root) :], 0
    while at < len(rest):
        found = _STEP.match(rest, at)
        if found is None:
            raise ValueError(rest[at:])
        steps.append(found.group(1) if found.group(1) is not None else int(found.group(2)))
        at = found.end()
    return steps


def extract_paths(raw: Any, reserved: set[str]) -> dict[str, list[Step]]:
    """The request's ``extract``, checked: each alias an identifier that is no field of a thread.

    Raises:
        ApiError: 422, naming the alias or path that cannot be used.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ApiError(422, f"extract must be an object of alias -> path, got {raw!r:.80}")
    given = as_dict(raw)
    if len(given) > MAX_PATHS:
        raise ApiError(422, f"extract takes at most {MAX_PATHS} paths, got {len(given)}")
    out: dict[str, list[Step]] = {}
    for alias, path in given.items():
        if not _ALIAS.fullmatch(alias):  # JSON object keys are strings
            raise ApiError(
                422, f"extract alias {alias!r} must be an identifier (letters, digits, underscores)"
            )
        if alias in reserved:
            raise ApiError(422, f"extract alias {alias!r} is a field of the thread; choose another name")
        if not isinstance(path, str) or not path:
            raise ApiError(422, f"extract path of {alias!r} must be a non-empty string")
        try:
            steps = _steps(path)
        except ValueError as exc:
            raise ApiError(422, f"extract path {path!r}: cannot read {exc}") from None
        if steps[0] not in ROOTS:
            raise ApiError(422, f"extract path {path!r} must start with one of {list(ROOTS)}")
        out[alias] = steps
    return out


def extracted(doc: Mapping[str, object], paths: dict[str, list[Step]]) -> dict[str, object]:
    """Each alias's value in ``doc`` (``None`` where its path leads nowhere)."""
    out: dict[str, object] = {}
    for alias, steps in paths.items():
        value: Any = doc
        for step in steps:
            if isinstance(step, int) and isinstance(value, list):
                items = as_list(value)
                value = items[step] if -len(items) <= step < len(items) else None
            elif isinstance(step, str) and isinstance(value, dict):
                value = as_dict(value).get(step)
            else:
                value = None
            if value is None:
                break
        out[alias] = value
    return out
