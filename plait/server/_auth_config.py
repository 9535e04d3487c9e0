"""The ``auth`` section of ``langgraph.json``, checked as LangGraph's server reads it.

``{"path": "./auth.py:auth", "disable_studio_auth": bool, "openapi": {...}}``: ``path`` names the
``langgraph_sdk.Auth`` object (see :mod:`plait.server._auth`); ``openapi`` holds the security schemes
``/openapi.json`` lists (``securitySchemes`` or ``security_schemes``, ``security``, ``paths``);
``disable_studio_auth`` is accepted either way (plait serve has no Studio login, so the custom auth
handles every request, as LangGraph's server does with it set). ``cache`` and
``allow_langsmith_api_keys`` are refused by name. ``http.enable_custom_route_auth`` authenticates
the config's own ``http.app`` routes too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plait.server._wire import as_dict

__all__ = ["AUTH_KEYS", "OPENAPI_KEYS", "auth_config", "auth_section", "secure_document"]

AUTH_KEYS = frozenset({"path", "disable_studio_auth", "openapi", "allow_langsmith_api_keys", "cache"})
"""The keys of LangGraph's ``auth`` section."""
OPENAPI_KEYS = frozenset({"securitySchemes", "security_schemes", "security", "paths"})
"""The keys of ``auth.openapi``."""


def auth_section(raw: Any, http: dict[str, object]) -> dict[str, object]:
    """The ``auth`` section ``raw`` (``{}`` without one): ``path``, ``openapi`` and ``custom_routes``
    (``http.enable_custom_route_auth`` of the config's ``http`` section).

    Raises:
        ValueError: a key plait serve does not implement, or a value of the wrong kind (the message
            names it).
    """
    custom = http.get("enable_custom_route_auth", False)
    if not isinstance(custom, bool):
        raise ValueError(f"http.enable_custom_route_auth must be true or false, got {custom!r}")
    if raw is None:
        if custom:
            raise ValueError('http.enable_custom_route_auth needs an "auth" section to authenticate with')
        return {}
    if not isinstance(raw, dict):
        raise ValueError('"auth" must be an object like {"path": "./auth.py:auth"}')
    auth = as_dict(raw)
    unknown = sorted(set(auth) - AUTH_KEYS)
    if unknown:
        raise ValueError(
            f"auth.{', auth.'.join(unknown)} not supported by plait serve; it reads path, "
            "disable_studio_auth and openapi"
        )
    if auth.get("cache") is not None:
        raise ValueError(
            "auth.cache is not implemented by plait serve (@auth.authenticate runs for every request): remove it"
        )
    if auth.get("allow_langsmith_api_keys"):
        raise ValueError(
            "auth.allow_langsmith_api_keys is not implemented by plait serve (it has no LangSmith API-key "
            "auth; every request goes through the custom auth): remove it"
        )
    path = auth.get("path")
    if not isinstance(path, str) or ":" not in path:
        raise ValueError(f'auth.path must be "path/to/auth.py:auth" (or "module:auth"), got {path!r}')
    studio = auth.get("disable_studio_auth", False)
    if not isinstance(studio, bool):
        raise ValueError(f"auth.disable_studio_auth must be true or false, got {studio!r}")
    openapi = auth.get("openapi")
    if openapi is not None and (not isinstance(openapi, dict) or set(as_dict(openapi)) - OPENAPI_KEYS):
        raise ValueError(
            f"auth.openapi must be an object with keys of {sorted(OPENAPI_KEYS)}, got {openapi!r:.120}"
        )
    return {"path": path, "openapi": as_dict(openapi), "custom_routes": custom}


def auth_config(path: str | Path) -> dict[str, object]:
    """The ``auth`` section of the config file ``path``, once ``load_config`` accepted the file."""
    data = as_dict(json.loads(Path(path).read_text()))
    return auth_section(data.get("auth"), as_dict(data.get("http")))


def secure_document(openapi: dict[str, object], doc: dict[str, object]) -> None:
    """Put ``auth.openapi``'s security into the OpenAPI document ``doc``, as LangGraph's server does:
    its ``securitySchemes`` (or ``security_schemes``) as the components' schemes, its ``security`` as
    the document's, and each of its ``paths`` entries (``{path: {METHOD: security}}``) on that
    operation when the document has it."""
    schemes = openapi.get("securitySchemes", openapi.get("security_schemes"))
    if schemes is not None:
        components = doc.setdefault("components", {})
        if isinstance(components, dict):
            as_dict(components)["securitySchemes"] = schemes
    if "security" in openapi:
        doc["security"] = openapi["security"]
    paths = as_dict(doc.get("paths"))
    for path, methods in as_dict(openapi.get("paths")).items():
        for method, security in as_dict(methods).items():
            operation = as_dict(paths.get(path)).get(str(method).lower())
            if isinstance(operation, dict):
                as_dict(operation)["security"] = security
