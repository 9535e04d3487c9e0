"""``PersistentDict``: a dict kept in memory and written to a file on ``sync()`` / ``close()`` (LangGraph's).

``InMemorySaver(factory=PersistentDict-subclass)`` keeps its threads in one, so a test can write a
saver's contents to a file. The file is a pickle, as LangGraph writes it: ``load()`` only files you
wrote yourself (unpickling runs code).
"""

from __future__ import annotations

import os
import pickle
from collections import defaultdict
from types import TracebackType
from typing import Any

__all__ = ["PersistentDict"]


class PersistentDict(defaultdict[Any, Any]):
    """A ``defaultdict`` persisted to ``filename``: written (atomically) by :meth:`sync` and :meth:`close`.

    Args:
        *args: As for ``defaultdict`` (the default factory first).
        filename: The file it is written to and loaded from.
        **kwds: As for ``defaultdict``.
    """

    def __init__(self, *args: object, filename: str, **kwds: object) -> None:
        self.flag = "c"  # r: read-only (sync writes nothing), c: create, n: new (load reads nothing)
        self.mode: int | None = None  # file permissions to set after writing, e.g. 0o644
        self.format = "pickle"
        self.filename = filename
        super().__init__(*args, **kwds)

    def sync(self) -> None:
        """Write the dict to its file (through a temporary file renamed over it)."""
        if self.flag == "r":
            return
        temp = self.filename + ".tmp"
        try:
            with open(temp, "wb") as fh:
                self.dump(fh)
        except BaseException:
            if os.path.exists(temp):
                os.remove(temp)
            raise
        os.replace(temp, self.filename)
        if self.mode is not None:
            os.chmod(self.filename, self.mode)

    def close(self) -> None:
        """Write the dict to its file, then empty it."""
        self.sync()
        self.clear()

    def __enter__(self) -> PersistentDict:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def dump(self, fileobj: Any) -> None:
        """Write the dict's items to ``fileobj`` (a pickle).

        Raises:
            NotImplementedError: ``format`` is not ``"pickle"``.
        """
        if self.format != "pickle":
            raise NotImplementedError(f"Unknown format: {self.format!r}")
        pickle.dump(dict(self), fileobj, 2)

    def load(self) -> None:
        """Add the items stored in the file (nothing for ``flag == "n"`` or an empty file)."""
        if self.flag == "n":
            return
        with open(self.filename, "rb") as fh:
            try:
                self.update(pickle.load(fh))  # noqa: S301 - LangGraph's format; the caller's own file
            except EOFError:
                return
