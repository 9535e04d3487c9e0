"""The web inspector at /ui, driven in a real headless Chromium (Debian's package) through Playwright.

Screenshots are kept as test artefacts (in ``PLAIT_ARTIFACTS`` or the test's temporary folder);
with ``PLAIT_UPDATE_DOCS=1`` they also replace the pictures in ``docs/img``.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from _browser import chromium_page, screenshot
from _serve_proc import Server
from langgraph_sdk import get_sync_client

pytest.importorskip("playwright.sync_api", reason="playwright comes with the 'dev' extra")


@pytest.fixture
def page() -> Iterator[Any]:
    with chromium_page() as browser_page:
        yield browser_page


def _shot(page: Any, name: str, tmp_path: pathlib.Path) -> None:
    screenshot(page, f"serve-inspector-{name}", tmp_path)


def test_inspector_timeline_state_diff_fork_resume(server: Server, page: Any, tmp_path: pathlib.Path) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create(metadata={"user": "ada"})["thread_id"]
    for text in ("hello", "how are you", "ask"):
        client.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": text}]})
    assert client.threads.get(tid)["status"] == "interrupted"

    page.goto(server.url + "/ui")
    page.fill("#q", '{"user": "ada"}')
    page.click("#go")
    page.click(f'#threads li[data-thread="{tid}"]')
    page.wait_for_selector("#timeline tbody tr")
    rows = page.locator("#timeline tbody tr")
    assert rows.count() == 8  # per run: input, step 0, step 1 (the last one stops at its interrupt)
    assert "you said: how are you" in page.inner_text("#timeline")
    assert page.locator("#graph svg .node").count() == 3  # __start__, chat, __end__
    assert "chat" in page.inner_text("#mermaid")
    assert "interrupted" in page.inner_text("#thread-status")
    assert page.locator("#bytes tbody tr").count() == 2  # messages, turns
    _shot(page, "timeline", tmp_path)

    # state at an older checkpoint, then the diff between two
    rows.nth(5).click()  # step 1: the end of the first run
    # the panel showed the head before the click: wait for the older state itself, not only for 'hello'
    page.wait_for_function(
        "(t => t.includes('hello') && !t.includes('how are you'))(document.querySelector('#state').textContent)"
    )
    assert '"turns": 1' in page.inner_text("#state")
    rows.nth(0).locator(".pick").check()
    rows.nth(4).locator(".pick").check()
    page.wait_for_function("document.querySelector('#diff').textContent.includes('messages')")
    diff = page.inner_text("#diff")
    assert "appended" in diff and "turns" in diff
    _shot(page, "diff", tmp_path)

    # resume the interrupt from the head with a value
    rows.nth(0).click()
    page.fill("#resume-value", '"yes please"')
    page.click("#resume")
    page.wait_for_function("document.querySelector('#msg').textContent.startsWith('resumed')")
    state = client.threads.get_state(tid)
    assert state["values"]["messages"][-1]["content"] == "answer: yes please" and state["next"] == []
    page.wait_for_function("document.querySelector('#thread-status').textContent === 'idle'")

    # fork from an older checkpoint with edited values: a new head after it
    page.wait_for_selector("#timeline tbody tr")
    page.locator("#timeline tbody tr").nth(4).click()  # step 3: after the second question
    page.fill("#edit", '{"turns": 40}')
    page.fill("#as-node", "chat")
    page.click("#fork")
    page.wait_for_function("document.querySelector('#msg').textContent.startsWith('forked')")
    forked = client.threads.get_state(tid)
    assert forked["values"]["turns"] == 41 and forked["values"]["messages"][-1]["content"] == "how are you"
    _shot(page, "resumed", tmp_path)


def test_inspector_needs_the_token_for_data(tmp_path: pathlib.Path, page: Any) -> None:
    from _serve_proc import running

    with running(str(tmp_path / "db.sqlite"), tmp_path, token="s3cret") as srv:
        page.goto(srv.url + "/ui")
        page.wait_for_function("document.querySelector('#msg').textContent.includes('token')")
        page.fill("#token", "s3cret")
        page.dispatch_event("#token", "change")
        page.click("#go")
        page.wait_for_function("document.querySelector('#msg').textContent.includes('thread(s)')")


def _open(page: Any, server: Server, tag: str, tid: str) -> None:
    """Show the threads tagged ``tag`` and open ``tid``; wait until its own timeline is shown."""
    page.goto(server.url + "/ui")
    page.fill("#q", f'{{"ui": "{tag}"}}')
    page.click("#go")
    page.click(f'#threads li[data-thread="{tid}"]')
    page.wait_for_function(
        "id => document.querySelector('#title').textContent === id"
        " && document.querySelectorAll('#timeline tbody tr').length > 0",
        arg=tid,
    )


def test_diff_is_cleared_when_another_thread_opens(server: Server, page: Any) -> None:
    client = get_sync_client(url=server.url)
    first, second = (client.threads.create(metadata={"ui": "diff"})["thread_id"] for _ in range(2))
    for tid in (first, second):
        for text in ("one", "two"):
            client.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": text}]})
    _open(page, server, "diff", first)
    rows = page.locator("#timeline tbody tr")
    rows.nth(0).locator(".pick").check()
    rows.nth(2).locator(".pick").check()
    page.wait_for_function("document.querySelector('#diff').textContent.includes('appended')")
    old_ids = [c["checkpoint_id"] for c in client.threads.get_history(first)]
    assert any(cid in page.inner_text("#diff") for cid in old_ids)

    page.click(f'#threads li[data-thread="{second}"]')
    new_ids = {c["checkpoint_id"] for c in client.threads.get_history(second)}
    page.wait_for_function(  # the second thread's own timeline is shown
        "ids => { const rows = [...document.querySelectorAll('#timeline tbody tr')];"
        " return rows.length === ids.length && rows.every((r) => ids.includes(r.dataset.checkpoint)); }",
        arg=sorted(new_ids),
    )
    diff = page.inner_text("#diff")
    assert not any(cid in diff for cid in old_ids), diff
    assert diff == "pick two checkpoints in the timeline"


def test_sidebar_status_follows_a_resume(server: Server, page: Any) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create(metadata={"ui": "resume"})["thread_id"]
    client.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": "ask"}]})
    _open(page, server, "resume", tid)
    side = f'#threads li[data-thread="{tid}"] .status'
    assert page.inner_text(side) == "interrupted"
    page.fill("#resume-value", '"go"')
    page.click("#resume")
    page.wait_for_function("document.querySelector('#msg').textContent.startsWith('resumed')")
    assert client.threads.get(tid)["status"] == "idle"
    page.wait_for_function("s => document.querySelector(s).textContent === 'idle'", arg=side)
    assert page.locator(f'#threads li[data-thread="{tid}"]').get_attribute("class") == "on"


def _talk_thread(server: Server, tag: str) -> tuple[Any, str]:
    client = get_sync_client(url=server.url)
    tid = client.threads.create(metadata={"ui": tag})["thread_id"]
    client.runs.wait(tid, "talk", input={"messages": [{"role": "user", "content": "hi"}]})
    return client, tid


def test_tool_calls_show_their_name_and_arguments(server: Server, page: Any) -> None:
    client, tid = _talk_thread(server, "tools")
    call = {"name": "lookup", "args": {"q": "weather"}, "id": "call-1", "type": "tool_call"}
    client.threads.update_state(
        tid, {"messages": [{"type": "ai", "content": "", "tool_calls": [call]}]}, as_node="talk"
    )
    client.runs.wait(tid, "talk", input=None)  # the tool runs, then the model answers
    assert client.threads.get_state(tid)["values"]["messages"][-2]["content"] == "found weather"
    _open(page, server, "tools", tid)
    update = page.locator("#timeline tbody tr", has_text="update_state")  # the tool-calling message
    text = update.inner_text()
    assert "lookup(" in text and "weather" in text, text
    assert 'ai: ""' not in page.inner_text("#timeline")


def _edges(page: Any) -> list[dict[str, Any]]:
    """The drawn edges: the nodes their two ends touch and 41 points along each."""
    return page.evaluate(
        """() => {
        const svg = document.querySelector('#graph svg'), boxes = {};
        svg.querySelectorAll('.node').forEach((g) => {
          const b = g.querySelector('rect').getBBox();
          boxes[g.dataset.node] = {x: b.x, y: b.y, width: b.width, height: b.height};
        });
        const near = (p, b) => p.x > b.x - 3 && p.x < b.x + b.width + 3 && p.y > b.y - 3 && p.y < b.y + b.height + 3;
        const owner = (p) => Object.keys(boxes).find((n) => near(p, boxes[n]));
        return [...svg.querySelectorAll('line, path')].filter((e) => !e.closest('marker')).map((e) => {
          const n = e.getTotalLength();
          const pts = Array.from({length: 41}, (_, i) => e.getPointAtLength(n * i / 40)).map((p) => ({x: p.x, y: p.y}));
          return {from: owner(pts[0]), to: owner(pts[40]), pts, boxes};
        });
      }"""
    )


def test_graph_drawing_shows_the_tool_loop(server: Server, page: Any, tmp_path: pathlib.Path) -> None:
    _, tid = _talk_thread(server, "drawing")
    _open(page, server, "drawing", tid)
    page.wait_for_selector("#graph svg .node")
    edges = {(e["from"], e["to"]): e for e in _edges(page)}
    assert set(edges) == {("__start__", "talk"), ("talk", "tools"), ("talk", "__end__"), ("tools", "talk")}
    tools = edges["talk", "tools"]["boxes"]["tools"]

    def inside(p: dict[str, float]) -> bool:
        return bool(
            tools["x"] < p["x"] < tools["x"] + tools["width"]
            and tools["y"] < p["y"] < tools["y"] + tools["height"]
        )

    assert not any(inside(p) for p in edges["talk", "__end__"]["pts"]), "talk -> __end__ runs through tools"
    forth, back = edges["talk", "tools"]["pts"], edges["tools", "talk"]["pts"]
    apart = max(min(((p["x"] - q["x"]) ** 2 + (p["y"] - q["y"]) ** 2) ** 0.5 for q in forth) for p in back)
    assert apart > 15, "tools -> talk lies on top of talk -> tools"
    _shot(page, "tool-loop", tmp_path)
