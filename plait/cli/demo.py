"""``plait demo``: the seed-000 customer-service graph, four turns, on a durable thread.

Three reducers work side by side: ``add_messages`` for the transcript,
``operator.add`` for the turn counter and a de-duplicating merge for topics; a
``trim`` node keeps the transcript at six messages with ``RemoveMessage``. The
model is an offline, deterministic stand-in so the demo runs anywhere.
"""

from __future__ import annotations

import operator
import tempfile
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Annotated, Any

import click
from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig

from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite import SqliteSaver
from plait.graph import END, START, MessagesState, StateGraph

__all__ = ["OfflineModel", "build_graph", "demo"]

KEYWORDS = {
    "退货": "售后",
    "退款": "售后",
    "换货": "售后",
    "发货": "物流",
    "快递": "物流",
    "滤芯": "设备",
    "refund": "after-sales",
    "return": "after-sales",
    "ship": "logistics",
    "filter": "devices",
}
MAX_MESSAGES = 6
QUESTIONS = ["我想退货，多少天内可以？", "那换货呢？", "顺便问下发货一般要多久", "滤芯多久换一次？"]


def merge_unique(old: list[str], new: list[str]) -> list[str]:
    """Reducer: append the new topics that are not there yet (never mutates ``old``)."""
    return old + [t for i, t in enumerate(new) if t not in old and t not in new[:i]]


class ChatState(MessagesState):
    """The transcript plus two slots that survive trimming."""

    turn: Annotated[int, operator.add]
    topics: Annotated[list[str], merge_unique]


class OfflineModel:
    """A deterministic chat model: answers from the topics it is told about."""

    ANSWERS = {
        "售后": "签收后 7 天内可无理由退货，15 天内可换货。",
        "物流": "现货 48 小时内发出。",
        "设备": "滤芯建议每 3-6 个月更换一次。",
    }

    def invoke(self, messages: list[Any]) -> AIMessage:
        """Reply to the last user message."""
        last = messages[-1]
        text = str(last.content if isinstance(last, BaseMessage) else last["content"])
        topics = [t for k, t in KEYWORDS.items() if k in text]
        answer = " ".join(self.ANSWERS.get(t, "") for t in topics) or "请问还有什么可以帮您？"
        return AIMessage(answer)


def build_graph(model: Any = None) -> StateGraph[Any, Any, Any, Any]:
    """The demo graph: detect_topic → respond → trim."""
    model = model or OfflineModel()

    def detect_topic(state: ChatState) -> dict[str, object]:
        text = str(state["messages"][-1].content)
        return {"turn": 1, "topics": [t for k, t in KEYWORDS.items() if k in text]}

    def respond(state: ChatState) -> dict[str, object]:
        system = (
            f"你是客服助手。当前是第 {state['turn']} 轮，已识别话题：{'、'.join(state['topics']) or '暂无'}。"
        )
        return {"messages": [model.invoke([{"role": "system", "content": system}, *state["messages"]])]}

    def trim(state: ChatState) -> dict[str, object]:
        extra = len(state["messages"]) - MAX_MESSAGES
        if extra <= 0:
            return {}
        # add_messages gave every message an id
        return {"messages": [RemoveMessage(id=m.id) for m in state["messages"][:extra] if m.id is not None]}

    builder = StateGraph(ChatState)
    builder.add_sequence([detect_topic, respond, trim])
    builder.add_edge(START, "detect_topic")
    builder.add_edge("trim", END)
    return builder


def _saver(db: str) -> AbstractContextManager[object]:
    if db == ":memory:":
        return nullcontext(InMemorySaver())
    return SqliteSaver.from_conn_string(db)


@click.command()
@click.option(
    "--db", default=None, help="SQLite file for the thread (default: a temporary file; ':memory:' for none)."
)
@click.option("--thread", "thread_id", default="demo-001", show_default=True, help="Thread id.")
def demo(db: str | None, thread_id: str) -> None:
    """Run the customer-service demo for four turns on a durable thread."""
    with tempfile.TemporaryDirectory() as tmp:
        path = db or str(Path(tmp) / "plait-demo.sqlite")
        with _saver(path) as saver:
            graph = build_graph().compile(checkpointer=saver)
            config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
            for question in QUESTIONS:
                out = graph.invoke({"messages": [{"role": "user", "content": question}]}, config)
                click.echo(f"\n用户：{question}\n助手：{out['messages'][-1].content}")
                click.echo(
                    f"  [state] turn={out['turn']}  topics={out['topics']}  messages={len(out['messages'])}"
                )
            snapshot = graph.get_state(config)
            history = sum(1 for _ in graph.get_state_history(config))
            step = (snapshot.metadata or {}).get("step")
            click.echo(
                f"\nthread {thread_id!r}: {history} checkpoints, step {step}, "
                f"stored in {path if db else 'a temporary SQLite file'}"
            )
