"""Run webhooks: a run created with ``webhook=URL`` has its outcome POSTed there when it ends.

The config's ``webhooks`` object (LangGraph's keys) sets the policy: ``url.allowed_domains``
(``host`` or ``*.domain``), ``url.allowed_ports``, ``url.require_https``, ``url.disable_loopback``
(default true: a request may not make the server call itself or its host), ``url.disable_private_ips``,
``url.max_url_length``, and ``headers`` sent with every call (``${VAR}`` taken from the environment).
Link-local addresses (cloud metadata services) are always refused. A URL is checked when the run
is created and again, with a fresh DNS lookup, when it is called.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

import httpx

from plait.server._wire import ApiError, dumps, now_iso

__all__ = ["WebhookPolicy", "deliver", "payload"]

_log = logging.getLogger("plait.server")
_URL_KEYS = frozenset(
    {
        "allowed_domains",
        "allowed_ports",
        "require_https",
        "disable_loopback",
        "disable_private_ips",
        "max_url_length",
    }
)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
ATTEMPTS = 3
"""Calls per webhook: a connection error or a 5xx answer is tried again, after 0.5 s then 1 s."""


class WebhookConfigError(ValueError):
    """The config's ``webhooks`` object is malformed."""


@dataclass(frozen=True, slots=True)
class WebhookPolicy:
    """Which webhook URLs runs may name, and the headers sent with each call."""

    allowed_domains: tuple[str, ...] = ()
    allowed_ports: tuple[int, ...] = ()
    require_https: bool = False
    disable_loopback: bool = True
    disable_private_ips: bool = False
    max_url_length: int = 4096
    headers: tuple[tuple[str, str], ...] = ()
    disabled: bool = False

    @classmethod
    def from_config(cls, raw: Any, env: Mapping[str, str], disabled: bool = False) -> WebhookPolicy:
        """The policy of the config's ``webhooks`` object (``None``: the defaults); ``${VAR}`` in
        headers comes from the process environment, else from the config's ``env``.

        Raises:
            WebhookConfigError: an unknown key or a value of the wrong type.
        """
        data = _object(raw or {}, "webhooks")
        unknown = set(data) - {"url", "headers"}
        if unknown:
            raise WebhookConfigError(
                f"webhooks: unknown key(s) {sorted(unknown)}; plait reads url and headers"
            )
        url = _object(data.get("url") or {}, "webhooks.url")
        unknown = set(url) - _URL_KEYS
        if unknown:
            raise WebhookConfigError(
                f"webhooks.url: unknown key(s) {sorted(unknown)}; plait reads {sorted(_URL_KEYS)}"
            )
        headers = _object(data.get("headers") or {}, "webhooks.headers")
        try:
            return cls(
                allowed_domains=tuple(str(d).strip().lower() for d in _list(url, "allowed_domains")),
                allowed_ports=tuple(int(p) for p in _list(url, "allowed_ports")),
                require_https=_flag(url, "require_https", False),
                disable_loopback=_flag(url, "disable_loopback", True),
                disable_private_ips=_flag(url, "disable_private_ips", False),
                max_url_length=int(url.get("max_url_length", 4096)),
                headers=tuple((str(k), _expand(str(v), env)) for k, v in headers.items()),
                disabled=disabled,
            )
        except (TypeError, ValueError) as exc:
            raise WebhookConfigError(f"webhooks: {exc}") from None

    def to_json(self) -> dict[str, Any]:
        """The policy as settings JSON (:meth:`from_json` reads it back)."""
        return {
            "allowed_domains": list(self.allowed_domains),
            "allowed_ports": list(self.allowed_ports),
            "require_https": self.require_https,
            "disable_loopback": self.disable_loopback,
            "disable_private_ips": self.disable_private_ips,
            "max_url_length": self.max_url_length,
            "headers": [list(h) for h in self.headers],
            "disabled": self.disabled,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WebhookPolicy:
        """Read :meth:`to_json`'s output."""
        return cls(
            allowed_domains=tuple(str(d) for d in data["allowed_domains"]),
            allowed_ports=tuple(int(p) for p in data["allowed_ports"]),
            require_https=bool(data["require_https"]),
            disable_loopback=bool(data["disable_loopback"]),
            disable_private_ips=bool(data["disable_private_ips"]),
            max_url_length=int(data["max_url_length"]),
            headers=tuple((str(k), str(v)) for k, v in data["headers"]),
            disabled=bool(data["disabled"]),
        )

    def checked(self, url: Any) -> str:
        """``url`` if a run may name it (its form only: :meth:`reachable` looks up its host).

        Raises:
            ApiError: 422, saying what is wrong with it.
        """
        if self.disabled:
            raise ApiError(422, "webhooks are disabled on this server (http.disable_webhooks)")
        if not isinstance(url, str) or not url:
            raise ApiError(422, f"webhook must be a URL, got {url!r}")
        if len(url) > self.max_url_length:
            raise ApiError(422, f"webhook URL is longer than {self.max_url_length} characters")
        parts = urlsplit(url)
        schemes = ("https",) if self.require_https else ("http", "https")
        if parts.scheme not in schemes or not parts.hostname:
            raise ApiError(422, f"webhook must be an absolute {' or '.join(schemes)} URL, got {url!r}")
        host = parts.hostname.lower()
        if self.allowed_domains and not any(
            host == d or (d.startswith("*.") and host.endswith(d[1:])) for d in self.allowed_domains
        ):
            raise ApiError(422, f"webhook host {host!r} is not in webhooks.url.allowed_domains")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise ApiError(422, f"webhook URL has a bad port: {url!r}") from None
        if self.allowed_ports and port not in self.allowed_ports:
            raise ApiError(422, f"webhook port {port} is not in webhooks.url.allowed_ports")
        if host == "localhost" or host.endswith(".localhost"):
            self._address_allowed(ipaddress.ip_address("127.0.0.1"), host)
        try:
            self._address_allowed(ipaddress.ip_address(host), host)
        except ValueError:
            pass  # a name: looked up by reachable()
        return url

    async def reachable(self, url: str) -> None:
        """Look up ``url``'s host and refuse addresses the policy forbids.

        Raises:
            ApiError: 422, the host is unknown or resolves to a forbidden address.
        """
        host = urlsplit(url).hostname or ""
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ApiError(422, f"webhook host {host!r} does not resolve: {exc}") from None
        for info in infos:
            self._address_allowed(ipaddress.ip_address(info[4][0]), host)

    def _address_allowed(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address, host: str) -> None:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
        if address.is_link_local or address.is_unspecified or address.is_multicast:
            raise ApiError(422, f"webhook host {host!r} is a link-local or reserved address ({address})")
        if address.is_loopback and self.disable_loopback:
            raise ApiError(
                422,
                f"webhook host {host!r} is this machine ({address}); allow it with "
                '"webhooks": {"url": {"disable_loopback": false}} in the config',
            )
        if address.is_private and not address.is_loopback and self.disable_private_ips:
            raise ApiError(422, f"webhook host {host!r} is a private address ({address})")


def payload(run: dict[str, Any], started: str, values: Any, error: Any) -> dict[str, Any]:
    """What a webhook receives: the run as the API shows it, when it ran, its last values, its error."""
    out = {**run, "run_started_at": started, "run_ended_at": run.get("updated_at"), "values": values}
    if error is not None:
        out["error"] = error
    return out


async def deliver(policy: WebhookPolicy, url: str, body: dict[str, Any]) -> bool:
    """POST ``body`` to ``url`` (checked again first); whether it was taken (a 2xx answer).

    Tried :data:`ATTEMPTS` times on a connection error or a 5xx answer; a failure is logged.
    """
    try:
        policy.checked(url)
        await policy.reachable(url)
    except ApiError as exc:
        _log.warning("webhook %s of run %s not called: %s", url, body.get("run_id"), exc.detail)
        return False
    headers = {"content-type": "application/json", **dict(policy.headers)}
    problem = "not called"
    async with httpx.AsyncClient(timeout=10.0, follow_redirects=False) as client:
        for attempt in range(ATTEMPTS):
            body["webhook_sent_at"] = now_iso()
            try:
                answer = await client.post(url, content=dumps(body), headers=headers)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if answer.is_success:
                    return True
                problem = f"HTTP {answer.status_code}"
                if answer.status_code < 500:
                    break
            if attempt < ATTEMPTS - 1:
                await asyncio.sleep(0.5 * 2**attempt)
    _log.warning("webhook %s of run %s failed: %s", url, body.get("run_id"), problem)
    return False


def _object(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise WebhookConfigError(f"{where} must be an object, got {raw!r}")
    return cast("dict[str, Any]", raw)


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value: Any = data.get(key) or []
    if not isinstance(value, list):
        raise TypeError(f"url.{key} must be a list, got {value!r}")
    items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]  # isinstance() leaves list[Unknown]
    return items


def _flag(data: dict[str, Any], key: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise TypeError(f"url.{key} must be true or false, got {value!r}")
    return value


def _expand(text: str, env: Mapping[str, str]) -> str:
    def var(match: re.Match[str]) -> str:
        name = match.group(1)
        value = os.environ.get(name, env.get(name))
        if value is None:
            raise ValueError(f"headers use ${{{name}}}, which is set neither in the environment nor in env")
        return value

    return _VAR.sub(var, text)
