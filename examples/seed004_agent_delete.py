# Seed 004 (agent_delete), ported to plait: only the imports changed (langgraph -> plait, langchain.agents -> plait.agents).
# Needs an OpenAI-compatible server on http://127.0.0.1:11433/v1 (llama.cpp in the seed); the tests run it against fakellm.
from typing import Annotated

from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage
from langchain_openai import ChatOpenAI
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import StateGraph, add_messages

llm = ChatOpenAI(
    model="qwen2.5-1.5b-instruct-q4_k_m.gguf",
    base_url="http://127.0.0.1:11433/v1",
    api_key="dummy",
    temperature=0.1,
    max_tokens=512,
)


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def chat_node(state: State):
    resp = llm.invoke(state["messages"])
    return {"messages": [resp]}


def trim_node(state: State):
    """裁剪：保留最近4条消息，删除更早消息"""
    messages = state["messages"]
    keep_last_n = 4
    if len(messages) <= keep_last_n:
        return {}
    # 生成要删除的消息对象
    to_remove = [RemoveMessage(id=m.id) for m in messages[:-keep_last_n]]
    return {"messages": to_remove}


def dump_message_list(graph, config) -> list[dict]:
    """导出消息为字典列表，方便打印对比"""
    snapshot = graph.get_state(config)
    msgs = snapshot.values.get("messages", [])
    return [{"type": m.type, "content": m.content, "id": m.id} for m in msgs]


if __name__ == "__main__":
    builder = StateGraph(State)
    builder.add_node("trim", trim_node)
    builder.add_node("chat", chat_node)
    builder.add_edge("trim", "chat")
    builder.set_entry_point("trim")

    checkpointer = InMemorySaver()
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "demo_001"}}

    print("========= 填充多轮对话，制造待删除的消息队列 =========\n")
    for turn in range(1, 7):
        graph.invoke({"messages": [HumanMessage(content=f"消息{turn}")]}, config)

    before_list = dump_message_list(graph, config)
    print(f"[填充完成｜删除前]消息总数 = {len(before_list)}")
    for idx, item in enumerate(before_list):
        print(f"  [{idx}] {item['type']:5s} | {item['content']} | id={item['id'][:8]}")
    print("-" * 90)

    # ========== 案例A：外部 update_state 删除【指定单条消息】 ==========
    print("\n========= 案例A：外部API删除第0号消息 =========")
    before_a = dump_message_list(graph, config)
    del_target_id = before_a[0]["id"]
    print(f"准备删除: index=0, content={before_a[0]['content']}, id={del_target_id[:8]}")

    graph.update_state(config, {"messages": [RemoveMessage(id=del_target_id)]})

    after_a = dump_message_list(graph, config)
    print(f"[删除单条后]消息总数 = {len(after_a)}")
    for idx, item in enumerate(after_a):
        print(f"  [{idx}] {item['type']:5s} | {item['content']} | id={item['id'][:8]}")
    print("-" * 90)

    # ========== 案例B：清空会话全部消息（批量RemoveMessage） ==========
    print("\n========= 案例B：批量清空当前会话全部消息 =========")
    before_b = dump_message_list(graph, config)
    print(f"清空前消息总数 = {len(before_b)}")

    remove_all = [RemoveMessage(id=m["id"]) for m in before_b]
    graph.update_state(config, {"messages": remove_all})

    after_b = dump_message_list(graph, config)
    print(f"[全部清空后]消息总数 = {len(after_b)}")
    for idx, item in enumerate(after_b):
        print(f"  [{idx}] {item['type']:5s} | {item['content']}")
    print("-" * 90)

    # ========== 案例C：节点内部自动裁剪删除（运行时删除） ==========
    print("\n========= 案例C：Graph节点内部运行时自动裁剪删除 =========")
    # 重新填充多轮消息，触发trim_node删除旧消息
    for turn in range(1, 9):
        graph.invoke({"messages": [HumanMessage(content=f"运行时消息{turn}")]}, config)

    before_c = dump_message_list(graph, config)
    print(f"[节点裁剪执行完成后]消息总数 = {len(before_c)}")
    for idx, item in enumerate(before_c):
        print(f"  [{idx}] {item['type']:5s} | {item['content']} | id={item['id'][:8]}")
