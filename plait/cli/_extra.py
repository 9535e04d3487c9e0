"""What ``plait`` does when the ``cli`` extra is not installed: one clear line, no traceback.

This module imports nothing that the extra provides.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import NoReturn

__all__ = ["INSTALL_HINT", "MissingExtra"]

INSTALL_HINT = "pip install 'plait[cli]'"
"""How to install what the command line needs."""


class MissingExtra:
    """Stands in for the ``plait`` click group when click or rich cannot be imported.

    Calling it (as the console script does) answers ``--version``, which needs
    nothing, and otherwise prints one line naming the extra and exits with status 1.

    Args:
        error: Why the extra could not be imported.
    """

    def __init__(self, error: ImportError) -> None:
        self.error = error

    def __call__(self, args: Sequence[str] | None = None) -> NoReturn:
        """Run the command line; always exits (like a click group's standalone ``main``)."""
        argv = list(sys.argv[1:] if args is None else args)
        if argv == ["--version"]:
            try:
                print(f"plait, version {version('plait')}")
            except PackageNotFoundError:
                print("plait, version unknown")
            raise SystemExit(0)
        reason = (
            self.error.msg
            if isinstance(self.error.msg, str) and self.error.msg  # pyright: ignore[reportUnnecessaryIsInstance]  # typeshed says str, but ImportError().msg is None
            else type(self.error).__name__
        )
        print(
            f"plait: the command line needs the 'cli' extra ({reason}); install it with: {INSTALL_HINT}",
            file=sys.stderr,
        )
        raise SystemExit(1)
