"""The ``plait`` click group: every subcommand, all of which need the ``cli`` extra (click, rich)."""

from __future__ import annotations

import click

from plait.cli.chat import chat
from plait.cli.demo import demo
from plait.cli.inspect import diff, history, prune, show, threads
from plait.cli.inspect_web import inspect
from plait.cli.migrate import migrate
from plait.cli.serve import serve

__all__ = ["main"]


@click.group()
@click.version_option(package_name="plait")
def main() -> None:
    """plait: stateful LLM applications as state graphs."""


for command in (chat, demo, threads, history, show, diff, prune, inspect, migrate, serve):
    main.add_command(command)
