"""keep_last / keep_within_tokens / views / trim_node: units, properties, real graphs."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, MessagesState, StateGraph
from plait.graph.message import add_messages
from plait.memory import (
    MemoryBudgetWarning,
    MissingMessageIdError,
    TokenCounterError,
    check_tool_groups,
    keep_last,
    keep_within_tokens,
    per_message,
    resolve_token_counter,
    trim_node,
    view_last,
    view_within_tokens,
)
from plait.memory._groups import units

sys.path.insert(0, str(Path(__file__).parent))
from test_groups import histories  # noqa: E402

HALF_LEN = per_message(lambda m: len(str(m.content)) // 2)


def call(call_id: str) -> dict:
    return {"name": "lookup", "args": {}, "id": call_id}


def ids(messages: list[BaseMessage]) -> list[str]:
    return [m.id for m in messages]


def apply(messages: list[BaseMessage], update: list[BaseMessage]) -> list[BaseMessage]:
    return add_messages(messages, update)  # type: ignore[return-value]


def chat(n: int, *, system: bool = True) -> list[BaseMessage]:
    msgs: list[BaseMessage] = [SystemMessage("be nice", id="sys")] if system else []
    for i in range(n):
        msgs += [HumanMessage(f"q{i}", id=f"h{i}"), AIMessage(f"a{i}", id=f"a{i}")]
    return msgs


AGENT = [
    SystemMessage("sys", id="sys"),
    HumanMessage("weather in Paris and Rome?", id="h1"),
    AIMessage("", tool_calls=[call("c1"), call("c2")], id="a1"),
    ToolMessage("sunny", tool_call_id="c1", id="t1"),
    ToolMessage("rain", tool_call_id="c2", id="t2"),
    AIMessage("Paris sunny, Rome rain", id="a2"),
    HumanMessage("thanks", id="h2"),
]


# ---------------------------------------------------------------- keep_last


def test_keep_last_basic_and_system_pinned() -> None:
    msgs = chat(3)
    removals = keep_last(msgs, 2)
    assert all(isinstance(r, RemoveMessage) for r in removals)
    assert ids(removals) == ["h0", "a0", "h1", "a1"]
    assert ids(apply(msgs, removals)) == ["sys", "h2", "a2"]


def test_keep_last_without_system_and_with_first() -> None:
    msgs = chat(3)
    assert ids(apply(msgs, keep_last(msgs, 2, keep_system=False))) == ["h2", "a2"]
    assert ids(apply(msgs, keep_last(msgs, 2, keep_first=True))) == ["sys", "h0", "h2", "a2"]
    # without keep_system, keep_first pins the very first message
    assert ids(apply(msgs, keep_last(msgs, 1, keep_first=True, keep_system=False))) == ["sys", "a2"]


def test_keep_last_nothing_to_do() -> None:
    assert keep_last(chat(2), 4) == []
    assert keep_last([], 3) == []


def test_keep_last_zero_removes_all_but_head() -> None:
    msgs = chat(2)
    assert ids(apply(msgs, keep_last(msgs, 0))) == ["sys"]


def test_keep_last_drops_a_split_group() -> None:
    # the last 4 would start at t2, inside the tool group: the whole group goes
    assert ids(apply(AGENT, keep_last(AGENT, 4))) == ["sys", "a2", "h2"]
    assert ids(apply(AGENT, keep_last(AGENT, 5))) == ["sys", "a1", "t1", "t2", "a2", "h2"]


def test_keep_last_warns_when_newest_group_exceeds_n() -> None:
    msgs = AGENT[:5]
    with pytest.warns(MemoryBudgetWarning, match="tool-call group"):
        removals = keep_last(msgs, 2)
    assert ids(apply(msgs, removals)) == ["sys"]


def test_keep_first_keeps_whole_first_group() -> None:
    msgs = AGENT[2:]
    assert ids(apply(msgs, keep_last(msgs, 1, keep_first=True))) == ["a1", "t1", "t2", "h2"]


def test_mid_history_system_messages_are_not_pinned() -> None:
    msgs = [*chat(1), SystemMessage("note", id="note"), *chat(2, system=False)[2:]]
    assert ids(apply(msgs, keep_last(msgs, 2))) == ["sys", "h1", "a1"]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="n must be an int >= 0"):
        keep_last(chat(1), -1)
    with pytest.raises(ValueError, match="max_tokens"):
        keep_within_tokens(chat(1), 1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"messages\[0\] is str"):
        keep_last(["hi"], 1)  # type: ignore[list-item]


def test_missing_id_is_a_typed_error() -> None:
    msgs = [HumanMessage("old"), HumanMessage("new", id="n")]
    with pytest.raises(MissingMessageIdError, match=r"messages\[0\]"):
        keep_last(msgs, 1)
    assert keep_last(msgs, 2) == []  # id-less messages that are kept are fine
    assert view_last(msgs, 1) == [msgs[1]]  # views need no ids


def test_view_last_leaves_input_alone() -> None:
    msgs = chat(3)
    before = list(msgs)
    assert ids(view_last(msgs, 2, keep_first=True)) == ["sys", "h0", "h2", "a2"]
    assert msgs == before


# ----------------------------------------------------------- token counters


def test_default_counter_is_count_tokens_approximately() -> None:
    msgs = chat(2)
    assert resolve_token_counter()(msgs) == count_tokens_approximately(msgs)


def test_list_callable_model_and_per_message_counters() -> None:
    class Model:
        def get_num_tokens_from_messages(self, messages: list[BaseMessage]) -> int:
            return 10 * len(messages)

    msgs = chat(2)
    assert resolve_token_counter(len)(msgs) == 5
    assert resolve_token_counter(Model())(msgs) == 50
    assert resolve_token_counter(per_message(lambda m: 2))(msgs) == 10


def test_per_message_function_passed_directly_gets_a_hint() -> None:
    with pytest.raises(TokenCounterError, match="per_message"):
        keep_within_tokens(chat(3), 5, token_counter=lambda m: len(m.content))


def test_bad_counters() -> None:
    with pytest.raises(TokenCounterError, match="got int"):
        resolve_token_counter(42)  # type: ignore[arg-type]
    with pytest.raises(TokenCounterError, match="not a count"):
        keep_within_tokens(chat(3), 5, token_counter=lambda msgs: "many")
    with pytest.raises(TokenCounterError):
        trim_node(max_tokens=10, token_counter=object())  # type: ignore[arg-type]


# ------------------------------------------------------- keep_within_tokens


def test_keep_within_tokens_under_budget_is_noop() -> None:
    assert keep_within_tokens(chat(2), 10_000) == []


def test_keep_within_tokens_keeps_newest_that_fit() -> None:
    msgs = chat(4)  # every message costs 1 with len
    removals = keep_within_tokens(msgs, 4, token_counter=len)
    assert ids(apply(msgs, removals)) == ["sys", "a2", "h3", "a3"]
    removals = keep_within_tokens(msgs, 4, token_counter=len, keep_first=True)
    assert ids(apply(msgs, removals)) == ["sys", "h0", "h3", "a3"]


def test_keep_within_tokens_respects_groups() -> None:
    kept = apply(AGENT, keep_within_tokens(AGENT, 5, token_counter=len))
    assert ids(kept) == ["sys", "a2", "h2"]
    assert check_tool_groups(kept) == []


def test_keep_within_tokens_head_over_budget_warns() -> None:
    msgs = [SystemMessage("x" * 100, id="s"), HumanMessage("hi", id="h")]
    with pytest.warns(MemoryBudgetWarning, match="pinned head"):
        removals = keep_within_tokens(msgs, 10, token_counter=HALF_LEN)
    assert ids(removals) == ["h"]


def test_view_within_tokens() -> None:
    msgs = chat(4)
    assert ids(view_within_tokens(msgs, 3, token_counter=len)) == ["sys", "h3", "a3"]


# ----------------------------------------------------------------- trim_node


def test_trim_node_arguments() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        trim_node()
    with pytest.raises(ValueError, match="exactly one"):
        trim_node(3, max_tokens=10)
    with pytest.raises(ValueError, match="n must be"):
        trim_node(-2)


def test_trim_node_returns_empty_dict_when_nothing_to_do() -> None:
    node = trim_node(10)
    assert node({"messages": chat(1)}) == {}
    assert node({}) == {}


def test_trim_node_custom_key_and_object_state() -> None:
    class State:
        history = chat(3)

    node = trim_node(2, key="history")
    assert ids(node(State())["history"]) == ["h0", "a0", "h1", "a1"]


# ------------------------------------------------------------- properties


def check_removals(messages: list[BaseMessage], removals: list[RemoveMessage]) -> list[BaseMessage]:
    """Shared invariants; returns the kept history."""
    known = set(ids(messages))
    assert all(isinstance(r, RemoveMessage) and r.id in known for r in removals)
    assert len(set(ids(removals))) == len(removals)
    kept = apply(messages, removals)
    assert check_tool_groups(kept) == []
    return kept


def head_len(messages: list[BaseMessage], keep_system: bool, keep_first: bool) -> int:
    end = 0
    while keep_system and end < len(messages) and isinstance(messages[end], SystemMessage):
        end += 1
    if keep_first:
        end = next((stop for start, stop in units(messages) if start == end), end)
    return end


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(0, 12), st.booleans(), st.booleans())
def test_property_keep_last(messages: list[BaseMessage], n: int, keep_first: bool, keep_system: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryBudgetWarning)
        removals = keep_last(messages, n, keep_first=keep_first, keep_system=keep_system)
        view = view_last(messages, n, keep_first=keep_first, keep_system=keep_system)
        node_update = trim_node(n, keep_first=keep_first, keep_system=keep_system)({"messages": messages})
    kept = check_removals(messages, removals)
    assert ids(view) == ids(kept)
    assert node_update == ({"messages": removals} if removals else {})
    head = head_len(messages, keep_system, keep_first)
    window = len(kept) - head
    assert ids(kept) == ids(messages[:head]) + (ids(messages[-window:]) if window else [])
    assert window <= n  # budget respected
    start = len(messages) - window
    before = [span for span in units(messages) if span[1] == start and span[0] >= head]
    if before:  # maximal: the next older unit would not have fit
        assert window + before[0][1] - before[0][0] > n


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(0, 120), st.booleans(), st.booleans(), st.sampled_from(["approx", "half"]))
def test_property_keep_within_tokens(
    messages: list[BaseMessage], max_tokens: int, keep_first: bool, keep_system: bool, counter_name: str
) -> None:
    counter = None if counter_name == "approx" else HALF_LEN
    count = resolve_token_counter(counter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryBudgetWarning)
        kwargs = {"token_counter": counter, "keep_first": keep_first, "keep_system": keep_system}
        removals = keep_within_tokens(messages, max_tokens, **kwargs)
        view = view_within_tokens(messages, max_tokens, **kwargs)
        node_update = trim_node(max_tokens=max_tokens, **kwargs)({"messages": messages})
    kept = check_removals(messages, removals)
    assert ids(view) == ids(kept)
    assert node_update == ({"messages": removals} if removals else {})
    if count(messages) <= max_tokens:
        assert removals == []
        return
    head = head_len(messages, keep_system, keep_first)
    if count(messages[:head]) <= max_tokens:
        assert count(kept) <= max_tokens  # budget respected whenever possible
    window = len(kept) - head
    start = len(messages) - window
    before = [span for span in units(messages) if span[1] == start and span[0] >= head]
    if before and count(messages[:head]) <= max_tokens:  # maximal
        assert count(messages[:head] + messages[before[0][0] :]) > max_tokens


# ------------------------------------------------------------- real graphs


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class ReplayModel:
    """Deterministic chat model: replies 'reply <n>' and records its inputs."""

    def __init__(self, replies: list[str] | None = None) -> None:
        self.replies = replies
        self.calls: list[list[BaseMessage]] = []

    def invoke(self, messages: list[BaseMessage]) -> AIMessage:
        self.calls.append(list(messages))
        if self.replies is not None:
            return AIMessage(self.replies[len(self.calls) - 1])
        return AIMessage(f"reply {len(self.calls)}")


def build(trim, model):
    builder = StateGraph(State)
    builder.add_node("trim", trim)
    builder.add_node("llm", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "trim")
    builder.add_edge("trim", "llm")
    builder.add_edge("llm", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_seed004_trim_by_count_keeping_first() -> None:
    model = ReplayModel()
    graph = build(trim_node(4, keep_first=True), model)
    cfg = {"configurable": {"thread_id": "session_001"}}
    sizes = []
    for i in range(6):
        graph.invoke({"messages": [("user", f"第{i}轮对话随便聊")]}, cfg)
        sizes.append(len(graph.get_state(cfg).values["messages"]))
    assert sizes == [2, 4, 6, 6, 6, 6]
    final = graph.get_state(cfg).values["messages"]
    assert [m.content for m in final] == [
        "第0轮对话随便聊",
        "reply 4",
        "第4轮对话随便聊",
        "reply 5",
        "第5轮对话随便聊",
        "reply 6",
    ]
    assert [len(c) for c in model.calls] == [1, 3, 5, 5, 5, 5]


SEED004_REPLIES = [
    "好的，那我们就开始吧！有什么话题你想聊的吗？",
    "当然可以！我们可以聊聊你最近的生活、工作、兴趣爱好或者是你对某个话题的看法。有什么特别想聊的吗？",
    "好的，那我们继续聊天。你最近有什么新鲜事想分享吗？或者你有什么特别感兴趣的话题想要讨论？",
    "当然可以！我们可以聊聊你最近的生活、工作、兴趣爱好或者是你对某个话题的看法。有什么特别想聊的吗？",
    "好的，那我们继续聊天。你最近有什么新鲜事想分享吗？或者你有什么特别感兴趣的话题想要讨论？",
    "当然，我们可以聊聊你最近的旅行经历、最喜欢的书籍、或者是你对某个领域的兴趣。有什么特别想聊的吗？",
    "好的，我们可以聊聊你最近的旅行经历、最喜欢的书籍、或者是你对某个领域的兴趣。有什么特别想聊的吗？",
    "当然，我们可以聊聊你最近的旅行经历、最喜欢的书籍、或者是你对某个领域的兴趣。有什么特别想聊的吗？",
]


def test_seed004_trim_by_token_estimate() -> None:
    model = ReplayModel(SEED004_REPLIES)
    graph = build(trim_node(max_tokens=100, keep_first=True, token_counter=HALF_LEN), model)
    cfg = {"configurable": {"thread_id": "session_001"}}
    for i in range(8):
        graph.invoke({"messages": [("user", f"第{i}轮对话随便聊，多一点内容增加token占用测试测试测试")]}, cfg)
        # what the model saw (after trimming) always fits the budget
        assert HALF_LEN(model.calls[-1]) <= 100
        # unlike the seed's loop, the kept window is contiguous: human/ai alternate after the first turn
        seen = model.calls[-1]
        assert seen[-1].type == "human"
        assert all(a.type != b.type for a, b in zip(seen[1:], seen[2:], strict=False))
    final = graph.get_state(cfg).values["messages"]
    assert final[0].content.startswith("第0轮")
    assert final[-1].content == SEED004_REPLIES[-1]


def test_update_state_with_removals_on_a_thread() -> None:
    model = ReplayModel()
    builder = StateGraph(MessagesState)
    builder.add_node("llm", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "llm")
    builder.add_edge("llm", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    for turn in range(1, 7):
        graph.invoke({"messages": [HumanMessage(f"消息{turn}")]}, cfg)
    messages = graph.get_state(cfg).values["messages"]
    graph.update_state(cfg, {"messages": keep_last(messages, 4)})
    kept = graph.get_state(cfg).values["messages"]
    assert [m.content for m in kept] == ["消息5", "reply 5", "消息6", "reply 6"]
    graph.update_state(cfg, {"messages": keep_last(kept, 0)})
    assert graph.get_state(cfg).values["messages"] == []


def test_trim_node_in_an_agent_loop_keeps_groups_whole() -> None:
    builder = StateGraph(MessagesState)
    builder.add_node("trim", trim_node(3))
    builder.add_edge(START, "trim")
    builder.add_edge("trim", END)
    out = builder.compile().invoke({"messages": AGENT})
    assert ids(out["messages"]) == ["sys", "a2", "h2"]
    assert check_tool_groups(out["messages"]) == []


def test_a_single_message_or_the_whole_state_is_a_clear_type_error() -> None:
    import pytest
    from langchain_core.messages import HumanMessage

    from plait.memory import keep_last

    with pytest.raises(TypeError, match="expected a list of messages, got HumanMessage"):
        keep_last(HumanMessage("x"), 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"pass state\['messages'\], not the state"):
        keep_last({"messages": []}, 1)  # type: ignore[arg-type]
