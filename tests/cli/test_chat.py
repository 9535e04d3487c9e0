"""``plait chat`` in a real pseudo-terminal (pexpect) against real HTTP servers: fakellm, and a
stdlib server that answers 500 or never answers. Failures leave the thread without a half turn."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agents"))

from fakellm_server import FakeLLM, free_port, start_fakellm  # noqa: E402 - found through the line above

from plait.checkpoint.sqlite import SqliteSaver  # noqa: E402

PLAIT = str(Path(sys.executable).parent / "plait")
PROMPT = "Human: "


RULES = [
    {
        "name": "long",
        "when": {"messages_contain": "story"},
        "respond": {"content": " ".join(["word"] * 3000)},
    },
    {
        "name": "name",
        "when": {"turn": 1, "messages_contain": "my name"},
        "respond": {"content": "Nice to meet you, Ana."},
    },
    {"name": "any", "respond": {"content": "Hello from the model."}},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeLLM]:
    running = start_fakellm(Path(tmp_path_factory.mktemp("fakellm")))
    yield running
    running.stop()


@pytest.fixture
def fakellm(server: FakeLLM) -> FakeLLM:
    """The module's fakellm with fresh rules and no conversation state (turns count from 1)."""
    server.rules(RULES)
    return server


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment whose user data directory is private to the test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), HOME=str(tmp_path), TERM="dumb", COLUMNS="200")
    return env


def spawn(env: dict[str, str], *args: str, cwd: Path | None = None) -> pexpect.spawn:
    child = pexpect.spawn(
        PLAIT, ["chat", *args], env=env, encoding="utf-8", timeout=30, dimensions=(50, 200), cwd=cwd
    )
    child.expect("/help lists the commands")
    child.expect(PROMPT)
    return child


def say(child: pexpect.spawn, line: str, until: str = PROMPT) -> str:
    child.sendline(line)
    child.expect(until)
    return str(child.before)


def stored(env: dict[str, str], thread: str) -> list[tuple[str, str]]:
    db = Path(env["XDG_DATA_HOME"]) / "plait" / "chat.sqlite"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        saved = saver.get_tuple({"configurable": {"thread_id": thread}})
    if saved is None:
        return []
    return [(m.type, m.content) for m in saved.checkpoint["channel_values"].get("messages", [])]


def test_switch_show_clear_and_restart_finds_the_thread(fakellm: FakeLLM, home: dict[str, str]) -> None:
    child = spawn(home, "--base-url", fakellm.base_url)
    assert "AI：Nice to meet you, Ana." in say(child, "my name is Ana")
    shown = say(child, "/show")
    assert "human: my name is Ana" in shown and "ai: Nice to meet you, Ana." in shown
    assert "switched to thread_id = other" in say(child, "/switch other")
    assert "AI：Hello from the model." in say(child, "hi")
    assert "human: my name is Ana" not in say(child, "/show")
    assert "cleared thread other" in say(child, "/clear")
    assert "human: hi" not in say(child, "/show")
    threads = say(child, "/threads")
    assert "session_01" in threads and "* other" in threads
    child.sendline("/exit")
    child.expect(pexpect.EOF)

    again = spawn(home, "--base-url", fakellm.base_url)  # a new process, the default database
    shown = say(again, "/show")
    assert "human: my name is Ana" in shown and "ai: Nice to meet you, Ana." in shown
    again.sendeof()
    again.expect(pexpect.EOF)


def test_undo_history_and_fork(fakellm: FakeLLM, home: dict[str, str]) -> None:
    child = spawn(home, "--base-url", fakellm.base_url, "--thread", "t")
    say(child, "my name is Ana")
    say(child, "hi")
    assert "back to before: hi" in say(child, "/undo")
    assert "human: hi" not in say(child, "/show")
    assert "fork" in say(child, "/history")  # undo copies the checkpoint before the turn
    assert "forked into thread_id = t2 (2 messages)" in say(child, "/fork t2")
    assert (
        stored(home, "t2")
        == stored(home, "t")
        == [("human", "my name is Ana"), ("ai", "Nice to meet you, Ana.")]
    )
    assert "/switch <thread_id>" in say(child, "/help")
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_server_down_is_one_line_and_nothing_is_stored(home: dict[str, str]) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    child = spawn(home, "--base-url", url)
    out = say(child, "hello?")
    [line] = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert url in line and "is it running?" in line
    assert "Traceback" not in out
    assert stored(home, "session_01") == []
    assert "---- thread session_01 ----" in say(child, "/show")  # the session goes on
    child.sendline("/exit")
    child.expect(pexpect.EOF)


BAD_SERVER = textwrap.dedent(
    """
    import sys, time
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            if sys.argv[2] == "slow":
                time.sleep(30)
            body = b'{"error": {"message": "the model crashed", "type": "server_error"}}'
            self.send_response(500)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
    """
)


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    """Return once the server accepts connections (or fail if it exited)."""
    while True:
        assert process.poll() is None, "the test server exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)


@pytest.fixture(params=["500", "slow"])
def bad_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    port = free_port()
    script = tmp_path / "bad_server.py"
    script.write_text(BAD_SERVER)
    process = subprocess.Popen([sys.executable, str(script), str(port), request.param])
    _wait_for_port(port, process)
    yield request.param, f"http://127.0.0.1:{port}/v1"
    process.terminate()
    process.wait(timeout=10)


def test_http_500_and_timeout_are_one_line_and_the_thread_keeps_no_half_turn(
    fakellm: FakeLLM, bad_server: tuple[str, str], home: dict[str, str]
) -> None:
    kind, url = bad_server
    good = spawn(home, "--base-url", fakellm.base_url)
    say(good, "my name is Ana")
    good.sendline("/exit")
    good.expect(pexpect.EOF)
    before = stored(home, "session_01")

    child = spawn(home, "--base-url", url, "--timeout", "1")
    out = say(child, "are you there?")
    [line] = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert url in line
    assert ("HTTP 500" in line and "the model crashed" in line) if kind == "500" else "within 1 s" in line
    assert stored(home, "session_01") == before
    assert "human: are you there?" not in say(child, "/show")
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_ctrl_c_during_a_streamed_reply_stops_it_and_keeps_the_thread_consistent(
    fakellm: FakeLLM, home: dict[str, str]
) -> None:
    child = spawn(home, "--base-url", fakellm.base_url)
    say(child, "my name is Ana")
    child.sendline("tell me a story")
    child.expect("AI：word word word")  # tokens are arriving
    transcript = io.StringIO()
    child.logfile_read = transcript  # everything the terminal shows from here to the end
    child.sendintr()
    child.expect("interrupted")
    child.expect(PROMPT)
    assert stored(home, "session_01") == [("human", "my name is Ana"), ("ai", "Nice to meet you, Ana.")]
    assert "AI：Hello from the model." in say(child, "hi")  # the next turn works
    assert [t for t, _ in stored(home, "session_01")] == ["human", "ai", "human", "ai"]
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    after = transcript.getvalue().split("were not stored", 1)[1]
    assert "Error in" not in after and "StopReply" not in after, after  # no stray callback warning
    assert all(line.startswith(("Human: ", "AI：")) for line in after.splitlines() if line.strip()), after


def test_stdin_from_a_pipe(fakellm: FakeLLM, home: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "other.sqlite"
    done = subprocess.run(
        [PLAIT, "chat", "--base-url", fakellm.base_url, "--db", str(db), "--keep-last", "2"],
        input="my name is Ana\n/show\n",
        capture_output=True,
        text=True,
        env=home,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "AI：Nice to meet you, Ana." in done.stdout and "human: my name is Ana" in done.stdout
    assert db.exists()


def test_bad_memory_options_are_usage_errors(home: dict[str, str]) -> Any:
    done = subprocess.run([PLAIT, "chat", "--summarize"], input="", capture_output=True, text=True, env=home)
    assert done.returncode == 2 and "--summarize needs a budget" in done.stderr


TOOLS_MODULE = textwrap.dedent(
    '''
    from langchain_core.tools import tool

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    def clock(zone: str) -> str:
        """The time in a zone."""
        return f"noon in {zone}"

    tools = [weather]
    plain = [clock]
    number = 42
    '''
)

TOOL_RULES = [
    {
        "name": "answer",
        "when": {"turn": 2, "tool_result_contains": " in "},
        "respond": {"content": "It is sunny."},
    },
    {
        "name": "weather",
        "when": {"turn": 1, "messages_contain": "weather"},
        "respond": {"tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}}]},
    },
    {
        "name": "clock",
        "when": {"turn": 1, "messages_contain": "time"},
        "respond": {"tool_calls": [{"name": "clock", "arguments": {"zone": "UTC"}}]},
    },
    {"name": "any", "respond": {"content": "Hello from the model."}},
]


def test_tools_from_the_current_directory_are_called_and_shown(
    fakellm: FakeLLM, home: dict[str, str], tmp_path: Path
) -> None:
    fakellm.rules(TOOL_RULES)
    (tmp_path / "mytools.py").write_text(TOOLS_MODULE)
    child = spawn(home, "--base-url", fakellm.base_url, "--tools", "mytools:tools", cwd=tmp_path)
    out = say(child, "weather in Oslo?")
    assert 'Tool call：weather({"city": "Oslo"})' in out
    assert 'Tool result：weather({"city": "Oslo"}) -> sunny in Oslo' in out
    assert "AI：It is sunny." in out
    assert stored(home, "session_01") == [
        ("human", "weather in Oslo?"),
        ("ai", ""),
        ("tool", "sunny in Oslo"),
        ("ai", "It is sunny."),
    ]
    shown = say(child, "/show")
    assert 'ai: [calls weather({"city": "Oslo"})]' in shown and "tool: sunny in Oslo" in shown
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    assert fakellm.stats()  # the server saw the calls (the tool's result came back to it)


@pytest.mark.parametrize("spec", ["mytools:weather", "mytools:plain"])
def test_one_tool_or_plain_functions(
    fakellm: FakeLLM, home: dict[str, str], tmp_path: Path, spec: str
) -> None:
    fakellm.rules(TOOL_RULES)
    (tmp_path / "mytools.py").write_text(TOOLS_MODULE)
    question = "weather in Oslo?" if spec.endswith("weather") else "what time is it?"
    done = subprocess.run(
        [PLAIT, "chat", "--base-url", fakellm.base_url, "--tools", spec],
        input=question + "\n",
        capture_output=True,
        text=True,
        env=home,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    expected = "sunny in Oslo" if spec.endswith("weather") else "noon in UTC"
    assert f"-> {expected}" in done.stdout and "AI：It is sunny." in done.stdout


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("mytools", "is not module:attr"),
        ("nosuchmodule:tools", "no module 'nosuchmodule'"),
        ("mytools:nope", "'mytools' has no attribute 'nope'"),
        ("mytools:number", "holds 42 (int), which is not a tool"),
    ],
)
def test_bad_tools_are_usage_errors(home: dict[str, str], tmp_path: Path, spec: str, message: str) -> None:
    (tmp_path / "mytools.py").write_text(TOOLS_MODULE)
    done = subprocess.run(
        [PLAIT, "chat", "--tools", spec], input="", capture_output=True, text=True, env=home, cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert "--tools" in done.stderr and message in done.stderr and "Traceback" not in done.stderr


def test_undo_makes_the_thread_the_most_recently_updated(fakellm: FakeLLM, home: dict[str, str]) -> None:
    child = spawn(home, "--base-url", fakellm.base_url, "--thread", "a")
    say(child, "my name is Ana")
    say(child, "hi")
    say(child, "/switch b")
    say(child, "hi")
    say(child, "/switch a")
    assert "back to before: hi" in say(child, "/undo")
    threads = [line.strip() for line in say(child, "/threads").splitlines() if "checkpoints" in line]
    assert [line.lstrip("* ").split()[0] for line in threads] == ["a", "b"], threads  # newest first
    child.sendline("/exit")
    child.expect(pexpect.EOF)
