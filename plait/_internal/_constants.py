"""LangGraph's private constants (``langgraph._internal._constants``), for code that imports them.

The values are LangGraph's: they name channels, writes and ``configurable`` keys in checkpoints
and configs that both libraries read.
"""

from __future__ import annotations

import sys
from typing import Final, Literal

__all__ = [
    "CACHE_NS_WRITES",
    "CONF",
    "CONFIG_KEY_CACHE",
    "CONFIG_KEY_CALL",
    "CONFIG_KEY_CHECKPOINTER",
    "CONFIG_KEY_CHECKPOINT_ID",
    "CONFIG_KEY_CHECKPOINT_MAP",
    "CONFIG_KEY_CHECKPOINT_NS",
    "CONFIG_KEY_DURABILITY",
    "CONFIG_KEY_NODE_ERROR",
    "CONFIG_KEY_NODE_FINISHED",
    "CONFIG_KEY_READ",
    "CONFIG_KEY_REPLAY_STATE",
    "CONFIG_KEY_RESUME_MAP",
    "CONFIG_KEY_RESUMING",
    "CONFIG_KEY_RUNNER_SUBMIT",
    "CONFIG_KEY_RUNTIME",
    "CONFIG_KEY_SCRATCHPAD",
    "CONFIG_KEY_SEND",
    "CONFIG_KEY_STREAM",
    "CONFIG_KEY_TASK_ID",
    "CONFIG_KEY_THREAD_ID",
    "ERROR",
    "INPUT",
    "INTERRUPT",
    "NO_WRITES",
    "NS_END",
    "NS_SEP",
    "NULL_TASK_ID",
    "OVERWRITE",
    "PREVIOUS",
    "PULL",
    "PUSH",
    "RESERVED",
    "RESUME",
    "RETURN",
    "TASKS",
]

INPUT: Final = sys.intern("__input__")
INTERRUPT: Final = sys.intern("__interrupt__")
RESUME: Final = sys.intern("__resume__")
ERROR: Final = sys.intern("__error__")
NO_WRITES: Final = sys.intern("__no_writes__")
TASKS: Final = sys.intern("__pregel_tasks")
RETURN: Final = sys.intern("__return__")
PREVIOUS: Final = sys.intern("__previous__")
CACHE_NS_WRITES: Final = sys.intern("__pregel_ns_writes")
CONFIG_KEY_SEND: Final = sys.intern("__pregel_send")
CONFIG_KEY_READ: Final = sys.intern("__pregel_read")
CONFIG_KEY_CALL: Final = sys.intern("__pregel_call")
CONFIG_KEY_CHECKPOINTER: Final = sys.intern("__pregel_checkpointer")
CONFIG_KEY_STREAM: Final = sys.intern("__pregel_stream")
CONFIG_KEY_CACHE: Final = sys.intern("__pregel_cache")
CONFIG_KEY_RESUMING: Final = sys.intern("__pregel_resuming")
CONFIG_KEY_REPLAY_STATE: Final = sys.intern("__pregel_replay_state")
CONFIG_KEY_TASK_ID: Final = sys.intern("__pregel_task_id")
CONFIG_KEY_THREAD_ID: Final = sys.intern("thread_id")
CONFIG_KEY_CHECKPOINT_MAP: Final = sys.intern("checkpoint_map")
CONFIG_KEY_CHECKPOINT_ID: Final = sys.intern("checkpoint_id")
CONFIG_KEY_CHECKPOINT_NS: Final = sys.intern("checkpoint_ns")
CONFIG_KEY_NODE_FINISHED: Final = sys.intern("__pregel_node_finished")
CONFIG_KEY_SCRATCHPAD: Final = sys.intern("__pregel_scratchpad")
CONFIG_KEY_RUNNER_SUBMIT: Final = sys.intern("__pregel_runner_submit")
CONFIG_KEY_DURABILITY: Final = sys.intern("__pregel_durability")
CONFIG_KEY_RUNTIME: Final = sys.intern("__pregel_runtime")
CONFIG_KEY_RESUME_MAP: Final = sys.intern("__pregel_resume_map")
CONFIG_KEY_NODE_ERROR: Final = sys.intern("__pregel_node_error")
PUSH: Final = sys.intern("__pregel_push")
PULL: Final = sys.intern("__pregel_pull")
NS_SEP: Final = sys.intern("|")
NS_END: Final = sys.intern(":")
CONF: Final[Literal["configurable"]] = "configurable"
NULL_TASK_ID: Final = sys.intern("00000000-0000-0000-0000-000000000000")
OVERWRITE: Final = sys.intern("__overwrite__")

RESERVED: Final = frozenset(
    {
        "langsmith:hidden",
        INPUT,
        INTERRUPT,
        RESUME,
        ERROR,
        NO_WRITES,
        CONFIG_KEY_SEND,
        CONFIG_KEY_READ,
        CONFIG_KEY_CHECKPOINTER,
        CONFIG_KEY_STREAM,
        CONFIG_KEY_CHECKPOINT_MAP,
        CONFIG_KEY_RESUMING,
        CONFIG_KEY_TASK_ID,
        CONFIG_KEY_CHECKPOINT_ID,
        CONFIG_KEY_CHECKPOINT_NS,
        CONFIG_KEY_RESUME_MAP,
        PUSH,
        PULL,
        NS_SEP,
        NS_END,
        CONF,
    }
)
"""Names a graph may not use for its own nodes, channels or configurable keys."""
