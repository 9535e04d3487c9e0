"""What ``plait serve`` runs: the config file (graphs, env) and the server settings."""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from starlette.applications import Starlette

from plait._alias import install as route_langgraph_to_plait
from plait.graph.state import StateGraph
from plait.pregel import Pregel
from plait.server._auth_config import auth_section
from plait.server._ttl import store_ttl_config, thread_ttl_config
from plait.server._webhook import WebhookConfigError, WebhookPolicy
from plait.server._wire import as_dict, as_list

__all__ = [
    "ConfigError",
    "GraphSpec",
    "LoadedConfig",
    "Settings",
    "apply_env",
    "import_object",
    "load_config",
    "load_embed",
    "load_graph",
    "load_http_app",
]

BUILD_KEYS = frozenset(
    {
        "$schema",
        "api_version",
        "base_image",
        "dependencies",
        "dockerfile_lines",
        "image_distro",
        "keep_pkg_tools",
        "node_version",
        "pip_config_file",
        "pip_installer",
        "python_version",
    }
)
"""Keys of ``langgraph.json`` that describe a container build: they change nothing when serving."""
READ_KEYS = frozenset({"graphs", "env", "webhooks", "http", "checkpointer", "store", "auth"})
HTTP_KEYS = frozenset(
    {"app", "disable_webhooks", "disable_mcp", "disable_a2a", "cors", "enable_custom_route_auth"}
)
DISABLE_KEYS = ("mcp", "a2a")
"""The endpoints ``http.disable_<name>: true`` turns off (``disable_webhooks`` is the webhook policy's)."""
CORS_KEYS = {
    "allow_origins": list,
    "allow_methods": list,
    "allow_headers": list,
    "allow_credentials": bool,
    "allow_origin_regex": str,
    "expose_headers": list,
    "max_age": int,
}
"""``http.cors`` of ``langgraph.json``: Starlette's ``CORSMiddleware`` arguments, and their types."""


class ConfigError(ValueError):
    """The config file (or a graph it names) is unusable; the message says what and where."""


@dataclass(frozen=True, slots=True)
class GraphSpec:
    """One graph of the config: its id, ``path.py:attr`` (or ``module:attr``) and description."""

    graph_id: str
    target: str
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a server process needs; built by ``plait serve`` and passed to each worker.

    Args:
        config_path: The config file (``plait.json`` or ``langgraph.json``).
        graphs: The graphs it names.
        db: A SQLite file path or a ``postgresql://`` DSN.
        auth_token: Bearer token every request must carry (``None``: no auth).
        cors_origins: Origins allowed by CORS (empty: no CORS headers).
        max_body: Largest request body accepted, in bytes.
        lease_ttl: Seconds after which a vanished worker's run is taken over.
        jobs: How many runs one worker process executes at once.
        webhooks: The webhook policy (:meth:`WebhookPolicy.to_json`; empty: the defaults).
        cors: The config's ``http.cors`` (``CORSMiddleware`` arguments; ``cors_origins`` adds origins).
        thread_ttl: The config's ``checkpointer.ttl`` (see :mod:`plait.server._ttl`).
        store_ttl: The config's ``store.ttl``.
        store_index: The config's ``store.index`` (semantic search of the store).
        allowed_hosts: Host headers accepted on a loopback bind besides its own (``--allowed-host``).
        http_app: The config's ``http.app`` (``./webapp.py:app``: a Starlette/FastAPI app served
            beside the API, see :func:`load_http_app`).
        auth: The config's ``auth`` section (custom auth, see :mod:`plait.server._auth`; empty: none).
        disabled: The endpoints the config's ``http.disable_<name>`` turns off (of :data:`DISABLE_KEYS`).
    """

    config_path: str
    graphs: tuple[GraphSpec, ...]
    db: str
    auth_token: str | None = None
    cors_origins: tuple[str, ...] = ()
    max_body: int = 10 * 1024 * 1024
    lease_ttl: float = 30.0
    jobs: int = 10
    env: dict[str, str] = field(default_factory=lambda: {})
    webhooks: dict[str, object] = field(default_factory=lambda: {})
    cors: dict[str, object] = field(default_factory=lambda: {})
    thread_ttl: dict[str, object] = field(default_factory=lambda: {})
    store_ttl: dict[str, object] = field(default_factory=lambda: {})
    store_index: dict[str, object] = field(default_factory=lambda: {})
    allowed_hosts: tuple[str, ...] = ()
    http_app: str | None = None
    disabled: tuple[str, ...] = ()
    auth: dict[str, object] = field(default_factory=lambda: {})

    @property
    def webhook_policy(self) -> WebhookPolicy:
        """Which webhook URLs runs may name (see :mod:`plait.server._webhook`)."""
        return WebhookPolicy.from_json(self.webhooks) if self.webhooks else WebhookPolicy()

    @property
    def is_postgres(self) -> bool:
        """Whether the database is PostgreSQL (multi-worker capable)."""
        return self.db.startswith(("postgres://", "postgresql://"))

    def to_json(self) -> str:
        """The settings as JSON (handed to worker processes through the environment)."""
        data = {
            "config_path": self.config_path,
            "graphs": [[g.graph_id, g.target, g.description] for g in self.graphs],
            "db": self.db,
            "auth_token": self.auth_token,
            "cors_origins": list(self.cors_origins),
            "max_body": self.max_body,
            "lease_ttl": self.lease_ttl,
            "jobs": self.jobs,
            "env": self.env,
            "webhooks": self.webhooks,
            "cors": self.cors,
            "thread_ttl": self.thread_ttl,
            "store_ttl": self.store_ttl,
            "store_index": self.store_index,
            "allowed_hosts": list(self.allowed_hosts),
            "http_app": self.http_app,
            "disabled": list(self.disabled),
            "auth": self.auth,
        }
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> Settings:
        """Read settings written by :meth:`to_json`."""
        data = json.loads(text)
        graphs = tuple(GraphSpec(g[0], g[1], g[2]) for g in data.pop("graphs"))
        data["cors_origins"] = tuple(data["cors_origins"])
        data["allowed_hosts"] = tuple(data.get("allowed_hosts", ()))
        data["disabled"] = tuple(data.get("disabled", ()))
        return cls(graphs=graphs, **data)


def _graph_specs(raw: object, where: str) -> tuple[GraphSpec, ...]:
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(
            f'{where}: "graphs" must be a non-empty object like {{"agent": "./agent.py:graph"}}'
        )
    specs: list[GraphSpec] = []
    for graph_id, value in as_dict(raw).items():
        description = None
        if isinstance(value, dict):
            entry = as_dict(value)
            value, about = entry.get("path"), entry.get("description")
            description = None if about is None else str(about)
        if not isinstance(value, str) or ":" not in value:
            raise ConfigError(f'{where}: graphs.{graph_id} must be "path/to/file.py:variable", got {value!r}')
        specs.append(GraphSpec(graph_id, value, description))
    return tuple(specs)


def _read_env(raw: object, base: Path, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in as_dict(raw).items()}
    if not isinstance(raw, str):
        raise ConfigError(f'{where}: "env" must be an object or the path of a .env file')
    path = base / raw
    if not path.exists():
        raise ConfigError(f'{where}: "env" names {path}, which does not exist')
    env: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.removeprefix("export ").partition("=")
            env[key.strip()] = value.strip().strip("'\"")
    return env


class LoadedConfig(NamedTuple):
    """What a config file says: its graphs, its environment, its webhook policy, its CORS settings and
    the time to live of threads and store items (``checkpointer.ttl``, ``store.ttl``), the
    custom routes' app (``http.app``) and the endpoints turned off (``http.disable_mcp``, ``disable_a2a``)."""

    graphs: tuple[GraphSpec, ...]
    env: dict[str, str]
    webhooks: WebhookPolicy
    cors: dict[str, object]
    thread_ttl: dict[str, object]
    store_ttl: dict[str, object]
    store_index: dict[str, object]
    http_app: str | None = None
    disabled: tuple[str, ...] = ()


def load_config(path: str | Path) -> LoadedConfig:
    """Read a ``plait.json`` / ``langgraph.json`` file: its graphs, environment and webhook policy.

    Keys that describe a container build (``dependencies``, ``python_version`` …) are ignored;
    of ``checkpointer`` only ``ttl`` is read, of ``store`` ``ttl`` and ``index``; ``auth`` is checked
    here (:mod:`plait.server._auth_config`); any other key plait does not implement
    (``checkpointer.serde``, ``auth.cache`` …) is refused.

    Raises:
        ConfigError: the file is missing, not JSON, has no usable ``graphs``, or a key plait
            does not implement.
    """
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"config file {file} does not exist (pass --config plait.json)")
    try:
        data = json.loads(file.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: the config must be a JSON object")
    config = as_dict(data)
    unknown = sorted(set(config) - READ_KEYS - BUILD_KEYS)
    if unknown:
        raise ConfigError(
            f"{file}: {', '.join(repr(k) for k in unknown)} not supported by plait serve (it reads "
            f"{sorted(READ_KEYS)}; build keys such as 'dependencies' are ignored): remove it"
        )
    http = _http(config.get("http"), str(file))
    cors = _cors(http.get("cors"), str(file))
    graphs = _graph_specs(config.get("graphs"), str(file))
    env = _read_env(config.get("env"), file.parent, str(file))
    disabled = http.get("disable_webhooks", False)
    if not isinstance(disabled, bool):
        raise ConfigError(f"{file}: http.disable_webhooks must be true or false, got {disabled!r}")
    try:
        policy = WebhookPolicy.from_config(config.get("webhooks"), env, disabled)
    except WebhookConfigError as exc:
        raise ConfigError(f"{file}: {exc}") from None
    thread_ttl, store_ttl, store_index = _sections(config, str(file))
    try:
        auth_section(config.get("auth"), http)
    except ValueError as exc:
        raise ConfigError(f"{file}: {exc}") from None
    disabled_routes = tuple(name for name in DISABLE_KEYS if http.get(f"disable_{name}"))
    return LoadedConfig(
        graphs, env, policy, cors, thread_ttl, store_ttl, store_index, _app(http), disabled_routes
    )


def _http(raw: object, where: str) -> dict[str, object]:
    """The config's ``http`` section: its keys plait serve reads, ``app`` of the form ``path:name``."""
    raw = raw or {}
    if not isinstance(raw, dict):
        raise ConfigError(f'{where}: "http" must be an object')
    http = as_dict(raw)
    unknown = sorted(set(http) - HTTP_KEYS)
    if unknown:
        raise ConfigError(
            f'{where}: http.{", http.".join(unknown)} not supported by plait serve; of "http" it reads '
            f"{sorted(HTTP_KEYS)} (auth and body limits are options of plait serve: see --help): remove it"
        )
    for name in DISABLE_KEYS:
        flag = http.get(f"disable_{name}", False)
        if not isinstance(flag, bool):
            raise ConfigError(f"{where}: http.disable_{name} must be true or false, got {flag!r}")
    app = http.get("app")
    if app is not None and (not isinstance(app, str) or ":" not in app):
        raise ConfigError(f'{where}: http.app must be "path/to/webapp.py:app" (or "module:app"), got {app!r}')
    return http


def _app(http: dict[str, object]) -> str | None:
    """The config's ``http.app`` (checked by :func:`_http`), or ``None``."""
    app = http.get("app")
    return app if isinstance(app, str) else None


_SECTION_KEYS = {"checkpointer": {"ttl"}, "store": {"ttl", "index"}}


def _sections(
    config: dict[str, object], where: str
) -> tuple[dict[str, object], dict[str, object], dict[str, object]]:
    """``checkpointer.ttl``, ``store.ttl`` and ``store.index`` (what plait serve reads of those sections)."""
    parts: dict[str, dict[str, object]] = {}
    for name, keys in _SECTION_KEYS.items():
        raw: object = config.get(name) or {}
        if not isinstance(raw, dict) or set(as_dict(raw)) - keys:
            raise ConfigError(f'{where}: of "{name}", plait serve reads only {sorted(keys)}')
        parts[name] = as_dict(raw)
    try:
        return (
            thread_ttl_config(parts["checkpointer"].get("ttl"), "checkpointer.ttl"),
            store_ttl_config(parts["store"].get("ttl"), "store.ttl"),
            _index(parts["store"].get("index")),
        )
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _index(raw: object) -> dict[str, object]:
    """``store.index`` (``{"embed", "dims", "fields", "distance_type"}``), checked before any import."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ValueError("store.index must be an object")
    index = as_dict(raw)
    unknown = sorted(set(index) - {"embed", "dims", "fields", "distance_type"})
    if unknown:
        raise ValueError(f"store.index: {unknown} not supported by plait serve")
    if not isinstance(index.get("embed"), str):
        raise ValueError(
            'store.index.embed must name the embeddings: "provider:model" or "./file.py:function"'
        )
    dims = index.get("dims")
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise ValueError(f"store.index.dims must be a positive integer, got {dims!r}")
    if index.get("distance_type", "cosine") not in ("cosine", "l2", "inner_product"):
        raise ValueError("store.index.distance_type must be cosine, l2 or inner_product")
    return dict(index)


def load_embed(target: str, config_path: str) -> Any:
    """``store.index.embed``: the function or ``Embeddings`` a ``./file.py:name`` names (a path: it
    ends in ``.py`` or has a ``/``), imported beside the config; otherwise the ``"provider:model"``
    string itself, for LangChain's ``init_embeddings``."""
    module_ref = target.rpartition(":")[0]
    if not (module_ref.endswith(".py") or "/" in module_ref):
        return target  # "openai:text-embedding-3-small": LangChain's init_embeddings reads it
    base = Path(config_path).resolve().parent
    return _import_target(GraphSpec("store.index.embed", target), base)


def _cors(raw: object, where: str) -> dict[str, object]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: http.cors must be an object")
    cors = as_dict(raw)
    for key, value in cors.items():
        kind = CORS_KEYS.get(key)
        if kind is None:
            raise ConfigError(
                f"{where}: http.cors.{key} is not supported by plait serve; it reads {sorted(CORS_KEYS)}"
            )
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigError(f"{where}: http.cors.{key} must be a {kind.__name__}, got {value!r}")
        if kind is list and not all(isinstance(v, str) for v in as_list(value)):
            raise ConfigError(f"{where}: http.cors.{key} must be a list of strings, got {value!r}")
    return dict(cors)


def _import_target(spec: GraphSpec, base: Path) -> Any:
    module_ref, _, attr = spec.target.rpartition(":")
    if module_ref.endswith(".py") or "/" in module_ref:
        file = (base / module_ref).resolve()
        if not file.is_file():
            raise ConfigError(f"graph {spec.graph_id!r}: {file} does not exist")
        name = f"plait_graph_{spec.graph_id}_{abs(hash(str(file)))}"
        if name in sys.modules:  # checked by `plait serve` before the server starts: imported once
            return _attr(spec, module_ref, sys.modules[name], attr)
        module_spec = importlib.util.spec_from_file_location(name, file)
        if module_spec is None or module_spec.loader is None:
            raise ConfigError(f"graph {spec.graph_id!r}: cannot import {file}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_ref)
    return _attr(spec, module_ref, module, attr)


def _attr(spec: GraphSpec, module_ref: str, module: Any, attr: str) -> Any:
    if not hasattr(module, attr):
        raise ConfigError(f"graph {spec.graph_id!r}: {module_ref} has no variable {attr!r}")
    return getattr(module, attr)


def import_object(what: str, target: str, config_path: str) -> Any:
    """The variable ``target`` names (``./file.py:name`` beside the config, or ``module:name``).

    Raises:
        ConfigError: the file or the variable does not exist (the message starts with ``what``).
    """
    base = Path(config_path).resolve().parent
    if str(base) not in sys.path:
        sys.path.insert(0, str(base))
    try:
        return _import_target(GraphSpec(what, target), base)
    except ConfigError as exc:  # (its message names a graph: name ``what`` instead)
        raise ConfigError(f"{what}: {str(exc).removeprefix(f'graph {what!r}: ')}") from None


def load_http_app(target: str, config_path: str) -> Starlette:
    """The app ``http.app`` names (``./webapp.py:app`` beside the config, or ``module:app``).

    Raises:
        ConfigError: the file or variable does not exist, or is not a Starlette (or FastAPI) app.
    """
    base = Path(config_path).resolve().parent
    if str(base) not in sys.path:
        sys.path.insert(0, str(base))
    try:
        value = _import_target(GraphSpec("http.app", target), base)
    except ConfigError as exc:
        raise ConfigError(f"http.app: {exc}") from None
    if not isinstance(value, Starlette):
        raise ConfigError(
            f"http.app: {target} is {type(value).__name__}, not a Starlette or FastAPI app "
            "(plait serve mounts the routes of such an app beside the API)"
        )
    return value


def load_graph(spec: GraphSpec, config_path: str) -> Pregel[Any, Any, Any, Any]:
    """Import the graph a spec names: a compiled graph, a ``StateGraph``, or a factory returning one.

    Raises:
        ConfigError: the file or variable does not exist, or is not a graph.
    """
    base = Path(config_path).resolve().parent
    if str(base) not in sys.path:
        sys.path.insert(0, str(base))
    # an unmodified LangGraph project (`from langgraph...`, langchain's create_agent) runs on plait; where
    # the real langgraph was imported first (a process that hosts other code too), a graph built on it is
    # refused below with that reason
    with contextlib.suppress(ImportError):
        route_langgraph_to_plait()
    value = _import_target(spec, base)
    if isinstance(value, StateGraph):
        value = value.compile()  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]  # any builder
    elif callable(value) and not isinstance(value, Pregel):
        params = inspect.signature(value).parameters
        value = value({}) if params else value()
    if not isinstance(value, Pregel):
        found: object = value
        kind = type(found)
        if kind.__module__.startswith("langgraph."):
            raise ConfigError(
                f"graph {spec.graph_id!r}: {spec.target} is a graph of the real langgraph package "
                f"({kind.__module__}.{kind.__qualname__}), imported before plait could route langgraph to "
                "plait: start the server with PLAIT_AS_LANGGRAPH=1, or import plait.as_langgraph first"
            )
        raise ConfigError(f"graph {spec.graph_id!r}: {spec.target} is {kind.__name__}, not a compiled graph")
    return value  # pyright: ignore[reportUnknownVariableType]  # any compiled graph


def apply_env(env: dict[str, str]) -> None:
    """Set the config's environment variables that are not set already."""
    for key, value in env.items():
        os.environ.setdefault(key, value)
