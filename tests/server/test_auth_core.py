"""The auth core: an ``Auth`` object's handlers chosen and run as LangGraph's server runs them, and
their filters applied alike in Python, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import pathlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _pg import private_schema
from langgraph_sdk import Auth
from starlette.exceptions import HTTPException

from plait.server._auth import AuthUser, Identity, LoadedAuth, authorize_as, load_auth, read_auth
from plait.server._auth_filter import check_filter, permits
from plait.server._config import ConfigError, load_config
from plait.server._data.filters import filter_sql, thread_filter_sql
from plait.server._db import Database, open_database
from plait.server._threads import create_thread
from plait.server._wire import ApiError

METADATA: list[dict[str, Any]] = [
    {
        "owner": "alice",
        "n": 1,
        "tags": ["a", "b"],
        "team": {"x": 1},
        "members": [{"id": 1, "role": "a"}, [1, 2]],
    },
    {"owner": "bob", "n": 1.0, "tags": ["b"], "flag": True},
    {"owner": "alice", "n": 2, "tags": "a", "flag": 1},
    {"owner": None, "tags": [["a"], 3]},
    {},
]
FILTERS: list[dict[str, Any]] = [
    {"owner": "alice"},
    {"owner": {"$eq": "bob"}},
    {"owner": None},
    {"n": 1},
    {"flag": True},
    {"flag": 1},
    {"team": {"$eq": {"x": 1}}},
    {"tags": {"$contains": "a"}},
    {"tags": {"$contains": ["a", "b"]}},
    {"tags": {"$contains": []}},
    {"tags": {"$contains": [["a"]]}},
    {"owner": "alice", "tags": {"$contains": "b"}},
    {"$or": [{"owner": "alice"}, {"owner": "bob"}]},
    {"$or": [{"owner": "bob"}, {"n": 2}], "tags": {"$contains": "b"}},
    {"$and": [{"owner": "alice"}, {"$or": [{"n": 2}, {"flag": True}]}]},
    {"$or": [{}, {"owner": "bob"}]},  # (an empty filter holds for all)
    {"members": {"$contains": {"id": 1, "role": "a"}}},
    {"members": {"$contains": {"id": 1}}},  # (an item is held as is, not a part of one)
    {"members": {"$contains": [[1]]}},
    {"missing": "x"},
]


def test_filters_match_metadata_as_langgraph_defines_them() -> None:
    alice, bob, alice2, nobody, empty = METADATA
    assert [permits({"owner": "alice"}, m) for m in METADATA] == [True, False, True, False, False]
    assert permits({"n": 1}, bob) and permits({"n": 1}, alice)  # numbers by value
    assert permits({"flag": True}, bob) and not permits({"flag": True}, alice2)  # true is not 1
    assert permits({"tags": {"$contains": "a"}}, alice) and not permits({"tags": {"$contains": "a"}}, alice2)
    assert not permits({"tags": {"$contains": ["a", "c"]}}, alice)
    assert permits({"$or": [{"owner": "bob"}, {"n": 2}]}, alice2) and not permits(
        {"$or": [{"owner": "bob"}, {"n": 2}]}, alice
    )
    assert permits(None, empty) and permits({}, nobody)
    assert not permits({"owner": "alice"}, None)


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"$or": [{"a": 1}]}, "at least 2"),
        ({"$and": {"a": 1}}, "at least 2"),
        ({"a": {"$in": [1]}}, "operators"),
        ({"a": {}}, "operators"),
        ({"$or": [{"$or": [{"$or": [{"a": 1}, {"b": 1}]}, {"c": 1}]}, {"d": 1}]}, "nest"),
        (["owner"], "a filter is a dict"),
    ],
)
def test_a_filter_langgraph_refuses_is_a_500_naming_the_mistake(bad: Any, says: str) -> None:
    with pytest.raises(ApiError) as caught:
        check_filter(bad)
    assert (
        caught.value.status == 500 and says in caught.value.detail and "auth handler" in caught.value.detail
    )


@pytest.fixture(params=["sqlite", "postgres"])
async def db(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[Database]:
    if request.param == "sqlite":
        found = await open_database(str(tmp_path / "server.sqlite"))
        yield found
        await found.close()
        return
    with private_schema("plait_auth") as dsn:
        found = await open_database(dsn)
        yield found
        await found.close()


async def test_sql_filters_select_what_the_python_predicate_selects(db: Database) -> None:
    ids = [str(uuid.uuid4()) for _ in METADATA]
    for thread_id, metadata in zip(ids, METADATA, strict=True):
        await create_thread(db, thread_id, metadata)
    meta = "((doc::jsonb) -> 'metadata')" if db.dialect == "postgres" else "json_extract(doc, '$.metadata')"
    for wanted in FILTERS:
        expected = {i for i, m in zip(ids, METADATA, strict=True) if permits(check_filter(wanted), m)}
        for sql, params in (thread_filter_sql(db.dialect, wanted), filter_sql(db.dialect, wanted, meta)):
            rows = await db.fetch(f"SELECT thread_id FROM plait_server_threads WHERE {sql}", params)
            assert {r["thread_id"] for r in rows} == expected, (db.dialect, wanted, sql)


def _auth(*register: str) -> Auth:
    auth = Auth()

    @auth.authenticate
    async def authenticate(authorization: str | None) -> str:
        return "alice"

    for key in register:
        handler = _handler(key)
        if key == "global":
            auth.on(handler)
        elif key == "store":
            auth.on.store(handler)
        else:
            resource, action = key.split(".")
            auth.on(resources=resource, actions=action)(handler)
    return auth


def _handler(name: str) -> Any:
    async def handler(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Any:
        value["seen"] = name
        return {"by": name}

    return handler


def _loaded(auth: Auth) -> LoadedAuth:
    return read_auth(auth, "test")


WHO = Identity(AuthUser({"identity": "alice", "org": "acme"}, ["read"]), ["read"])


async def test_the_most_specific_handler_answers() -> None:
    loaded = _loaded(_auth("threads.create", "threads.*", "*.read", "global"))
    cases = {
        ("threads", "create"): "threads.create",
        ("threads", "delete"): "threads.*",
        ("assistants", "read"): "*.read",
        ("crons", "delete"): "global",
        ("store", "put"): "global",
    }
    for (resource, action), name in cases.items():
        value: dict[str, Any] = {}
        assert await authorize_as(loaded, WHO, resource, action, value) == {"by": name}
        assert value["seen"] == name  # the handler's changes to the value are the caller's to read
    none = _loaded(_auth("threads.create"))
    assert await authorize_as(none, WHO, "threads", "read", {}) is None  # no handler: allowed
    assert none.uncovered() and "threads.read" in none.uncovered()
    store = _loaded(_auth("store"))
    assert await authorize_as(store, WHO, "store", "get", {}) == {"by": "store"}
    assert await authorize_as(store, WHO, "threads", "get", {}) is None


@pytest.mark.parametrize(
    ("result", "status"),
    [(False, 403), ("assert", 403), ("http", 418), (None, None), (True, None), ({}, None), (42, 500)],
)
async def test_handler_results_allow_refuse_or_filter(result: Any, status: int | None) -> None:
    auth = Auth()

    @auth.authenticate
    async def authenticate() -> str:
        return "alice"

    @auth.on
    async def handler(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Any:
        assert ctx.user.identity == "alice" and ctx.user["org"] == "acme" and ctx.user.org == "acme"
        assert ctx.permissions == ["read"] and (ctx.resource, ctx.action) == ("threads", "read")
        if result == "assert":
            raise AssertionError("not yours")  # (what an `assert` in a handler raises)
        if result == "http":
            raise Auth.exceptions.HTTPException(status_code=418, detail="teapot")
        return result

    loaded = _loaded(auth)
    if status is None:
        assert await authorize_as(loaded, WHO, "threads", "read", {}) is None
        return
    with pytest.raises((HTTPException, ApiError)) as caught:
        await authorize_as(loaded, WHO, "threads", "read", {})
    error = caught.value
    assert (error.status_code if isinstance(error, HTTPException) else error.status) == status
    if result == "assert":
        assert isinstance(error, HTTPException) and error.detail == "not yours"


def test_users_take_langgraphs_shapes_and_defaults() -> None:
    from plait.server._auth import _user_of  # pyright: ignore[reportPrivateUsage]  # the normaliser itself

    user, perms = _user_of("alice")
    assert (user.identity, user.display_name, user.is_authenticated, perms) == ("alice", "alice", True, [])
    user, perms = _user_of((["write"], {"identity": "bob", "display_name": "Bob"}))
    assert (user.identity, user.display_name, perms, user.dict()["display_name"]) == (
        "bob",
        "Bob",
        ["write"],
        "Bob",
    )
    user, perms = _user_of({"identity": "carol", "permissions": ["admin"], "org": "acme"})
    assert perms == ["admin"] and user["org"] == "acme" and user.org == "acme" and user.get("nope") is None
    assert json.loads(json.dumps(user.dict())) == {
        "identity": "carol",
        "is_authenticated": True,
        "display_name": "carol",
        "permissions": ["admin"],
        "org": "acme",
    }

    class Custom:
        identity = "dave"
        permissions = ("p",)

    user, perms = _user_of(Custom())
    assert user.identity == "dave" and perms == ["p"]
    for bad in (None, 42, {"name": "x"}, ("a", "b", "c")):
        with pytest.raises(ValueError, match="identity|tuple"):
            _user_of(bad)


def _project(tmp_path: pathlib.Path, auth: Any, source: str = "") -> pathlib.Path:
    (tmp_path / "agent.py").write_text("graph = None\n")
    (tmp_path / "auth.py").write_text(source or "from langgraph_sdk import Auth\nauth = Auth()\n")
    config = {"graphs": {"agent": "./agent.py:graph"}, "auth": auth}
    path = tmp_path / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ({"path": "./auth.py:auth", "cache": {"ttl_seconds": 60}}, "auth.cache is not implemented"),
        (
            {"path": "./auth.py:auth", "allow_langsmith_api_keys": True},
            "allow_langsmith_api_keys is not implemented",
        ),
        ({"path": "./auth.py:auth", "extra": 1}, "auth.extra not supported"),
        ({"path": "auth.py"}, "auth.path must be"),
        (
            {"path": "./auth.py:auth", "disable_studio_auth": "yes"},
            "disable_studio_auth must be true or false",
        ),
        ({"path": "./auth.py:auth", "openapi": {"flows": {}}}, "auth.openapi must be"),
        ("./auth.py:auth", '"auth" must be an object'),
    ],
)
def test_an_auth_section_plait_does_not_implement_is_refused_by_name(
    tmp_path: pathlib.Path, section: Any, says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        load_config(_project(tmp_path, section))


def test_langgraphs_auth_keys_are_read(tmp_path: pathlib.Path) -> None:
    section = {
        "path": "./auth.py:auth",
        "disable_studio_auth": True,
        "openapi": {"securitySchemes": {"b": {"type": "http", "scheme": "bearer"}}, "security": [{"b": []}]},
    }
    load_config(_project(tmp_path, section))


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("from langgraph_sdk import Auth\nauth = Auth()\n", "no @auth.authenticate handler"),
        ("auth = object()\n", "not a langgraph_sdk Auth"),
        (
            "from langgraph_sdk import Auth\nauth = Auth()\n@auth.authenticate\nasync def a(token: str) -> str:\n    return token\n",
            "takes ['token']",
        ),
    ],
)
def test_an_unusable_auth_object_is_refused_at_load(tmp_path: pathlib.Path, source: str, says: str) -> None:
    path = _project(tmp_path, {"path": "./auth.py:auth"}, source)
    with pytest.raises(ConfigError, match=says.replace("[", r"\[").replace("]", r"\]")):
        load_auth({"path": "./auth.py:auth"}, str(path))


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("./missing.py:auth", r"^auth.path: .*missing.py does not exist$"),
        ("./auth.py:nope", r"^auth.path: ./auth.py has no variable 'nope'$"),
        ("./auth.ts:auth", "JavaScript auth, which plait serve does not run"),
    ],
)
def test_an_auth_path_that_names_nothing_usable_says_so(
    tmp_path: pathlib.Path, target: str, says: str
) -> None:
    path = _project(tmp_path, {"path": target})
    with pytest.raises(ConfigError, match=says):
        load_auth({"path": target}, str(path))
