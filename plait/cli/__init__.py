"""The ``plait`` command line (``pip install 'plait[cli]'``)."""

from __future__ import annotations

try:
    import click
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("The plait command line needs the 'cli' extra: pip install 'plait[cli]'") from exc

from plait.cli.demo import demo
from plait.cli.inspect import diff, history, migrate, prune, show, threads

__all__ = ["main"]


@click.group()
@click.version_option(package_name="plait")
def main() -> None:
    """plait: stateful LLM applications as state graphs."""


for command in (demo, threads, history, show, diff, prune, migrate):
    main.add_command(command)
