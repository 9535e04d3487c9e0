"""Validation of the ``configurable`` part of run configs, shared by runs and savers.

Malformed configs raise :class:`~plait.errors.InvalidConfigError` here, before
any database sees them, instead of the driver's own error (psycopg's
``DataError`` for a NUL byte, ``UnicodeEncodeError`` for a lone surrogate, an
index-size error for a megabyte-long thread id…). Re-exported by
:mod:`plait.checkpoint.base`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, cast

from plait.errors import InvalidConfigError

__all__ = [
    "checkpoint_config",
    "MAX_ID_BYTES",
    "MAX_NS_BYTES",
    "check_thread_id",
    "configurable_of",
    "get_checkpoint_id",
    "listed_thread",
    "thread_key",
]


MAX_ID_BYTES = 1024
"""Longest ``thread_id`` / ``checkpoint_id`` accepted, in UTF-8 bytes (1024 ASCII characters).

LangGraph sets no limit; plait keeps ids short enough that every backend can
index them (PostgreSQL's index rows hold at most about 2.7 kB). Hash longer
keys, e.g. ``hashlib.sha256(key.encode()).hexdigest()``.
"""
MAX_NS_BYTES = 65536
"""Longest ``checkpoint_ns`` accepted, in UTF-8 bytes (subgraph nesting makes namespaces grow)."""

_EXAMPLE = "{'configurable': {'thread_id': 'user-1'}}"
_MISSING_THREAD = (
    "Checkpointer requires one or more of the following 'configurable' keys: thread_id, checkpoint_ns, "
    f"checkpoint_id. Pass config={_EXAMPLE} to invoke/stream/get_state."
)


def _shown(value: Any) -> str:
    """``value``'s type and a short repr, for error messages (ids can be megabytes long)."""
    text = repr(value)
    if len(text) > 60:
        text = f"{text[:40]}...{text[-10:]} ({len(value) if hasattr(value, '__len__') else '?'} long)"
    return f"{type(value).__name__} {text}"


def configurable_of(config: object) -> Mapping[str, Any]:
    """``config["configurable"]`` (``{}`` when absent), after checking that both are dicts.

    Raises:
        InvalidConfigError: ``config`` is neither a mapping nor None, or ``configurable`` is not a mapping.
    """
    if config is None:
        return {}
    if type(config) is dict:  # the common case, without the abstract-class checks below
        found: Any = config.get("configurable")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if found is None:
            return {}
        if type(found) is dict:  # pyright: ignore[reportUnknownArgumentType]
            return found  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(config, Mapping):
        raise InvalidConfigError(
            f"Invalid config: expected a dict (or None), got {_shown(config)}. Pass the run config as a dict, "
            f"e.g. graph.invoke(input, {_EXAMPLE}).",
            field="config",
            value=config,
        )
    # The isinstance check above leaves the key and value types unknown; run configs are str-keyed.
    conf: object = cast("Mapping[str, object]", config).get("configurable")
    if conf is None:
        return {}
    if not isinstance(conf, Mapping):
        raise InvalidConfigError(
            f"Invalid config['configurable']: expected a dict, got {_shown(conf)}. Put thread_id and the other "
            f"per-run settings in a dict, e.g. {_EXAMPLE}.",
            field="configurable",
            value=conf,
        )
    return cast("Mapping[str, Any]", conf)  # checked to be a Mapping just above


def _text(value: str, field: str, limit: int) -> str:
    """``value``, if a database can store it: no NUL, valid UTF-8, at most ``limit`` bytes."""
    if _ok(value, limit):  # the common case, checked at C speed
        return value
    where = f"config['configurable'][{field!r}]"
    if "\x00" in value:
        raise InvalidConfigError(
            f"Invalid {where}: it contains a NUL character ('\\x00') at position {value.index(chr(0))}, which "
            "databases cannot store. Remove it, e.g. value.replace('\\x00', '').",
            field=field,
            value=value,
        )
    if value.isascii():
        size = len(value)
    else:
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as err:
            raise InvalidConfigError(
                f"Invalid {where}: it is not valid Unicode (lone surrogate {value[err.start]!r} at position "
                f"{err.start}) and cannot be encoded as UTF-8. Decode the id's bytes properly, or use a hex or "
                "base64 form of them.",
                field=field,
                value=value,
            ) from None
    if size > limit:
        name = "MAX_NS_BYTES" if field == "checkpoint_ns" else "MAX_ID_BYTES"
        raise InvalidConfigError(
            f"Invalid {where}: it is {size} bytes long in UTF-8; the limit is {limit} bytes "
            f"(plait.checkpoint.base.{name}). Use a shorter id, e.g. a hash: "
            "hashlib.sha256(key.encode()).hexdigest().",
            field=field,
            value=value,
        )
    return value


def _checkpoint_id(conf: Mapping[str, object]) -> str | None:
    cid = conf.get("checkpoint_id")
    if cid is None or cid == "":
        return None
    if isinstance(cid, uuid.UUID):
        cid = str(cid)
    elif not isinstance(cid, str):
        raise InvalidConfigError(
            f"Invalid config['configurable']['checkpoint_id']: expected a str or None, got {_shown(cid)}. Use "
            "an id from get_state() or get_state_history() (snapshot.config), or leave it out for the newest "
            "checkpoint.",
            field="checkpoint_id",
            value=cid,
        )
    return _text(cid, "checkpoint_id", MAX_ID_BYTES)


def _ok(text: object, limit: int) -> bool:
    return type(text) is str and 0 < len(text) <= limit and text.isascii() and "\x00" not in text


def _plain_key(config: Any) -> tuple[str, str, str | None] | None:
    """:func:`thread_key` of the configs runs and savers pass around (plain dicts, ASCII ids), or ``None``.

    (``x.__class__ is``: exact types, as ``type(x) is`` checks them, without narrowing ``Any``.)
    """
    if config.__class__ is not dict:
        return None
    conf = config.get("configurable")
    if conf.__class__ is not dict:
        return None
    get = conf.get
    thread_id, ns, cid = get("thread_id"), get("checkpoint_ns"), get("checkpoint_id")
    if (
        thread_id.__class__ is not str
        or not 0 < len(thread_id) <= MAX_ID_BYTES
        or not thread_id.isascii()
        or "\x00" in thread_id
    ):
        return None
    if not ns:
        ns = ""
    elif not _ok(ns, MAX_NS_BYTES):
        return None
    if cid is None or cid == "":
        return thread_id, ns, None
    if cid.__class__ is str and len(cid) == 36 and cid.isascii() and "\x00" not in cid:  # the runtime's ids
        return thread_id, ns, cid
    return (thread_id, ns, cid) if _ok(cid, MAX_ID_BYTES) else None


def thread_key(config: object) -> tuple[str, str, str | None]:
    """Validate a config and return the ``(thread_id, checkpoint_ns, checkpoint_id)`` it addresses.

    The one parser of ``config["configurable"]`` for runs and savers. ``thread_id``
    may be a str, an int or a UUID (converted with ``str``); it and
    ``checkpoint_id`` must be non-empty text without NUL characters, encodable as
    UTF-8 and at most :data:`MAX_ID_BYTES` bytes long. ``checkpoint_ns`` must be a
    str (``None`` and a missing one mean ``""``, the root graph); an empty
    ``checkpoint_id`` means none (the newest checkpoint).

    Raises:
        InvalidConfigError: the config is not a dict, ``configurable`` is not a dict,
            ``thread_id`` is missing, or a field has the wrong type or text.
    """
    fast = _plain_key(config)
    if fast is not None:
        return fast
    conf = configurable_of(config)
    thread_id = check_thread_id(conf.get("thread_id"))
    ns = conf.get("checkpoint_ns")
    if ns is None:
        ns = ""
    elif not isinstance(ns, str):
        raise InvalidConfigError(
            f"Invalid config['configurable']['checkpoint_ns']: expected a str, got {_shown(ns)}. Leave it out "
            "(or pass '') to address the root graph; plait sets it for subgraphs.",
            field="checkpoint_ns",
            value=ns,
        )
    elif ns:
        _text(ns, "checkpoint_ns", MAX_NS_BYTES)
    return thread_id, ns, _checkpoint_id(conf)


def listed_thread(config: object) -> tuple[str, str | None]:
    """``(thread_id, checkpoint_ns)`` a ``list(config)`` reads: a config without a
    ``checkpoint_ns`` (or with ``None``) lists every namespace of the thread (``None``), as
    LangGraph's savers do; ``""`` lists the root graph's checkpoints only.

    Raises:
        InvalidConfigError: as :func:`thread_key`.
    """
    thread_id, ns, _ = thread_key(config)
    return thread_id, (ns if ns or configurable_of(config).get("checkpoint_ns") is not None else None)


def check_thread_id(thread_id: object) -> str:
    """``thread_id`` as the str savers store, after the checks of :func:`thread_key`.

    For methods that take a bare thread id (``delete_thread``, ``prune``, ``lease``).

    Raises:
        InvalidConfigError: it is missing, of another type than str/int/UUID, or not storable text.
    """
    if thread_id is None or thread_id == "":
        raise InvalidConfigError(_MISSING_THREAD, field="thread_id", value=thread_id)
    if isinstance(thread_id, (int, uuid.UUID)) and not isinstance(thread_id, bool):
        thread_id = str(thread_id)
    elif not isinstance(thread_id, str):
        raise InvalidConfigError(
            f"Invalid config['configurable']['thread_id']: expected a str, int or UUID, got {_shown(thread_id)}. "
            f"Use a string id, e.g. {_EXAMPLE}.",
            field="thread_id",
            value=thread_id,
        )
    return _text(thread_id, "thread_id", MAX_ID_BYTES)


def get_checkpoint_id(config: Mapping[str, object] | None) -> str | None:
    """The ``checkpoint_id`` a config addresses, if any (``""`` counts as none).

    Raises:
        InvalidConfigError: the config or its ``checkpoint_id`` is malformed (see :func:`thread_key`).
    """
    return _checkpoint_id(configurable_of(config))


def checkpoint_config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, Any]:
    """The config that addresses one stored checkpoint (what savers hand back)."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }
