"""The user of a request that ``/mcp`` or ``/a2a`` makes into the server's own app.

Such an inner request carries the outer request's headers; were they authenticated again, the
``@auth.authenticate`` handler would run once more for each inner call (a one-time token or a
rate-limited identity provider would then fail). Instead the inner client sends :data:`HEADER`: this
process's random secret and a reference to the user the outer request authenticated, lent for the
outer request's lifetime (:func:`lend`). :func:`borrowed` gives that user back to the auth
middleware; a header without the secret (from outside the process) is ignored.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

__all__ = ["HEADER", "borrowed", "lend"]

HEADER = "x-plait-inner-user"
"""The inner request's header: ``<secret>.<reference>``."""
_SECRET = secrets.token_urlsafe(32)
_LENT: dict[str, tuple[Any, Any]] = {}


@contextmanager
def lend(user: Any, credentials: Any) -> Generator[str]:
    """The :data:`HEADER` value naming ``user`` (and its credentials) while the block runs."""
    reference = secrets.token_urlsafe(16)
    _LENT[reference] = (user, credentials)
    try:
        yield f"{_SECRET}.{reference}"
    finally:
        _LENT.pop(reference, None)


def borrowed(headers: list[tuple[bytes, bytes]]) -> tuple[Any, Any] | None:
    """The user and credentials an inner request's :data:`HEADER` names (``None``: it has none, or
    it is not this process's)."""
    wanted = HEADER.encode()
    for key, value in headers:
        if key.lower() != wanted:
            continue
        secret, _, reference = value.decode("latin-1").partition(".")
        if hmac.compare_digest(secret.encode(), _SECRET.encode()):
            return _LENT.get(reference)
        return None
    return None
