"""Run webhooks: a run created with ``webhook=URL`` has its outcome POSTed there when it ends.

The config's ``webhooks`` object (LangGraph's keys) sets the policy: ``url.allowed_domains``
(``host`` or ``*.domain``), ``url.allowed_ports``, ``url.require_https``, ``url.disable_loopback``
(default true: a request may not make the server call this machine, at any address of any of its
interfaces), ``url.disable_private_ips`` (default true here, false in LangGraph: private networks
are refused unless the config sets it false), ``url.max_url_length``, and ``headers`` sent with every call (``${{ env.VAR }}`` or ``${VAR}``,
from the environment; ``env_prefix`` limits which variables). Link-local, reserved and cloud
metadata addresses are always refused. A URL is checked when the run is created; each call looks
its host up again, checks the address and connects to that address (no second lookup).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import re
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from plait.server._wire import ApiError, as_dict, as_int, as_list, dumps, now_iso

__all__ = ["Unresolved", "WebhookPolicy", "deliver", "local_addresses", "payload"]

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
_VAR = re.compile(r"\$\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("100.100.100.200", "fd00:ec2::254", "169.254.169.254", "168.63.129.16")
)
"""Cloud metadata services (Alibaba, AWS over IPv6, every cloud's link-local one, Azure's wire server)."""
TIMEOUT = 15.0
"""Seconds one call may take in all (connecting, sending, the answer's status)."""
ATTEMPTS = 3
"""Calls per webhook: a connection error or a 5xx answer is tried again, after 0.5 s then 1 s."""


class WebhookConfigError(ValueError):
    """The config's ``webhooks`` object is malformed."""


class Unresolved(ApiError):
    """A webhook's host name did not resolve (a delivery tries again: DNS may be down a moment)."""


@dataclass(frozen=True, slots=True)
class WebhookPolicy:
    """Which webhook URLs runs may name, and the headers sent with each call."""

    allowed_domains: tuple[str, ...] = ()
    allowed_ports: tuple[int, ...] = ()
    require_https: bool = False
    disable_loopback: bool = True
    disable_private_ips: bool = True
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
        unknown = set(data) - {"url", "headers", "env_prefix"}
        if unknown:
            raise WebhookConfigError(
                f"webhooks: unknown key(s) {sorted(unknown)}; plait reads url, headers and env_prefix"
            )
        url = _object(data.get("url") or {}, "webhooks.url")
        unknown = set(url) - _URL_KEYS
        if unknown:
            raise WebhookConfigError(
                f"webhooks.url: unknown key(s) {sorted(unknown)}; plait reads {sorted(_URL_KEYS)}"
            )
        headers = _object(data.get("headers") or {}, "webhooks.headers")
        prefix = data.get("env_prefix") or ""
        if headers and not url.get("allowed_domains"):
            raise WebhookConfigError(
                "webhooks.headers needs webhooks.url.allowed_domains: without it any API client "
                "could have the headers (tokens, say) sent to a host of its own"
            )
        try:
            return cls(
                allowed_domains=tuple(str(d).strip().lower() for d in _list(url, "allowed_domains")),
                allowed_ports=tuple(as_int(p) for p in _list(url, "allowed_ports")),
                require_https=_flag(url, "require_https", False),
                disable_loopback=_flag(url, "disable_loopback", True),
                disable_private_ips=_flag(url, "disable_private_ips", True),
                max_url_length=_count(url, "max_url_length", 4096),
                headers=tuple(
                    (str(k).lower(), _expand(str(v), env, str(prefix))) for k, v in headers.items()
                ),
                disabled=disabled,
            )
        except (TypeError, ValueError) as exc:
            raise WebhookConfigError(f"webhooks: {exc}") from None

    def to_json(self) -> dict[str, object]:
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
    def from_json(cls, data: dict[str, object]) -> WebhookPolicy:
        """Read :meth:`to_json`'s output."""
        return cls(
            allowed_domains=tuple(str(d) for d in as_list(data["allowed_domains"])),
            allowed_ports=tuple(as_int(p) for p in as_list(data["allowed_ports"])),
            require_https=bool(data["require_https"]),
            disable_loopback=bool(data["disable_loopback"]),
            disable_private_ips=bool(data["disable_private_ips"]),
            max_url_length=as_int(data["max_url_length"]),
            headers=tuple((str(k), str(v)) for k, v in map(as_list, as_list(data["headers"]))),
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
        try:
            parts = urlsplit(url)
            httpx.URL(url)
        except (ValueError, httpx.InvalidURL):
            raise ApiError(422, f"webhook is not a valid URL: {url!r}") from None
        schemes = ("https",) if self.require_https else ("http", "https")
        if parts.scheme not in schemes or not parts.hostname:
            raise ApiError(
                422,
                f"webhook must be an absolute {' or '.join(schemes)} URL (no path on this server), got {url!r}",
            )
        host = parts.hostname.lower().rstrip(".")
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

    async def reachable(self, url: str) -> list[str]:
        """Look up ``url``'s host; the addresses to connect to, when the policy allows every one found.

        Raises:
            Unresolved: 422, the host is unknown (now, at least).
            ApiError: 422, the host resolves to a forbidden address.
        """
        host = (urlsplit(url).hostname or "").rstrip(".")
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError) as exc:
            raise Unresolved(422, f"webhook host {host!r} does not resolve: {exc}") from None
        addresses = [ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in infos]
        for address in addresses:
            self._address_allowed(address, host)
        if not addresses:
            raise Unresolved(422, f"webhook host {host!r} does not resolve")
        return list(dict.fromkeys(str(a) for a in addresses))

    def _address_allowed(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address, host: str) -> None:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
        if address.is_loopback or address in local_addresses():
            if self.disable_loopback:
                raise ApiError(
                    422,
                    f"webhook host {host!r} is this machine ({address}); allow it with "
                    '"webhooks": {"url": {"disable_loopback": false}} in the config',
                )
            return
        if (
            address in _METADATA
            or address.is_link_local
            or address.is_unspecified
            or address.is_multicast
            or address.is_reserved
            or (
                isinstance(address, ipaddress.IPv4Address)
                and address == ipaddress.IPv4Address("255.255.255.255")
            )
        ):
            raise ApiError(
                422, f"webhook host {host!r} is a link-local, reserved or metadata address ({address})"
            )
        if not address.is_global and self.disable_private_ips:  # private networks, 100.64/10 …
            raise ApiError(
                422,
                f"webhook host {host!r} is a private address ({address}); allow private networks with "
                '"webhooks": {"url": {"disable_private_ips": false}} in the config',
            )


_Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_local: tuple[float, frozenset[_Address]] = (float("-inf"), frozenset())
LOCAL_REFRESH = 30.0
"""Seconds this machine's addresses are kept before they are read again (interfaces come and go)."""


def local_addresses() -> frozenset[_Address]:
    """Every address of this machine, on all its interfaces (read again after :data:`LOCAL_REFRESH`).

    Linux lists them in ``/proc/net/fib_trie`` (IPv4 "host LOCAL" routes) and ``/proc/net/if_inet6``;
    elsewhere, and besides, what the host name resolves to and the source address of the default route.
    """
    global _local
    if time.monotonic() - _local[0] < LOCAL_REFRESH:
        return _local[1]
    found: set[_Address] = set()
    found.update(_fib_trie_local(), _if_inet6(), _by_host_name(), _default_source())
    _local = (time.monotonic(), frozenset(found))
    return _local[1]


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as file:
            return file.read()
    except OSError:
        return ""


def _fib_trie_local() -> set[_Address]:
    """The IPv4 addresses of ``/proc/net/fib_trie`` marked ``/32 host LOCAL`` (this machine's own)."""
    found: set[_Address] = set()
    last = ""
    for line in _read("/proc/net/fib_trie").splitlines():
        text = line.strip(" |+-")
        if "/32 host LOCAL" in line and last:
            found.add(ipaddress.ip_address(last))
        elif text and text[0].isdigit() and " " not in text and "/" not in text:
            last = text
    return found


def _if_inet6() -> set[_Address]:
    """The IPv6 addresses of ``/proc/net/if_inet6`` (32 hex digits first on each line)."""
    found: set[_Address] = set()
    for line in _read("/proc/net/if_inet6").splitlines():
        digits = line.split()[0] if line.split() else ""
        if len(digits) == 32:
            found.add(ipaddress.IPv6Address(int(digits, 16)))
    return found


def _by_host_name() -> set[_Address]:
    found: set[_Address] = set()
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return found
    for info in infos:
        found.add(ipaddress.ip_address(str(info[4][0]).partition("%")[0]))
    return found


def _default_source() -> set[_Address]:
    """The address this machine sends from by default (a UDP socket's connect sends nothing)."""
    found: set[_Address] = set()
    for family, target in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.connect((target, 9))
                found.add(ipaddress.ip_address(str(probe.getsockname()[0]).partition("%")[0]))
        except OSError:
            continue
    return found


def payload(run: Mapping[str, object], started: str, values: object, error: object) -> dict[str, object]:
    """What a webhook receives: the run as the API shows it, when it ran, its last values, its error."""
    out: dict[str, object] = {
        **run,
        "run_started_at": started,
        "run_ended_at": run.get("updated_at"),
        "values": values,
    }
    if error is not None:
        out["error"] = error
    return out


async def deliver(policy: WebhookPolicy, url: str, body: dict[str, object]) -> bool:
    """POST ``body`` to ``url``; whether it was taken (a 2xx answer). Never raises.

    Each attempt checks the URL, looks its host up and connects to the address it checked
    (TLS still verifies the host name). Tried :data:`ATTEMPTS` times on a connection error or a
    5xx answer; a failure is logged, without the URL's query or credentials.
    """
    parts = urlsplit(url)
    shown = f"{parts.scheme}://{parts.hostname}{parts.path}"
    problem = "not called"
    try:
        async with httpx.AsyncClient(follow_redirects=False, trust_env=False) as client:
            for attempt in range(ATTEMPTS):
                try:
                    status = await asyncio.wait_for(_post(client, policy, url, body), TIMEOUT)
                except Unresolved as exc:
                    problem = exc.detail
                except ApiError as exc:
                    _log.warning("webhook %s of run %s not called: %s", shown, body.get("run_id"), exc.detail)
                    return False
                except (httpx.HTTPError, OSError, asyncio.TimeoutError) as exc:
                    problem = f"{type(exc).__name__}: {exc}"
                else:
                    if 200 <= status < 300:
                        return True
                    problem = f"HTTP {status}"
                    if status < 500:
                        break
                if attempt < ATTEMPTS - 1:
                    await asyncio.sleep(0.5 * 2**attempt)
    except Exception as exc:  # noqa: BLE001 - a webhook never affects the server
        problem = f"{type(exc).__name__}: {exc}"
    _log.warning("webhook %s of run %s failed: %s", shown, body.get("run_id"), problem)
    return False


async def _post(client: httpx.AsyncClient, policy: WebhookPolicy, url: str, body: dict[str, object]) -> int:
    """One call, to the addresses checked in turn (the next when one refuses the connection); the
    answer's status (its body is not read). Credentials in the URL go as Basic auth."""
    policy.checked(url)
    addresses = await policy.reachable(url)
    given = httpx.URL(url)  # the host IDNA-encoded, the default port dropped, userinfo apart
    auth = (given.username, given.password or "") if given.username else None  # (httpx unquotes them)
    body["webhook_sent_at"] = now_iso()
    headers = {
        "content-type": "application/json",
        **dict(policy.headers),
        "host": given.netloc.decode("ascii"),
    }
    content = dumps(body)
    for n, address in enumerate(addresses):
        target = given.copy_with(host=address, username=None, password=None)
        request = client.build_request(
            "POST",
            target,
            content=content,
            headers=headers,
            extensions={"sni_hostname": given.raw_host.decode("ascii")},
        )
        if auth is not None:
            request = next(httpx.BasicAuth(*auth).auth_flow(request))
        try:
            answer = await client.send(request, stream=True)
        except httpx.ConnectError:
            if n == len(addresses) - 1:
                raise
            continue
        await answer.aclose()
        return answer.status_code
    raise AssertionError("unreachable: reachable() returns at least one address")


def _object(raw: Any, where: str) -> dict[str, object]:
    if not isinstance(raw, dict):
        raise WebhookConfigError(f"{where} must be an object, got {raw!r}")
    return as_dict(raw)


def _list(data: dict[str, object], key: str) -> list[object]:
    value: Any = data.get(key) or []
    if not isinstance(value, list):
        raise TypeError(f"url.{key} must be a list, got {value!r}")
    items: list[object] = value  # pyright: ignore[reportUnknownVariableType]  # isinstance() leaves list[Unknown]
    return items


def _flag(data: dict[str, object], key: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise TypeError(f"url.{key} must be true or false, got {value!r}")
    return value


def _count(data: dict[str, object], key: str, default: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TypeError(f"url.{key} must be a positive integer, got {value!r}")
    return value


def _expand(text: str, env: Mapping[str, str], prefix: str) -> str:
    def var(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if not name.startswith(prefix):
            raise ValueError(f"headers use {name}, which does not start with env_prefix {prefix!r}")
        value = os.environ.get(name, env.get(name))
        if value is None:
            raise ValueError(f"headers use {name}, which is set neither in the environment nor in env")
        return value

    return _VAR.sub(var, text)
