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
