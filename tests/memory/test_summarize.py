"""summarize / summarize_node: prompts, placement, merging, tool groups, real graphs."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, MessagesState, StateGraph
from plait.graph.message import REMOVE_ALL_MESSAGES, add_messages
from plait.memory import (
    DEFAULT_PROMPT,
    SUMMARY_ID,
    MemoryBudgetWarning,
    SummarizationError,
    check_tool_groups,
    current_summary,
    per_message,
    summarize,
    summarize_node,
    with_summary,
)

sys.path.insert(0, str(Path(__file__).parent))
from test_groups import histories  # noqa: E402

HALF_LEN = per_message(lambda m: len(str(m.content)) // 2)


class FakeModel:
    """Deterministic summarizer/chat model that records every call."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def invoke(self, messages: list[BaseMessage]) -> AIMessage:
        self.calls.append(list(messages))
        last = str(messages[-1].content)
        if last.startswith(("Create a summary", "This is summary")):
            n = sum(1 for c in self.calls if str(c[-1].content).startswith(("Create", "This is")))
            return AIMessage(f"S{n}[{len(messages) - 1}]")
        return AIMessage(f"reply to {last}")


def ids(messages: list[BaseMessage]) -> list[str]:
    return [m.id for m in messages]


def apply(messages: list[BaseMessage], update: list[BaseMessage]) -> list[BaseMessage]:
    return add_messages(messages, update)  # type: ignore[return-value]


def chat(n: int) -> list[BaseMessage]:
    msgs: list[BaseMessage] = [SystemMessage("be nice", id="sys")]
    for i in range(n):
        msgs += [HumanMessage(f"q{i}", id=f"h{i}"), AIMessage(f"a{i}", id=f"a{i}")]
    return msgs


def test_first_summary_system_placement_goes_before_window() -> None:
    model = FakeModel()
    msgs = chat(3)
    result = summarize(msgs, model, keep_last=2)
    assert result is not None and result.summary == "S1[4]"
    assert ids(result.summarized) == ["h0", "a0", "h1", "a1"]
    # the summarizer sees only the older part, then the instruction
    assert [m.content for m in model.calls[0]] == ["q0", "a0", "q1", "a1", DEFAULT_PROMPT]
    assert isinstance(result.messages_update[0], RemoveMessage)
    assert result.messages_update[0].id == REMOVE_ALL_MESSAGES  # a positional insert was needed
    kept = apply(msgs, result.messages_update)
    assert ids(kept) == ["sys", SUMMARY_ID, "h2", "a2"]
    assert isinstance(kept[1], SystemMessage)
    assert kept[1].content == "Summary of the conversation so far: S1[4]"
    assert current_summary(kept) == "S1[4]"


def test_second_run_extends_and_replaces_in_place() -> None:
    model = FakeModel()
    msgs = apply(chat(3), summarize(chat(3), model, keep_last=2).messages_update)
    msgs = msgs + [HumanMessage("q3", id="h3"), AIMessage("a3", id="a3")]
    result = summarize(msgs, model, keep_last=2)
    assert model.calls[1][-1].content == (
        "This is summary of the conversation to date: S1[4]\n\n"
        "Extend the summary by taking into account the new messages above:"
    )
    assert [m.content for m in model.calls[1][:-1]] == ["q2", "a2"]  # old summary is not re-sent as a message
    assert not any(m.id == REMOVE_ALL_MESSAGES for m in result.messages_update)  # cheap path
    kept = apply(msgs, result.messages_update)
    assert ids(kept) == ["sys", SUMMARY_ID, "h3", "a3"]
    assert sum(m.id == SUMMARY_ID for m in kept) == 1
    assert current_summary(kept) == "S2[2]"


def test_misplaced_summary_is_moved_not_stacked() -> None:
    msgs = [*chat(3), SystemMessage("Summary of the conversation so far: OLD", id=SUMMARY_ID)]
    model = FakeModel()
    result = summarize(msgs, model, keep_last=2)
    assert "OLD" in model.calls[0][-1].content
    kept = apply(msgs, result.messages_update)
    assert ids(kept) == ["sys", SUMMARY_ID, "h2", "a2"]


def test_under_budget_or_nothing_older_returns_none() -> None:
    model = FakeModel()
    assert summarize(chat(3), model, max_messages=7, keep_last=2) is None
    assert summarize(chat(3), model, max_tokens=10_000, keep_last=2) is None
    assert summarize(chat(1), model, keep_last=2) is None
    assert model.calls == []
    assert summarize(chat(3), model, max_messages=6, keep_last=2) is not None


def test_field_placement() -> None:
    model = FakeModel()
    msgs = chat(3)
    result = summarize(msgs, model, keep_last=2, placement="field", existing_summary="earlier")
    assert "earlier" in model.calls[0][-1].content
    assert all(isinstance(m, RemoveMessage) for m in result.messages_update)
    assert result.state_update() == {"messages": result.messages_update, "summary": "S1[4]"}
    assert ids(apply(msgs, result.messages_update)) == ["sys", "h2", "a2"]
    view = with_summary(apply(msgs, result.messages_update), result.summary)
    assert ids(view) == ["sys", SUMMARY_ID, "h2", "a2"]
    assert with_summary(msgs, "") == msgs


def test_tool_group_on_the_boundary_is_summarized_whole() -> None:
    calls = [{"name": "t", "args": {}, "id": "c1"}, {"name": "t", "args": {}, "id": "c2"}]
    msgs = [
        HumanMessage("q", id="h"),
        AIMessage("", tool_calls=calls, id="a"),
        ToolMessage("r1", tool_call_id="c1", id="t1"),
        ToolMessage("r2", tool_call_id="c2", id="t2"),
        AIMessage("done", id="b"),
    ]
    model = FakeModel()
    result = summarize(msgs, model, keep_last=2)
    assert ids(result.summarized) == ["h", "a", "t1", "t2"]
    assert check_tool_groups(model.calls[0][:-1]) == []
    kept = apply(msgs, result.messages_update)
    assert ids(kept) == [SUMMARY_ID, "b"] and check_tool_groups(kept) == []


def test_block_content_and_string_responses() -> None:
    class Blocks:
        def invoke(self, messages):
            return AIMessage(content=[{"type": "text", "text": "part 1 "}, "part 2"])

    class Text:
        def invoke(self, messages):
            return "plain"

    assert summarize(chat(3), Blocks(), keep_last=2).summary == "part 1 part 2"
    assert summarize(chat(3), Text(), keep_last=2).summary == "plain"


def test_works_with_a_langchain_chat_model() -> None:
    model = FakeListChatModel(responses=["they said hi"])
    result = summarize(chat(3), model, keep_last=2)
    assert result.summary == "they said hi"


def test_errors() -> None:
    class Empty:
        def invoke(self, messages):
            return AIMessage("  ")

    with pytest.raises(SummarizationError, match="empty summary"):
        summarize(chat(3), Empty(), keep_last=2)
    with pytest.raises(TypeError, match="invoke"):
        summarize_node(object())
    with pytest.raises(ValueError, match="placement"):
        summarize_node(FakeModel(), placement="top")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keep_last"):
        summarize_node(FakeModel(), keep_last=-1)
    with pytest.raises(ValueError, match="max_tokens"):
        summarize_node(FakeModel(), max_tokens=-5)


def test_node_returns_empty_dict_when_nothing_to_do() -> None:
    node = summarize_node(FakeModel(), max_messages=100)
    assert node({"messages": chat(3)}) == {}
    assert node({}) == {}


def test_prompt_overrides() -> None:
    model = FakeModel()
    summarize(chat(3), model, keep_last=2, prompt="总结：")
    assert model.calls[0][-1].content == "总结："
    summarize(
        chat(3),
        model,
        keep_last=2,
        placement="field",
        existing_summary="X",
        extend_prompt="old={summary} {not a field}",
    )
    assert model.calls[1][-1].content == "old=X {not a field}"


# ------------------------------------------------------------- property


@settings(max_examples=250, deadline=None)
@given(
    histories(), st.integers(0, 6), st.sampled_from(["system", "field"]), st.lists(st.booleans(), max_size=3)
)
def test_property_summarize(messages, keep, placement, more_rounds) -> None:
    model = FakeModel()
    node = summarize_node(model, keep_last=keep, placement=placement)
    state = {"messages": messages, "summary": ""}
    for extra in [False, *more_rounds]:
        if extra:
            n = len(model.calls)
            state["messages"] = state["messages"] + [
                HumanMessage("more", id=f"x{n}"),
                AIMessage("ok", id=f"y{n}"),
            ]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MemoryBudgetWarning)
            update = node(state)
        if not update:
            continue
        before = state["messages"]
        known = set(ids(before))
        removals = [
            m for m in update["messages"] if isinstance(m, RemoveMessage) and m.id != REMOVE_ALL_MESSAGES
        ]
        assert all(r.id in known for r in removals)
        assert check_tool_groups(model.calls[-1][:-1]) == []  # the summarizer gets whole groups
        state["messages"] = apply(state["messages"], update["messages"])
        state["summary"] = update.get("summary", state["summary"])
        kept = state["messages"]
        assert check_tool_groups(kept) == []
        body = [m for m in kept if m.id != SUMMARY_ID]
        lead = 0
        while lead < len(body) and isinstance(body[lead], SystemMessage):
            lead += 1
        assert len(body) - lead <= keep  # window respects keep_last
        if placement == "system":
            assert ids(kept).count(SUMMARY_ID) == 1
            at = ids(kept).index(SUMMARY_ID)
            assert all(
                isinstance(m, SystemMessage) for m in kept[:at]
            )  # only leading system messages before it
            assert len(kept) - at - 1 <= keep  # then the kept window
            assert ids(kept[at + 1 :]) == ids(before[len(before) - (len(kept) - at - 1) :])
        else:
            assert SUMMARY_ID not in ids(kept) and state["summary"]


# ------------------------------------------------------------- real graphs


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def test_seed004_summarize_above_100_tokens_keep_last_4() -> None:
    model = FakeModel()
    builder = StateGraph(State)
    builder.add_node("summarize", summarize_node(model, max_tokens=100, keep_last=4, token_counter=HALF_LEN))
    builder.add_node("llm", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "summarize")
    builder.add_edge("summarize", "llm")
    builder.add_edge("llm", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "session_001"}}
    for i in range(10):
        graph.invoke(
            {"messages": [("user", f"第{i}轮对话，测试内容，增加文本长度，测试摘要压缩效果测试测试测试")]},
            cfg,
        )
        msgs = graph.get_state(cfg).values["messages"]
        summaries = [m for m in msgs if isinstance(m, SystemMessage)]
        assert len(summaries) <= 1  # never stacked
        if summaries:
            assert msgs[0].id == SUMMARY_ID  # before the kept window, not appended after it
            assert len(msgs) == 6  # summary + last 4 + the new reply
        chat_view = [c for c in model.calls if not str(c[-1].content).startswith(("Create", "This is"))][-1]
        assert chat_view[-1].type == "human"
    final = graph.get_state(cfg).values["messages"]
    assert [m.type for m in final] == ["system", "ai", "human", "ai", "human", "ai"]
    assert final[-2].content.startswith("第9轮")
    summary_prompts = [
        c[-1].content for c in model.calls if str(c[-1].content).startswith(("Create", "This is"))
    ]
    assert summary_prompts[0] == DEFAULT_PROMPT
    assert all(p.startswith("This is summary") for p in summary_prompts[1:])


def test_seed002_q6_chatbot_with_field_placement() -> None:
    model = FakeModel()

    class ChatState(MessagesState):
        summary: str

    def conversation(state: ChatState) -> dict:
        return {"messages": [model.invoke(with_summary(state["messages"], state.get("summary")))]}

    workflow = StateGraph(ChatState)
    workflow.add_node("conversation", conversation)
    workflow.add_node("summarize", summarize_node(model, max_messages=6, keep_last=2, placement="field"))
    workflow.add_edge(START, "conversation")
    workflow.add_edge("conversation", "summarize")
    workflow.add_edge("summarize", END)
    graph = workflow.compile(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "1"}}
    sizes, summaries = [], []
    for i in range(7):
        out = graph.invoke({"messages": [HumanMessage(f"Message {i + 1}")]}, cfg)
        sizes.append(len(out["messages"]))
        summaries.append(graph.get_state(cfg).values.get("summary", ""))
    assert sizes == [2, 4, 6, 2, 4, 6, 2]
    assert summaries == ["", "", "", "S1[6]", "S1[6]", "S1[6]", "S2[6]"]
    round5 = model.calls[5]
    assert round5[0].content == "Summary of the conversation so far: S1[6]"
    assert [m.content for m in round5[1:]] == ["Message 4", "reply to Message 4", "Message 5"]


def test_summarize_on_a_thread_with_update_state() -> None:
    model = FakeModel()
    builder = StateGraph(MessagesState)
    builder.add_node("llm", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "llm")
    builder.add_edge("llm", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [SystemMessage("sys", id="sys"), HumanMessage("hi")]}, cfg)
    for i in range(3):
        graph.invoke({"messages": [HumanMessage(f"m{i}")]}, cfg)
    result = summarize(graph.get_state(cfg).values["messages"], model, keep_last=2)
    graph.update_state(cfg, result.state_update())
    msgs = graph.get_state(cfg).values["messages"]
    assert ids(msgs)[:2] == ["sys", SUMMARY_ID] and len(msgs) == 4
