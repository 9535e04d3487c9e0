"""Stream parts of ``stream(version="v2")`` -> protocol events of the v3 event stream."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from plait.stream._types import ProtocolEvent, ProtocolEventParams

__all__ = ["convert_to_protocol_event"]


def convert_to_protocol_event(part: Mapping[str, Any]) -> ProtocolEvent:
    """The protocol event of one v2 stream part (``{"type", "ns", "data"[, "interrupts"]}``).

    The part's type becomes the event's ``method``, its namespace a list, and the event
    is stamped with the current time in milliseconds.
    """
    params: ProtocolEventParams = {
        "namespace": list(part["ns"]),
        "timestamp": int(time.time() * 1000),
        "data": part["data"],
    }
    if "interrupts" in part:
        params["interrupts"] = part["interrupts"]
    return {"type": "event", "method": part["type"], "params": params}
