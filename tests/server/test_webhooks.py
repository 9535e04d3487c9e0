"""Run webhooks: a real ``plait serve`` POSTs a run's outcome to a real HTTP receiver."""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from _serve_proc import Server
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import UnprocessableEntityError

from plait.server._webhook import WebhookPolicy, local_addresses
from plait.server._wire import ApiError


class Receiver:
    """An HTTP server on a free port that records every POST; ``fail_first`` answers 500 first."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.fail_first = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.calls.append(({k.lower(): v for k, v in self.headers.items()}, body))
                failing = outer.fail_first > 0
                outer.fail_first -= 1
                self.send_response(500 if failing else 200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/hook"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def wait(self, count: int) -> list[tuple[dict[str, str], dict[str, Any]]]:
        deadline = time.monotonic() + 120  # (only a guard against a hang)
        while len(self.calls) < count:
            assert time.monotonic() < deadline, f"{count} calls awaited, got {self.calls}"
            time.sleep(0.05)
        return self.calls


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.http.shutdown()


MSG = {"messages": [{"role": "user", "content": "hi"}]}


def test_a_finished_run_posts_its_outcome_to_its_webhook(server: Server, receiver: Receiver) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "agent", input=MSG, webhook=receiver.url)
    assert run["kwargs"]["webhook"] == receiver.url
    client.runs.join(tid, run["run_id"])
    ((headers, body),) = receiver.wait(1)
    assert headers["x-hook-token"] == "s3cret" and headers["content-type"] == "application/json"
    assert body["run_id"] == run["run_id"] and body["thread_id"] == tid and body["status"] == "success"
    assert [m["content"] for m in body["values"]["messages"]] == ["hi", "you said: hi"]
    assert body["kwargs"]["webhook"] == receiver.url and "error" not in body
    assert body["run_started_at"] <= body["run_ended_at"] <= body["webhook_sent_at"]


def test_a_named_host_is_called_at_its_checked_address_with_the_urls_credentials(
    server: Server, receiver: Receiver
) -> None:
    port = receiver.url.split(":")[2].split("/")[0]
    url = f"http://hook%40user:p%3Ass@localhost:{port}/hook?x=1"  # localhost may list ::1 first: tried next
    client = get_sync_client(url=server.url)
    client.runs.wait(None, "agent", input=MSG, webhook=url)
    ((headers, body),) = receiver.wait(1)
    assert headers["host"] == f"localhost:{port}"  # the name, though the call went to the address
    assert headers["authorization"] == "Basic " + base64.b64encode(b"hook@user:p:ss").decode()
    assert body["status"] == "success"


def test_a_failed_run_posts_its_error(server: Server, receiver: Receiver) -> None:
    client = get_sync_client(url=server.url)
    fail = {"messages": [{"role": "user", "content": "fail"}]}
    with pytest.raises(Exception, match="the node failed on purpose"):  # the SDK raises the run's error
        client.runs.wait(None, "agent", input=fail, webhook=receiver.url)
    ((_, body),) = receiver.wait(1)
    assert body["status"] == "error"
    assert body["error"] == {"error": "RuntimeError", "message": "the node failed on purpose"}


def test_a_receiver_that_fails_is_called_again(server: Server, receiver: Receiver) -> None:
    receiver.fail_first = 1
    client = get_sync_client(url=server.url)
    client.runs.wait(None, "agent", input=MSG, webhook=receiver.url)
    calls = receiver.wait(2)
    assert [body["run_id"] for _, body in calls[:1]] == [calls[1][1]["run_id"]]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/x", "absolute http or https URL"),
        ("/threads", "absolute http or https URL"),
        ("http://[::1", "not a valid URL"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://no-such-host.invalid/x", "does not resolve"),
    ],
)
def test_a_webhook_the_policy_refuses_is_a_422_and_queues_nothing(
    server: Server, url: str, message: str
) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    with pytest.raises(UnprocessableEntityError, match=message):
        client.runs.create(tid, "agent", input=MSG, webhook=url)
    assert client.runs.list(tid) == []


def _refusal(policy: WebhookPolicy, url: str) -> str | None:
    try:
        policy.checked(url)
        asyncio.run(policy.reachable(url))
    except ApiError as exc:
        assert exc.status == 422
        return exc.detail
    return None


def test_the_default_policy_refuses_this_machine_and_link_local_addresses() -> None:
    policy = WebhookPolicy()
    for url in (
        "http://127.0.0.1:9/x",
        "http://localhost/x",
        "http://localhost./x",
        "http://[::1]/x",
        "http://[::ffff:127.0.0.1]/x",
        "http://2130706433/x",  # 127.0.0.1 as one number
        "http://user@127.0.0.1/x",
    ):
        assert "this machine" in (_refusal(policy, url) or ""), url
    for url in (
        "http://0.0.0.0/x",
        "http://169.254.169.254/x",
        "http://[::ffff:169.254.169.254]/x",
        "http://100.100.100.200/x",
        "http://[fd00:ec2::254]/x",
        "http://240.0.0.1/x",
        "http://255.255.255.255/x",
    ):
        assert "metadata address" in (_refusal(policy, url) or ""), url
    for url in ("http://10.1.2.3/x", "http://100.64.0.1/x", "http://[fd12::1]/x"):
        assert "disable_private_ips" in (_refusal(policy, url) or ""), url  # private: refused by default
    allowed = WebhookPolicy.from_config({"url": {"disable_private_ips": False}}, {})
    assert _refusal(allowed, "http://10.1.2.3/x") is None  # ... unless the config allows them
    assert "does not resolve" in (_refusal(policy, "http://" + "a" * 64 + ".com/x") or "")


def _own_address() -> str | None:
    """This machine's address on its default route (a UDP connect sends nothing), if not loopback."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("203.0.113.1", 9))
            address = str(probe.getsockname()[0])
    except OSError:
        return None
    return None if ipaddress.ip_address(address).is_loopback or address == "0.0.0.0" else address


def test_every_address_of_this_machine_is_refused_not_only_loopback() -> None:
    """A webhook to the machine's LAN address would reach services listening on all interfaces."""
    own = _own_address()
    if own is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    policy = WebhookPolicy.from_config({"url": {"disable_private_ips": False}}, {})  # (not why it is refused)
    assert "this machine" in (_refusal(policy, f"http://{own}:9/x") or ""), own
    assert ipaddress.ip_address(own) in local_addresses()
    opened = WebhookPolicy.from_config({"url": {"disable_loopback": False, "disable_private_ips": False}}, {})
    assert _refusal(opened, f"http://{own}:9/x") is None  # the config may allow this machine
    assert "this machine" in (_refusal(policy, f"http://{socket.gethostname()}:9/x") or "")


def test_the_policy_keys_of_the_config_restrict_urls() -> None:
    policy = WebhookPolicy.from_config(
        {
            "url": {
                "disable_private_ips": False,
                "allowed_domains": ["*.example.com", "10.0.0.5"],
                "allowed_ports": [443, 8443],
                "require_https": True,
            }
        },
        {},
    )
    assert _refusal(policy, "http://10.0.0.5/x") is not None  # https only
    assert "allowed_domains" in (_refusal(policy, "https://10.0.0.6/x") or "")
    assert "allowed_ports" in (_refusal(policy, "https://10.0.0.5:80/x") or "")
    assert _refusal(policy, "https://10.0.0.5:8443/x") is None
    assert policy.checked("https://hooks.example.com/x") == "https://hooks.example.com/x"
    assert _refusal(WebhookPolicy(disabled=True), "https://10.0.0.5/x") is not None
