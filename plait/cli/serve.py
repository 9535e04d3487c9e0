"""``plait serve``: run the agent server for the graphs of a config file."""

from __future__ import annotations

from pathlib import Path

import click

try:
    from plait.server import ConfigError, Settings
    from plait.server._auth import load_auth
    from plait.server._auth_config import auth_config
    from plait.server._config import load_config, load_graph, load_http_app
    from plait.server._guard import is_loopback
    from plait.server._serve import serve as run_server
    from plait.server._state import default_db
except ImportError as _exc:  # the 'serve' extra is missing: `plait serve` says so, other commands work
    _missing: ImportError | None = _exc
else:
    _missing = None

__all__ = ["serve"]


def _config_path(given: str | None) -> str:
    if given:
        return given
    for name in ("plait.json", "langgraph.json"):
        if Path(name).is_file():
            return name
    raise click.BadParameter(
        "no plait.json or langgraph.json here; pass --config PATH", param_hint="--config"
    )


@click.command()
@click.option(
    "--config",
    "config",
    default=None,
    help="Config file naming the graphs (default: plait.json, else langgraph.json).",
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Interface to bind (0.0.0.0 exposes the server)."
)
@click.option("--port", default=2024, show_default=True, type=int, help="Port to listen on.")
@click.option(
    "--db",
    default=None,
    help="SQLite file or postgresql:// DSN (default: .plait/plait.sqlite beside the config).",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="Worker processes (more than 1 needs PostgreSQL).",
)
@click.option(
    "--auth-token",
    envvar="PLAIT_AUTH_TOKEN",
    default=None,
    help="Require 'Authorization: Bearer TOKEN' (env PLAIT_AUTH_TOKEN).",
)
@click.option(
    "--insecure-no-auth",
    is_flag=True,
    help="Serve beyond loopback without --auth-token (anyone reaching the port controls every thread).",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    help="Also accept this Host header on a loopback bind, e.g. a reverse proxy's name (repeatable).",
)
@click.option(
    "--cors-origin", "cors", multiple=True, help="Allow this browser origin (repeatable; '*' for any)."
)
@click.option(
    "--max-body",
    default=10 * 1024 * 1024,
    show_default=True,
    type=click.IntRange(1),
    help="Largest request body, in bytes.",
)
@click.option(
    "--lease-ttl",
    default=30.0,
    show_default=True,
    type=click.FloatRange(0.5),
    help="Seconds before a vanished worker's runs are taken over.",
)
@click.option(
    "--jobs", default=10, show_default=True, type=click.IntRange(1), help="Runs one worker executes at once."
)
def serve(  # noqa: PLR0913 - one parameter per option
    config: str | None,
    host: str,
    port: int,
    db: str | None,
    workers: int,
    auth_token: str | None,
    insecure_no_auth: bool,
    allowed_hosts: tuple[str, ...],
    cors: tuple[str, ...],
    max_body: int,
    lease_ttl: float,
    jobs: int,
) -> None:
    """Serve the config's graphs over the LangGraph SDK's HTTP API (and a web inspector at /ui)."""
    if _missing is not None:
        raise click.ClickException(
            f"plait serve needs the 'serve' extra ({_missing}): pip install 'plait[serve]'"
        )
    path = _config_path(config)
    try:
        loaded = load_config(path)  # pyright: ignore[reportPossiblyUnboundVariable]  # _missing is None here
        graphs, env, webhooks, cors_config, thread_ttl, store_ttl, store_index, http_app, disabled = loaded
    except ConfigError as exc:  # pyright: ignore[reportPossiblyUnboundVariable, reportUnknownVariableType]  # as above
        raise click.ClickException(str(exc)) from None  # pyright: ignore[reportUnknownArgumentType]  # as above
    auth = auth_config(path)  # pyright: ignore[reportPossiblyUnboundVariable]  # as above
    if auth and auth_token:
        raise click.BadParameter(
            'the config has custom auth ("auth"), which reads the Authorization header: drop --auth-token '
            "(or PLAIT_AUTH_TOKEN), or the config's auth section",
            param_hint="--auth-token",
        )
    _check_exposure(host, port, auth_token or ("custom auth" if auth else None), insecure_no_auth)
    target = db or default_db(path)  # pyright: ignore[reportPossiblyUnboundVariable]  # as above
    settings = Settings(  # pyright: ignore[reportPossiblyUnboundVariable]  # as above
        config_path=str(Path(path).resolve()),
        graphs=graphs,
        db=target,
        auth_token=auth_token or None,
        cors_origins=cors,
        max_body=max_body,
        lease_ttl=lease_ttl,
        jobs=jobs,
        env=env,
        webhooks=webhooks.to_json(),
        cors=cors_config,
        thread_ttl=thread_ttl,
        store_ttl=store_ttl,
        store_index=store_index,
        allowed_hosts=allowed_hosts,
        http_app=http_app,
        disabled=disabled,
        auth=auth,
    )
    if workers > 1 and not settings.is_postgres:
        raise click.BadParameter(
            "more than one worker needs a PostgreSQL --db (postgresql://...)", param_hint="--workers"
        )
    try:  # a graph that does not load is one line here, not a traceback from the server's start-up
        for spec in graphs:
            load_graph(spec, settings.config_path)  # pyright: ignore[reportPossiblyUnboundVariable]  # as above
        if http_app:
            load_http_app(http_app, settings.config_path)  # pyright: ignore[reportPossiblyUnboundVariable]  # as above
        if auth:
            load_auth(auth, settings.config_path)  # pyright: ignore[reportPossiblyUnboundVariable]  # as above
    except ConfigError as exc:  # pyright: ignore[reportPossiblyUnboundVariable, reportUnknownVariableType]  # as above
        raise click.ClickException(str(exc)) from None  # pyright: ignore[reportUnknownArgumentType]  # as above
    click.echo(
        f"plait serve: {len(graphs)} graph(s) on http://{host}:{port} (db: {_safe(target)}, workers: {workers})"
    )
    run_server(settings, host, port, workers)  # pyright: ignore[reportPossiblyUnboundVariable]  # as above


def _check_exposure(host: str, port: int, token: str | None, insecure: bool) -> None:
    """Refuse a bind beyond loopback with no auth (``token``: the bearer token, or a config's custom
    auth), unless ``--insecure-no-auth`` says so (loudly)."""
    if token or is_loopback(host):  # pyright: ignore[reportPossiblyUnboundVariable]  # as in serve()
        return
    if not insecure:
        raise click.ClickException(
            f"--host {host or '(all)'} exposes the server beyond this machine with no auth: set "
            '--auth-token TOKEN (or PLAIT_AUTH_TOKEN) or the config\'s "auth" (custom auth), or pass '
            "--insecure-no-auth to serve it open anyway"
        )
    click.secho(
        f"WARNING: --insecure-no-auth: serving on {host or '(all)'}:{port} with NO auth; anyone who can "
        "reach this port can read, change and delete every thread, run, assistant and store item",
        fg="red",
        bold=True,
        err=True,
    )


def _safe(target: str) -> str:
    """The database target without a password."""
    if "@" in target and "://" in target:
        scheme, rest = target.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':')[0]}@{host}"
    return target
