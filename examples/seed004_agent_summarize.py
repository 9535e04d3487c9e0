# Seed 004 (agent_summarize), ported to plait: only the imports changed (langgraph -> plait, langchain.agents -> plait.agents).
# Needs an OpenAI-compatible server on http://127.0.0.1:11433/v1 (llama.cpp in the seed); the tests run it against fakellm.
from typing import Annotated

from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage, SystemMessage
from langchain_openai import ChatOpenAI
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import StateGraph, add_messages

basic_model = ChatOpenAI(
    model="qwen2.5-1.5b-instruct-q4_k_m.gguf",
    base_url="http://127.0.0.1:11433/v1",
    api_key="dummy",
    temperature=0.1,
    max_tokens=512,
)


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def estimate_message_tokens(msg: AnyMessage) -> int:
    """简易估算token"""
    content = str(msg.content)
    return len(content) // 2


def calc_total_tokens(messages: list[AnyMessage]) -> int:
    total = 0
    for m in messages:
        total += estimate_message_tokens(m)
    return total


def dump_msg(graph, config) -> list[dict]:
    snap = graph.get_state(config)
    msgs = snap.values.get("messages", [])
    return [{"type": m.type, "content": m.content, "id": m.id[:10]} for m in msgs]


def summarize_old_messages(messages: list[AnyMessage]) -> str:
    """调用LLM，把一批历史消息压缩成摘要文本"""
    prompt = """请把下面的用户与助手对话，精简为简短的对话摘要，保留关键信息，不要冗余：
对话记录：
"""
    for m in messages:
        role = "用户" if isinstance(m, HumanMessage) else "助手"
        prompt += f"\n{role}: {m.content}"
    resp = basic_model.invoke([HumanMessage(content=prompt)])
    return resp.content


def trim_or_summarize_node(state: State):
    """
    消息摘要压缩节点
    规则：
    1. 总token < 阈值：什么都不做
    2. 超过阈值：把前面老旧一批消息做摘要，删除原始旧消息，插入摘要消息，保留最近N条原始对话
    """
    # 总Token限制
    MAX_TOKENS = 100

    # 保留最近4条原始对话不压缩
    RECENT_KEEP_COUNT = 4
    messages = state["messages"]
    total_tok = calc_total_tokens(messages)

    if total_tok <= MAX_TOKENS:
        return {}

    # 需要压缩：拆分老旧待压缩消息 + 保留最近原始消息
    if len(messages) <= RECENT_KEEP_COUNT:
        return {}

    to_summarize = messages[:-RECENT_KEEP_COUNT]  # 前面旧消息，拿去做摘要
    keep_recent = messages[-RECENT_KEEP_COUNT:]  # 最近几条原样保留  # noqa: F841 - unused in the seed too

    # 调用模型生成摘要
    summary_text = summarize_old_messages(to_summarize)
    summary_msg = SystemMessage(content=f"[历史对话摘要]: {summary_text}")

    # 删除全部待压缩的原始旧消息
    remove_ids = [m.id for m in to_summarize]
    remove_list = [RemoveMessage(id=mid) for mid in remove_ids]

    # remove_list：删掉旧消息；同时追加摘要消息
    return {"messages": [*remove_list, summary_msg]}


def llm_node(state: State):
    resp = basic_model.invoke(state["messages"])
    return {"messages": [resp]}


if __name__ == "__main__":
    builder = StateGraph(State)
    builder.add_node("summarize_trim", trim_or_summarize_node)
    builder.add_node("llm", llm_node)

    builder.add_edge("summarize_trim", "llm")
    builder.set_entry_point("summarize_trim")

    checkpointer = InMemorySaver()
    graph = builder.compile(checkpointer=checkpointer)

    cfg = {"configurable": {"thread_id": "session_001"}}

    for i in range(10):
        user_text = f"第{i}轮对话，测试内容，增加文本长度，测试摘要压缩效果测试测试测试"
        out = graph.invoke({"messages": [("user", user_text)]}, cfg)
        print(f"\n===== 轮{i} =====")
        print(f"reply: {out['messages'][-1].content[:60]}")
        msg_list = dump_msg(graph, cfg)
        current_tok = calc_total_tokens(graph.get_state(cfg).values["messages"])
        print(f"消息总条数={len(msg_list)} 估算token={current_tok}")
        for idx, item in enumerate(msg_list):
            print(f"  [{idx}] {item['type']:8s} | {item['content'][:55]}")

    snap = graph.get_state(cfg)
    print("\n=====最终消息队列=====")
    final_msgs = dump_msg(graph, cfg)
    for idx, item in enumerate(final_msgs):
        print(f"[{idx}] {item['type']:8s} | {item['content']}")
