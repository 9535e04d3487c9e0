"""Config files: plait.json / langgraph.json, graphs only from the file, env, clear errors."""

from __future__ import annotations

import json
import os
import pathlib

import pytest

from plait.pregel import Pregel
from plait.server import ConfigError
from plait.server._config import GraphSpec, Settings, apply_env, load_config, load_graph
from plait.server._webhook import WebhookPolicy

AGENT = """
from plait.graph import START, StateGraph, MessagesState

def echo(state):
    return {"messages": [("ai", "ok")]}

builder = StateGraph(MessagesState).add_node("echo", echo).add_edge(START, "echo")
graph = builder.compile()

def make_graph(config):
    return builder.compile()

not_a_graph = 3
"""


@pytest.fixture
def project(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / ".env").write_text("# comment\nexport PLAIT_CFG_A='from file'\nPLAIT_CFG_B=2\n")
    return tmp_path


def test_langgraph_json_is_accepted_as_is(project: pathlib.Path) -> None:
    config = {
        "dependencies": ["."],
        "graphs": {
            "agent": "./agent.py:graph",
            "other": {"path": "./agent.py:make_graph", "description": "d"},
        },
        "env": ".env",
        "python_version": "3.11",  # build keys: ignored
        "dockerfile_lines": [],
    }
    path = project / "langgraph.json"
    path.write_text(json.dumps(config))
    graphs, env, webhooks, cors, thread_ttl, store_ttl, index, http_app, disabled = load_config(path)
    assert (
        webhooks == WebhookPolicy()
        and cors == {}
        and thread_ttl == store_ttl == index == {}
        and http_app is None
        and disabled == ()
    )
    assert graphs == (
        GraphSpec("agent", "./agent.py:graph"),
        GraphSpec("other", "./agent.py:make_graph", "d"),
    )
    assert env == {"PLAIT_CFG_A": "from file", "PLAIT_CFG_B": "2"}
    assert all(isinstance(load_graph(g, str(path)), Pregel) for g in graphs)  # a compiled graph and a factory
    os.environ.pop("PLAIT_CFG_A", None)
    apply_env(env)
    assert os.environ.pop("PLAIT_CFG_A") == "from file"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{nope", "not valid JSON"),
        ("[]", "must be a JSON object"),
        ("{}", '"graphs" must be a non-empty object'),
        ('{"graphs": {"a": "agent.py"}}', "path/to/file.py:variable"),
        ('{"graphs": {"a": "./agent.py:graph"}, "env": ".missing"}', "does not exist"),
        # what plait serve does not implement is refused, never ignored
        (
            '{"graphs": {"a": "./agent.py:graph"}, "auth": {"path": "./auth.py:auth", "cache": {}}}',
            "auth.cache is not",
        ),
        ('{"graphs": {"a": "./agent.py:graph"}, "store": {"index": {}}}', "store.index.embed must name"),
        (
            '{"graphs": {"a": "./agent.py:graph"}, "store": {"index": {"embed": "x:y", "dims": 0}}}',
            "dims must",
        ),
        (
            '{"graphs": {"a": "./agent.py:graph"}, "store": {"index": {"embed": "x:y", "dims": 2, "k": 1}}}',
            "'k'",
        ),
        ('{"graphs": {"a": "./agent.py:graph"}, "store": {"path": "x"}}', 'of "store"'),
        ('{"graphs": {"a": "./agent.py:graph"}, "checkpointer": {"path": "x"}}', 'of "checkpointer"'),
        (
            '{"graphs": {"a": "./agent.py:graph"}, "checkpointer": {"ttl": {"strategy": "archive"}}}',
            "strategy must be one of",
        ),
        ('{"graphs": {"a": "./agent.py:graph"}, "store": {"ttl": {"default_ttl": 0}}}', "positive number"),
        ('{"graphs": {"a": "./agent.py:graph"}, "store": {"ttl": {"refresh_on_read": 1}}}', "true or false"),
        ('{"graphs": {"a": "./agent.py:graph"}, "store": {"ttl": {"nope": 1}}}', "store.ttl: \\['nope'\\]"),
        (
            '{"graphs": {"a": "./agent.py:graph"}, "http": {"mount_prefix": "/api", "app": "./app.py:app"}}',
            "http.mount_prefix not supported",
        ),
        ('{"graphs": {"a": "./agent.py:graph"}, "http": {"app": "./app.py"}}', '"path/to/webapp.py:app"'),
        ('{"graphs": {"a": "./agent.py:graph"}, "webhooks": {"url": {"nope": 1}}}', "unknown key"),
        (
            '{"graphs": {"a": "./agent.py:graph"}, "webhooks": {"url": {"allowed_domains": ["h"]}, '
            '"headers": {"X": "${PLAIT_UNSET_VAR}"}}}',
            "PLAIT_UNSET",
        ),
        (
            '{"graphs": {"a": "./agent.py:graph"}, "webhooks": {"url": {"allowed_domains": ["h"]}, '
            '"env_prefix": "HOOK_", "headers": {"X": "${{ env.OTHER }}"}}}',
            "env_prefix",
        ),
        (
            '{"graphs": {"a": "./agent.py:graph"}, "webhooks": {"headers": {"X": "v"}}}',
            "needs webhooks.url.allowed",
        ),
        ('{"graphs": {"a": "./agent.py:graph"}, "http": {"disable_webhooks": "false"}}', "true or false"),
        ('{"graphs": {"a": "./agent.py:graph"}, "http": {"cors": {"allow_origins": "*"}}}', "must be a list"),
        (
            '{"graphs": {"a": "./agent.py:graph"}, "http": {"cors": {"nope": 1}}}',
            "http.cors.nope is not supported",
        ),
        (
            '{"graphs": {"a": "./agent.py:graph"}, "webhooks": {"url": {"max_url_length": true}}}',
            "positive integer",
        ),
    ],
)
def test_bad_config_files_say_what_is_wrong(project: pathlib.Path, content: str, message: str) -> None:
    path = project / "plait.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("./missing.py:graph", "does not exist"),
        ("./agent.py:nothing", "has no variable"),
        ("./agent.py:not_a_graph", "not a compiled graph"),
    ],
)
def test_bad_graph_targets_say_what_is_wrong(project: pathlib.Path, target: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_graph(GraphSpec("g", target), str(project / "plait.json"))


def test_missing_config_file(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "plait.json")


def test_settings_round_trip_through_json(project: pathlib.Path) -> None:
    path = project / "plait.json"
    hooks = {
        "url": {"allowed_domains": ["*.example.com"], "allowed_ports": [443]},
        "headers": {"X-T": "${V}", "X-U": "${{ env.V }}"},
    }
    ttls = {
        "checkpointer": {"ttl": {"strategy": "keep_latest", "default_ttl": 60, "sweep_interval_minutes": 1}},
        "store": {"ttl": {"default_ttl": 5, "refresh_on_read": False}},
    }
    path.write_text(
        json.dumps({"graphs": {"a": "./agent.py:graph"}, "env": {"V": "v1"}, "webhooks": hooks, **ttls})
    )
    loaded = load_config(path)
    policy = loaded.webhooks
    assert loaded.thread_ttl == ttls["checkpointer"]["ttl"] and loaded.store_ttl == ttls["store"]["ttl"]
    assert policy.allowed_domains == ("*.example.com",) and policy.headers == (("x-t", "v1"), ("x-u", "v1"))
    settings = Settings(
        "c.json",
        (GraphSpec("a", "./a.py:g"),),
        "postgresql://x/y",
        auth_token="t",
        cors_origins=("*",),
        webhooks=policy.to_json(),
        thread_ttl=loaded.thread_ttl,
        store_ttl=loaded.store_ttl,
    )
    again = Settings.from_json(settings.to_json())
    assert again == settings and again.webhook_policy == policy
    assert settings.is_postgres
