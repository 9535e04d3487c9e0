"""The ``plait`` click group: every subcommand, all of which need the ``cli`` extra (click, rich)."""

from __future__ import annotations

import click

from plait.cli.demo import demo
from plait.cli.inspect import diff, history, migrate, prune, show, threads

__all__ = ["main"]


@click.group()
@click.version_option(package_name="plait")
def main() -> None:
    """plait: stateful LLM applications as state graphs."""


for command in (demo, threads, history, show, diff, prune, migrate):
    main.add_command(command)
