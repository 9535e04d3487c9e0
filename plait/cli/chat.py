"""``plait chat``: a terminal chat with an OpenAI-compatible model on durable threads.

Seed 004's session program as a product: ``/switch <thread_id>``, ``/show``,
``/clear``, ``/exit``, plus ``/threads``, ``/history``, ``/undo``, ``/fork`` and
``/help``. Replies stream token by token; ``--tools module:attr`` gives the agent the user's
tools, and each call and result is shown. Threads live in a SQLite file in the
user's data directory (``--db`` for another file or a PostgreSQL DSN). A turn
that fails (model server down, timing out, an HTTP error, Ctrl-C) is rolled
back: the thread never holds a question without its answer.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, cast

import click
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, HumanMessage, RemoveMessage

from plait.agents import create_agent, memory_hook
from plait.checkpoint.base import BaseCheckpointSaver
from plait.checkpoint.sqlite import SqliteSaver
from plait.cli._tools import Printer, call_text, load_tools, tool_name
from plait.cli.inspect import open_saver
from plait.graph.message import REMOVE_ALL_MESSAGES
from plait.memory.summarize import SupportsInvoke

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "Session", "StopReply", "chat", "data_dir"]

DEFAULT_BASE_URL = "http://127.0.0.1:11433/v1"
"""The seed's local llama.cpp server (used when ``OPENAI_BASE_URL`` is not set)."""

DEFAULT_MODEL = "qwen2.5-1.5b-instruct-q4_k_m.gguf"
"""The seed's model name (llama.cpp serves whatever it loaded under any name)."""

HELP = """commands:
  /switch <thread_id>  switch to (or start) a thread
  /show                print the current thread's messages
  /clear               remove the current thread's messages
  /threads             list the threads in the database
  /history             list the current thread's checkpoints
  /undo                go back one turn (time travel to before the last question)
  /fork [thread_id]    copy the current thread into a new one and switch to it
  /help                this text
  /exit                quit (also Ctrl-D)"""


def data_dir() -> Path:
    """Where ``plait chat`` keeps its database and input history (per user, per platform)."""
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming") / "plait"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "plait"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "plait"


def _root(error: BaseException) -> BaseException:
    while error.__cause__ is not None or error.__context__ is not None:
        error = error.__cause__ or error.__context__  # type: ignore[assignment]  # the loop condition
    return error


def _cause(error: BaseException, base_url: str, timeout: float) -> str:
    """One line naming the model server and what went wrong."""
    name = type(error).__name__
    status = getattr(error, "status_code", None)
    if status is not None:
        detail = str(getattr(error, "message", "") or error).splitlines()[0][:200]
        return f"model server {base_url} answered HTTP {status}: {detail}"
    if "Timeout" in name:
        return f"model server {base_url} did not answer within {timeout:g} s (timeout)"
    if "Connection" in name:
        return f"cannot reach model server {base_url} ({_root(error)}); is it running?"
    return (
        f"model call to {base_url} failed: {name}: {str(error).splitlines()[0][:200] if str(error) else ''}"
    )


class StopReply(Exception):  # noqa: N818 - a signal, not an error
    """Raised inside the model call to end a reply the user interrupted."""


class _Stopper(BaseCallbackHandler):
    """Ends the model call at its next token once :attr:`stop` is set (Ctrl-C in the main thread)."""

    raise_error = True

    def __init__(self) -> None:
        self.stop = threading.Event()

    def on_llm_new_token(self, token: str | list[str | dict[str, Any]], **kwargs: Any) -> None:
        if self.stop.is_set():
            raise StopReply("interrupted")


class _QuietStops(logging.Filter):
    """Drops langchain's warning about :class:`StopReply` raised in a callback: it is how Ctrl-C
    ends a reply (the model call runs on in a worker thread until its next token), not an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "_Stopper." not in record.getMessage()


_QUIET_STOPS = _QuietStops()


@contextlib.contextmanager
def _stop_on_interrupt(stopper: _Stopper) -> Generator[None, None, None]:
    """While a reply streams, Ctrl-C first tells the model call to stop (it runs in a worker
    thread the run waits for), then interrupts the main thread as usual."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(signum: int, frame: FrameType | None) -> None:
        stopper.stop.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Session:
    """One ``plait chat`` session: the agent, the current thread and the commands.

    Args:
        agent: The compiled agent (with a checkpointer).
        saver: Its checkpointer.
        thread_id: The thread to start on.
        describe_error: Turns a failed model call into one line.
        echo: Prints a line (``click.echo``).
    """

    def __init__(  # noqa: PLR0913 - the session's parts
        self,
        agent: Any,
        saver: BaseCheckpointSaver,
        thread_id: str,
        describe_error: Callable[[BaseException], str],
        echo: Callable[[str], None] = click.echo,
    ) -> None:
        self.agent = agent
        self.saver = saver
        self.thread_id = thread_id
        self.describe_error = describe_error
        self.echo = echo

    @property
    def config(self) -> dict[str, object]:
        """The current thread's config."""
        return {"configurable": {"thread_id": self.thread_id}}

    def messages(self) -> list[Any]:
        """The current thread's messages."""
        return list(self.agent.get_state(self.config).values.get("messages", []))

    # -- a turn -------------------------------------------------------------------------------

    def turn(self, text: str) -> bool:
        """Ask the model; stream its reply. On any failure, roll the thread back and say why.

        Returns:
            Whether the turn was stored.
        """
        before = self.agent.get_state(self.config)
        try:
            self._stream(text)
        except KeyboardInterrupt:
            self.echo("")
            self._rollback(before)
            self.echo(">>> interrupted; the question and the partial reply were not stored")
            return False
        except Exception as exc:  # noqa: BLE001 - every model failure ends as one line
            self.echo("")
            self._rollback(before)
            self.echo(f"error: {self.describe_error(exc)}")
            return False
        return True

    def _stream(self, text: str) -> None:
        stopper = _Stopper()
        config = {**self.config, "callbacks": [stopper]}
        logging.getLogger("langchain_core.callbacks.manager").addFilter(_QUIET_STOPS)
        printer = Printer()
        with _stop_on_interrupt(stopper):
            for mode, data in self.agent.stream(
                {"messages": [HumanMessage(content=text)]}, config, stream_mode=["messages", "updates"]
            ):
                if mode == "updates":
                    printer.update(data)
                    continue
                chunk, meta = data
                if meta.get("langgraph_node") == "model" and isinstance(chunk, AIMessageChunk) and chunk.text:
                    printer.text(chunk.text)
        if not printer.started:  # a model that does not stream: print the stored answer
            printer.text(str(self.messages()[-1].text))
        click.echo("")

    def _rollback(self, before: Any) -> None:
        """Make the thread what it was before the turn (a time-travel fork, or delete a new thread)."""
        now = self.agent.get_state(self.config)
        if now.config.get("configurable", {}).get("checkpoint_id") == before.config.get(
            "configurable", {}
        ).get("checkpoint_id"):
            return
        if before.config.get("configurable", {}).get("checkpoint_id") is None:
            self.saver.delete_thread(self.thread_id)
        else:
            self.agent.update_state(before.config, None, as_node="__copy__")

    # -- commands -----------------------------------------------------------------------------

    def command(self, line: str) -> bool:
        """Run a ``/command``. Returns ``False`` for ``/exit``."""
        name, _, arg = line.partition(" ")
        arg = arg.strip()
        actions: dict[str, Callable[[str], None]] = {
            "/switch": self._switch,
            "/show": lambda _: self._show(),
            "/clear": lambda _: self._clear(),
            "/threads": lambda _: self._threads(),
            "/history": lambda _: self._history(),
            "/undo": lambda _: self._undo(),
            "/fork": self._fork,
            "/help": lambda _: self.echo(HELP),
        }
        if name.lower() in ("/exit", "/quit"):
            return False
        action = actions.get(name)
        if action is None:
            self.echo(f">>> unknown command {name}; /help lists them")
        else:
            action(arg)
        return True

    def _switch(self, arg: str) -> None:
        if not arg:
            self.echo(">>> usage: /switch <thread_id>")
            return
        self.thread_id = arg
        self.echo(f">>> switched to thread_id = {arg}")

    def _show(self) -> None:
        self.echo(f"---- thread {self.thread_id} ----")
        for message in self.messages():
            calls = cast("list[Mapping[str, Any]]", getattr(message, "tool_calls", None) or [])
            shown = [message.text] if message.text or not calls else []
            shown += [f"[calls {call_text(str(c.get('name')), c.get('args'))}]" for c in calls]
            self.echo(f"{message.type}: {' '.join(shown)}")

    def _clear(self) -> None:
        if self.messages():
            self.agent.update_state(self.config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)]})
        self.echo(f">>> cleared thread {self.thread_id}")

    def _threads(self) -> None:
        infos = sorted(self.saver.threads(), key=lambda i: i.updated_at, reverse=True)
        for info in infos:
            mark = "*" if info.thread_id == self.thread_id else " "
            self.echo(f"{mark} {info.thread_id}  ({info.checkpoints} checkpoints, updated {info.updated_at})")
        if not infos:
            self.echo(">>> no threads yet")

    def _history(self) -> None:
        for snapshot in self.agent.get_state_history(self.config):
            count = len(snapshot.values.get("messages", []))
            source = snapshot.metadata.get("source", "") if snapshot.metadata else ""
            checkpoint_id = snapshot.config["configurable"]["checkpoint_id"]
            self.echo(
                f"{checkpoint_id}  step {snapshot.metadata.get('step', '?')}  {source:6s} {count} messages"
            )

    def _undo(self) -> None:
        messages = self.messages()
        last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].type == "human"), None)
        if last is None:
            self.echo(">>> nothing to undo")
            return
        keep = [m.id for m in messages[:last]]
        for snapshot in self.agent.get_state_history(self.config):
            if [m.id for m in snapshot.values.get("messages", [])] == keep and not snapshot.next:
                self.agent.update_state(snapshot.config, None, as_node="__copy__")
                self.echo(f">>> back to before: {messages[last].text[:60]}")
                return
        self.agent.update_state(self.config, {"messages": [RemoveMessage(id=m.id) for m in messages[last:]]})
        self.echo(f">>> removed the last turn: {messages[last].text[:60]}")

    def _fork(self, arg: str) -> None:
        messages = self.messages()
        target = arg or f"{self.thread_id}-fork"
        if self.agent.get_state({"configurable": {"thread_id": target}}).values.get("messages"):
            self.echo(f">>> thread {target} already exists; name another: /fork <thread_id>")
            return
        if messages:
            self.agent.update_state({"configurable": {"thread_id": target}}, {"messages": messages})
        self.thread_id = target
        self.echo(f">>> forked into thread_id = {target} ({len(messages)} messages)")


def _read_lines(history: Path) -> Iterator[str]:
    """Input lines: with line editing and history in a terminal, plain lines from a pipe."""
    readline: ModuleType | None = None
    if sys.stdin.isatty():
        try:
            import readline as line_editing

            history.parent.mkdir(parents=True, exist_ok=True)
            if history.exists():
                line_editing.read_history_file(history)
            readline = line_editing
        except (ImportError, OSError):  # no readline (Windows): plain input
            readline = None
    try:
        while True:
            try:
                yield input("\nHuman: ")
            except EOFError:
                return
            except KeyboardInterrupt:  # Ctrl-C at the prompt: a fresh prompt, like a shell
                click.echo("")
    finally:
        if readline is not None:
            try:
                readline.write_history_file(history)
            except OSError:
                pass


def _chat_model(model: str, base_url: str, api_key: str, timeout: float) -> BaseChatModel:
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:
        raise click.ClickException(
            "plait chat needs langchain-openai; install it with: pip install 'plait[openai]'"
        ) from None
    from pydantic import SecretStr

    return ChatOpenAI(
        model=model, base_url=base_url, api_key=SecretStr(api_key), timeout=timeout, max_retries=0
    )


@contextmanager
def _saver(db: str | None) -> Generator[BaseCheckpointSaver, None, None]:
    if db is not None and db.startswith(("postgres://", "postgresql://")):
        with open_saver(db, create=True) as saver:
            yield saver
        return
    path = Path(db) if db else data_dir() / "chat.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    manager: AbstractContextManager[BaseCheckpointSaver] = SqliteSaver.from_conn_string(str(path))
    with manager as saver:
        yield saver


def _hook(
    keep_last: int | None, max_tokens: int | None, summarize: bool, model: SupportsInvoke
) -> Callable[[object], Mapping[str, object]] | None:
    if summarize and keep_last is None and max_tokens is None:
        raise click.UsageError("--summarize needs a budget: --keep-last N or --max-tokens N")
    if keep_last is not None and max_tokens is not None and not summarize:
        raise click.UsageError("use --keep-last or --max-tokens, not both (or add --summarize)")
    if keep_last is None and max_tokens is None:
        return None
    return memory_hook(keep_last=keep_last, max_tokens=max_tokens, summarize=model if summarize else None)


@click.command()
@click.option(
    "--db", default=None, help="SQLite file or postgresql:// DSN [default: chat.sqlite in the data dir]."
)
@click.option(
    "--base-url",
    default=None,
    help=f"OpenAI-compatible API [default: $OPENAI_BASE_URL or {DEFAULT_BASE_URL}].",
)
@click.option("--model", default=DEFAULT_MODEL, show_default=True, help="Model name sent to the server.")
@click.option("--api-key", default=None, help="API key [default: $OPENAI_API_KEY or 'dummy'].")
@click.option("--system", default=None, help="System prompt.")
@click.option(
    "--keep-last", type=click.IntRange(min=1), default=None, help="Model sees the newest N messages."
)
@click.option("--max-tokens", type=click.IntRange(min=1), default=None, help="Model sees at most N tokens.")
@click.option("--summarize", is_flag=True, help="Summarize older messages instead of hiding them.")
@click.option("--thread", default="session_01", show_default=True, help="Thread to start on.")
@click.option(
    "--timeout", type=float, default=120.0, show_default=True, help="Seconds to wait for the model."
)
@click.option(
    "--tools",
    "tools_spec",
    default=None,
    metavar="MODULE:ATTR",
    help="Tools for the agent: a list of tools (or one tool, or functions) in MODULE, imported from "
    "the current directory; e.g. mytools:tools.",
)
def chat(  # noqa: PLR0913 - one parameter per option
    db: str | None,
    base_url: str | None,
    model: str,
    api_key: str | None,
    system: str | None,
    keep_last: int | None,
    max_tokens: int | None,
    summarize: bool,
    thread: str,
    timeout: float,
    tools_spec: str | None,
) -> None:
    """Chat with a model on durable threads (/help lists the commands)."""
    tools = load_tools(tools_spec) if tools_spec else []
    url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    llm = _chat_model(model, url, api_key or os.environ.get("OPENAI_API_KEY") or "dummy", timeout)
    hook = _hook(keep_last, max_tokens, summarize, llm)
    with _saver(db) as saver:
        agent = create_agent(llm, tools=tools, system_prompt=system, checkpointer=saver, pre_model_hook=hook)
        session = Session(agent, saver, thread, lambda exc: _cause(exc, url, timeout))
        names = ", ".join(tool_name(t) for t in tools)
        click.echo(
            f"plait chat: model {model} at {url}; thread {thread}; "
            f"{f'tools {names}; ' if tools else ''}/help lists the commands"
        )
        for line in _read_lines(data_dir() / "chat_history"):
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                if not session.command(text):
                    break
                continue
            session.turn(text)
