# Seed 004 (agent_trim_tokens), ported to plait: only the imports changed (langgraph -> plait, langchain.agents -> plait.agents).
# Needs an OpenAI-compatible server on http://127.0.0.1:11433/v1 (llama.cpp in the seed); the tests run it against fakellm.
from typing import Annotated

from langchain_core.messages import AnyMessage, RemoveMessage
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
    """简易估算单条消息token"""
    content = str(msg.content)
    return len(content) // 2


def calc_total_tokens(messages: list[AnyMessage]) -> int:
    """计算消息列表总估算token"""
    total = 0
    for m in messages:
        total += estimate_message_tokens(m)
    return total


def dump_msg(graph, config) -> list[dict]:
    snap = graph.get_state(config)
    msgs = snap.values.get("messages", [])
    return [{"type": m.type, "content": m.content, "id": m.id[:10]} for m in msgs]


def trim_node(state: State):
    """按token阈值自动物理修剪，强制保留第一条消息，旧消息逐步删除"""
    # 设置上下文最大允许token
    MAX_ALLOW_TOKENS = 100
    messages = state["messages"]
    if not messages:
        return {}

    total_tok = calc_total_tokens(messages)
    # token没超限，直接返回，不做处理
    if total_tok <= MAX_ALLOW_TOKENS:
        return {}

    first_msg = messages[0]
    # 从第二条开始往后，候选待删除消息（第一条强制保留）
    candidate_messages = messages[1:]

    keep = [first_msg]
    remove_ids = []

    # 倒序遍历，优先保留最新消息
    for m in reversed(candidate_messages):
        temp_list = keep + [m]
        if calc_total_tokens(temp_list) <= MAX_ALLOW_TOKENS:
            keep.append(m)
        else:
            remove_ids.append(m.id)

    # 注意：上面是倒序收集remove_ids，直接生成删除对象
    remove_list = [RemoveMessage(id=mid) for mid in remove_ids]
    return {"messages": remove_list}


def llm_node(state: State):
    resp = basic_model.invoke(state["messages"])
    return {"messages": [resp]}


if __name__ == "__main__":
    builder = StateGraph(State)
    builder.add_node("trim", trim_node)
    builder.add_node("llm", llm_node)

    builder.add_edge("trim", "llm")
    builder.set_entry_point("trim")

    checkpointer = InMemorySaver()
    graph = builder.compile(checkpointer=checkpointer)

    cfg = {"configurable": {"thread_id": "session_001"}}

    for i in range(8):
        user_text = f"第{i}轮对话随便聊，多一点内容增加token占用测试测试测试"
        out = graph.invoke({"messages": [("user", user_text)]}, cfg)
        print(f"\n===== 轮{i} =====")
        print(f"reply: {out['messages'][-1].content[:60]}")
        msg_list = dump_msg(graph, cfg)
        current_tokens = calc_total_tokens([m for m in graph.get_state(cfg).values["messages"]])
        print(f"当前消息总条数：{len(msg_list)}，估算总token={current_tokens}")
        for idx, item in enumerate(msg_list):
            print(f"  [{idx}] {item['type']:6s} | {item['content'][:30]}... | id={item['id']}")

    snap = graph.get_state(cfg)
    print("\n===== 最终 =====")
    print("最终消息条数：", len(snap.values["messages"]))
    print(f"最终估算总token：{calc_total_tokens(snap.values['messages'])}")
