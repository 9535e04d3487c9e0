"""LangGraph's resource-ownership example: each user sees and changes only what they made.

Bearer tokens name the users; ``reader`` may read but not create or change anything. The store's
namespaces are each user's own: a namespace under ``("users", name)`` must be the caller's (403
otherwise), any other is moved under the caller's identity.
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

auth = Auth()

USERS = {
    "alice-token": {"identity": "alice", "permissions": ["read", "write"], "org": "acme"},
    "bob-token": {"identity": "bob", "permissions": ["read", "write"], "org": "umbrella"},
    "reader-token": {"identity": "reader", "permissions": ["read"]},
}
_WRITES = {"create", "create_run", "update", "delete", "put"}


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    scheme, _, token = (authorization or "").partition(" ")
    user = USERS.get(token) if scheme.lower() == "bearer" else None
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Invalid or missing bearer token")
    return user  # type: ignore[return-value]  # (a MinimalUserDict with an extra field)


@auth.on
async def owner(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Auth.types.FilterType | bool:
    if ctx.action in _WRITES and "write" not in ctx.permissions:
        return False
    filters = {"owner": ctx.user.identity}
    metadata = value.setdefault("metadata", {})
    if metadata is None:
        value["metadata"] = metadata = {}
    metadata.update(filters)
    return filters


@auth.on.store()
async def own_namespace(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    if ctx.action in _WRITES and "write" not in ctx.permissions:
        raise Auth.exceptions.HTTPException(status_code=403, detail="read-only user")
    namespace = tuple(value.get("namespace") or ())
    if namespace[:1] == ("users",):
        assert namespace[1:2] == (ctx.user.identity,), "not your namespace"
        return
    value["namespace"] = (ctx.user.identity, *namespace)
