"""The ``plait`` command line (``pip install 'plait[cli]'``).

Without the ``cli`` extra (click, rich) :data:`main` is a stand-in that
answers ``plait --version`` and otherwise prints one line naming the extra to
install and exits with status 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.cli._extra import MissingExtra

if TYPE_CHECKING:
    import click

__all__ = ["main"]

main: click.Group | MissingExtra
"""The ``plait`` console script: the click group, or :class:`MissingExtra` without the extra."""

try:
    import click as _click  # noqa: F401  # pyright: ignore[reportUnusedImport]  # the extra's modules, checked before any subcommand imports them
    import rich as _rich  # noqa: F401  # pyright: ignore[reportUnusedImport]  # imported only to check the extra is installed
except ImportError as exc:
    main = MissingExtra(exc)
else:
    from plait.cli import _app

    main = _app.main
