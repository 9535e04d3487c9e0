"""``plait inspect DB --web``: the read-only web inspector of a bare checkpoint database.

The real command runs as a subprocess on a SQLite file (and a PostgreSQL schema) written by real
graph runs; its JSON endpoints are read with httpx and its page is driven in headless Chromium.
"""

from __future__ import annotations

import hashlib
import operator
import os
import pathlib
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import httpx
import pytest
from click.testing import CliRunner
from langchain_core.messages import AIMessage

from plait.checkpoint.base import BaseCheckpointSaver
from plait.checkpoint.sqlite import SqliteSaver
from plait.cli import main
from plait.cli.demo import build_graph
from plait.graph import END, START, MessagesState, StateGraph
from plait.types import interrupt

pytest.importorskip("starlette", reason="plait inspect --web needs the 'serve' extra")

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAIT = pathlib.Path(sys.executable).parent / "plait"


class State(MessagesState):
    turns: Annotated[int, operator.add]


def _chat(state: State) -> dict[str, Any]:
    text = str(state["messages"][-1].content)
    if text == "ask":
        return {"messages": [AIMessage(f"answer: {interrupt({'question': 'sure?'})}")], "turns": 1}
    return {"messages": [AIMessage(f"you said: {text}")], "turns": 1}


class _EnglishModel:
    """The demo's offline model, answering in English."""

    def invoke(self, messages: list[Any]) -> AIMessage:
        text = str(messages[-1].content)
        return AIMessage(
            {"return": "Within 7 days.", "ship": "In 48 hours.", "filter": "Every 3 months."}.get(
                next((k for k in ("return", "ship", "filter") if k in text), ""), "Anything else?"
            )
        )


def _write_threads(saver: BaseCheckpointSaver) -> None:
    """``alice``: four demo turns (the transcript is trimmed); ``asker``: two turns, waiting on an interrupt."""
    demo = build_graph(model=_EnglishModel()).compile(checkpointer=saver)
    for text in ("can I return it?", "how fast do you ship?", "when to change the filter?", "thanks"):
        demo.invoke({"messages": [("user", text)]}, {"configurable": {"thread_id": "alice"}})
    chat = StateGraph(State).add_node("chat", _chat).add_edge(START, "chat").add_edge("chat", END)
    asker = chat.compile(checkpointer=saver)
    for text in ("hello", "ask"):
        asker.invoke({"messages": [("user", text)]}, {"configurable": {"thread_id": "asker"}})


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("inspect") / "app.sqlite")
    with SqliteSaver.from_conn_string(path) as saver:
        _write_threads(saver)
    return path


@contextmanager
def inspector(db: str, tmp: pathlib.Path, *args: str) -> Iterator[str]:
    """``plait inspect DB --web`` as a process on any free port; yields the page's URL."""
    log = tmp / f"inspect-{time.monotonic_ns()}.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(PLAIT), "inspect", db, "--web", "--no-browser", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        url = None
        while url is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"plait inspect --web did not start ({proc.returncode}):\n{log.read_text()}"
                )
            found = re.search(r"(http://\S+/ui)", log.read_text())
            url = found.group(1) if found else None
            time.sleep(0.05)
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=20) in (0, -signal.SIGTERM), log.read_text()  # uvicorn re-raises SIGTERM
        assert "Traceback" not in log.read_text(), log.read_text()


def _digest(path: str) -> str:
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def _tables(path: str) -> set[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def test_json_endpoints_read_threads_timelines_states_and_diffs(db: str, tmp_path: pathlib.Path) -> None:
    before = _digest(db)
    with inspector(db, tmp_path) as url:
        assert url.startswith("http://127.0.0.1:")
        api = url + "/api"
        listed = httpx.get(api + "/threads").json()
        assert listed["total"] == 2 and [t["thread_id"] for t in listed["threads"]] == ["asker", "alice"]
        assert listed["threads"][1]["checkpoints"] == 20
        assert [
            t["thread_id"] for t in httpx.get(api + "/threads", params={"q": "ALI"}).json()["threads"]
        ] == ["alice"]
        assert httpx.get(api + "/threads", params={"q": "nobody"}).json() == {"total": 0, "threads": []}

        asker = httpx.get(api + "/threads/asker").json()
        assert asker["status"] == "interrupted" and asker["next"] == ["chat"]
        assert asker["interrupts"][0]["value"] == {"question": "sure?"}
        assert httpx.get(api + "/threads/alice").json()["status"] == "idle"

        rows = httpx.get(api + "/threads/asker/timeline").json()
        assert [(r["step"], r["source"]) for r in rows] == [
            (3, "loop"),
            (2, "input"),
            (1, "loop"),
            (0, "loop"),
            (-1, "input"),
        ]
        assert rows[2]["nodes"] == ["chat"] and rows[2]["writes"]["turns"] == 1
        assert rows[2]["writes"]["messages"][0]["content"] == "you said: hello"
        assert rows[1]["writes"] == {"messages": [["user", "ask"]]}  # the input, not yet applied
        assert rows[0]["interrupts"][0]["value"] == {"question": "sure?"}
        assert set(rows[0]["bytes"]) == {"messages", "turns"} and rows[0]["bytes"]["messages"] > 100
        assert not any(r["fork"] for r in rows)
        assert len(httpx.get(api + "/threads/alice/timeline", params={"limit": 3}).json()) == 3

        old = httpx.get(f"{api}/threads/asker/state/{rows[2]['checkpoint_id']}").json()
        assert [m["content"] for m in old["values"]["messages"]] == ["hello", "you said: hello"]
        assert old["values"]["turns"] == 1 and old["next"] == [] and old["metadata"]["step"] == 1
        head = httpx.get(f"{api}/threads/asker/state").json()
        assert head["checkpoint_id"] == rows[0]["checkpoint_id"] and head["next"] == ["chat"]

        alice = httpx.get(api + "/threads/alice/timeline", params={"limit": 40}).json()
        diff = httpx.get(
            api + "/threads/alice/diff",
            params={"a": alice[0]["checkpoint_id"], "b": alice[5]["checkpoint_id"]},
        ).json()
        assert diff["from"] == alice[5]["checkpoint_id"] and diff["to"] == alice[0]["checkpoint_id"]
        kinds = {c["key"]: c for c in diff["changes"]}
        assert kinds["turn"] == {"key": "turn", "kind": "changed", "before": 3, "after": 4}
        messages = kinds["messages"]
        assert messages["kind"] == "messages" and len(messages["removed"]) == 2
        assert "thanks" in [m["content"] for m in messages["added"]]
        assert alice[0]["nodes"] == ["trim"] and alice[0]["removed"] == {"messages": 2}
    assert _digest(db) == before, "reading changed the database"


def test_unknown_ids_and_bad_requests_answer_json_errors(db: str, tmp_path: pathlib.Path) -> None:
    with inspector(db, tmp_path) as url:
        api = url + "/api"
        for path in ("/threads/nobody", "/threads/nobody/timeline", "/threads/nobody/state"):
            answer = httpx.get(api + path)
            assert answer.status_code == 404 and "nobody" in answer.json()["detail"], path
        missing = httpx.get(api + "/threads/asker/state/1f0-not-a-checkpoint")
        assert missing.status_code == 404 and "1f0-not-a-checkpoint" in missing.json()["detail"]
        head = httpx.get(api + "/threads/asker").json()["head_id"]
        for params in ({"a": head}, {"a": head, "b": "nope"}):
            answer = httpx.get(api + "/threads/asker/diff", params=params)
            assert answer.status_code in (404, 422) and "detail" in answer.json()
        assert httpx.get(api + "/threads", params={"limit": "many"}).status_code == 422
        assert httpx.get(url + "/nothing/here").json() == {"detail": "Not Found"}
        assert httpx.post(api + "/threads").status_code == 405
        rebound = httpx.get(api + "/threads", headers={"Host": "attacker.example"})
        assert rebound.status_code == 400, "a foreign Host header (DNS rebinding) must be refused"


def test_page_in_headless_chromium(db: str, tmp_path: pathlib.Path) -> None:
    from _browser import chromium_page, screenshot

    with inspector(db, tmp_path) as url, chromium_page() as page:
        page.goto(url)
        page.wait_for_function("document.querySelector('#msg').textContent.includes('2 thread(s)')")
        assert "read-only" in page.inner_text("header")
        page.fill("#q", "ask")
        page.press("#q", "Enter")
        page.wait_for_function("document.querySelector('#msg').textContent === '1 thread(s)'")
        page.click('#threads li[data-thread="asker"]')
        page.wait_for_selector("#timeline tbody tr")
        rows = page.locator("#timeline tbody tr")
        assert rows.count() == 5
        assert "interrupted" in page.inner_text("#thread-status")
        assert "you said: hello" in page.inner_text("#timeline") and "sure?" in page.inner_text("#timeline")
        note = page.inner_text("#no-graph")
        assert "plait serve" in note and "fork" in note
        assert page.locator("#fork, #resume, #graph svg").count() == 0  # no graph: nothing to fork or draw
        page.wait_for_function("document.querySelector('#state').textContent.includes('ask')")
        assert page.locator("#bytes tbody tr").count() == 2
        screenshot(page, "inspect-web-timeline", tmp_path)

        rows.nth(2).click()  # step 1: after the first turn
        page.wait_for_function("!document.querySelector('#state').textContent.includes('\"ask\"')")
        assert "you said: hello" in page.inner_text("#state")

        page.fill("#q", "")
        page.click("#go")
        page.click('#threads li[data-thread="alice"]')
        page.wait_for_function("document.querySelectorAll('#timeline tbody tr').length === 20")
        rows = page.locator("#timeline tbody tr")
        rows.nth(0).locator(".pick").check()
        rows.nth(5).locator(".pick").check()
        page.wait_for_function("document.querySelector('#diff').textContent.includes('removed')")
        diff = page.inner_text("#diff")
        assert "thanks" in diff and "~ turn: 3 → 4" in diff
        page.locator("#diff").scroll_into_view_if_needed()
        screenshot(page, "inspect-web-diff", tmp_path)


def test_postgres_schema(tmp_path: pathlib.Path) -> None:
    from _pg import private_schema

    from plait.checkpoint.postgres import PostgresSaver

    with private_schema() as dsn:
        with PostgresSaver.from_conn_string(dsn) as saver:
            _write_threads(saver)
        with inspector(dsn, tmp_path) as url:
            listed = httpx.get(url + "/api/threads").json()
            assert {t["thread_id"] for t in listed["threads"]} == {"alice", "asker"}
            rows = httpx.get(url + "/api/threads/asker/timeline").json()
            assert rows[0]["interrupts"][0]["value"] == {"question": "sure?"}
            assert httpx.get(url + "/api/threads/nobody").status_code == 404


def test_postgres_without_plait_tables_is_refused_and_left_empty() -> None:
    import psycopg
    from _pg import private_schema

    with private_schema() as dsn:
        out = CliRunner().invoke(main, ["inspect", dsn, "--web", "--no-browser"])
        assert out.exit_code == 1 and "no plait checkpoints yet" in out.output, out.output
        with psycopg.connect(dsn) as conn:
            count = conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
            ).fetchone()
        assert count == (0,), "a read created tables"


def test_bad_databases_are_clear_cli_errors_that_create_nothing(tmp_path: pathlib.Path) -> None:
    runner = CliRunner()
    missing = tmp_path / "nope.sqlite"
    out = runner.invoke(main, ["inspect", str(missing), "--web", "--no-browser"])
    assert out.exit_code == 2 and "no such SQLite file" in out.output and "Traceback" not in out.output
    assert not missing.exists()

    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    out = runner.invoke(main, ["inspect", str(empty), "--web", "--no-browser"])
    assert out.exit_code == 1 and "no plait checkpoints yet" in out.output
    assert _tables(str(empty)) == set()

    foreign = tmp_path / "langgraph.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE checkpoints (thread_id TEXT, checkpoint BLOB)")
    conn.commit()
    conn.close()
    out = runner.invoke(main, ["inspect", str(foreign), "--web", "--no-browser"])
    assert out.exit_code == 1 and "plait migrate --from-langgraph" in out.output
    assert _tables(str(foreign)) == {"checkpoints"}, "left untouched"


def test_port_in_use_is_a_clear_error(db: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        out = CliRunner().invoke(main, ["inspect", db, "--web", "--no-browser", "--port", str(port)])
    assert out.exit_code == 1 and f"cannot listen on 127.0.0.1:{port}" in out.output, out.output


def test_without_web_it_lists_the_threads(db: str) -> None:
    out = CliRunner().invoke(main, ["inspect", db])
    assert out.exit_code == 0 and "alice" in out.output and "asker" in out.output
    assert "--web" in out.output


def test_web_without_the_serve_extra_names_it_and_the_listing_still_works(
    db: str, tmp_path: pathlib.Path
) -> None:
    (tmp_path / "starlette").mkdir()
    (tmp_path / "starlette" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'starlette'\", name='starlette')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    run = [sys.executable, "-c", "from plait.cli import main; main()", "inspect", db]
    web = subprocess.run(
        [*run, "--web", "--no-browser"], capture_output=True, text=True, env=env, timeout=120
    )
    assert web.returncode == 1 and "Traceback" not in web.stderr
    assert "pip install 'plait[serve]'" in web.stderr and len(web.stderr.strip().splitlines()) == 1
    listing = subprocess.run(run, capture_output=True, text=True, env=env, timeout=120)
    assert listing.returncode == 0 and "alice" in listing.stdout, listing.stderr


def test_a_program_writing_beside_the_inspector_shows_up(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "live.sqlite")
    with SqliteSaver.from_conn_string(path) as saver:
        _write_threads(saver)
        with inspector(path, tmp_path) as url:
            assert len(httpx.get(url + "/api/threads/asker/timeline").json()) == 5
            chat = StateGraph(State).add_node("chat", _chat).add_edge(START, "chat").add_edge("chat", END)
            chat.compile(checkpointer=saver).invoke(
                {"messages": [("user", "more")]}, {"configurable": {"thread_id": "late"}}
            )
            listed = httpx.get(url + "/api/threads").json()
            assert listed["threads"][0]["thread_id"] == "late" and listed["total"] == 3


def test_labels_hide_passwords() -> None:
    from plait.cli.inspect_web import label

    assert label("postgresql://app:s3cret@db:5432/agents?sslmode=require") == (
        "postgresql://app@db:5432/agents?sslmode=require"
    )
    assert "s3cret" not in label("host=db user=app password=s3cret dbname=agents")
    assert "s3cret" not in label("host=db password='s3 cret' dbname=agents")
    assert label("runs/app.sqlite") == "runs/app.sqlite"


def test_an_unreadable_row_is_a_json_error_and_other_threads_stay_readable(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "broken.sqlite")
    with SqliteSaver.from_conn_string(path) as saver:
        _write_threads(saver)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "UPDATE plait_checkpoint_blobs SET value = ? WHERE thread_id = 'asker'", (b"\xc1\xff" * 40,)
        )
    conn.close()
    with inspector(path, tmp_path) as url:
        broken = httpx.get(url + "/api/threads/asker/timeline")
        assert broken.status_code == 422 and broken.json()["detail"].startswith("cannot read a stored row")
        assert httpx.get(url + "/api/threads/alice").json()["status"] == "idle"
