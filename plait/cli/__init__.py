"""The ``plait`` command line (``pip install 'plait[cli]'``)."""

from __future__ import annotations

try:
    import click
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("The plait command line needs the 'cli' extra: pip install 'plait[cli]'") from exc

from plait.cli.demo import demo

__all__ = ["main"]


@click.group()
@click.version_option(package_name="plait")
def main() -> None:
    """plait: stateful LLM applications as state graphs."""


main.add_command(demo)
