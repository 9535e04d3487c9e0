# Seed 004 (agent_session_cli), ported to plait: only the imports changed (langgraph -> plait, langchain.agents -> plait.agents).
# Needs an OpenAI-compatible server on http://127.0.0.1:11433/v1 (llama.cpp in the seed); the tests run it against fakellm.
from langchain_core.messages import RemoveMessage
from langchain_openai import ChatOpenAI

from plait.agents import create_agent
from plait.checkpoint.memory import InMemorySaver

basic_model = ChatOpenAI(
    model="qwen2.5-1.5b-instruct-q4_k_m.gguf",
    base_url="http://127.0.0.1:11433/v1",
    api_key="dummy",
    temperature=0.1,
    max_tokens=512,
)

if __name__ == "__main__":
    agent = create_agent(
        basic_model,
        tools=[],
        checkpointer=InMemorySaver(),
    )

    print("------- 交互式会话测试 -------")
    print("  /switch <thread_id>  切换会话ID")
    print("  /show                打印会话全部历史消息")
    print("  /clear               清空当前会话消息")
    print("  /exit                退出程序")
    print("-----------------------------")

    # 默认会话
    current_thread_id = "session_01"

    while True:
        user_input = input("\nHuman: ").strip()
        if not user_input:
            continue
        if user_input.lower() == "/exit":
            break
        if user_input.startswith("/switch"):
            parts = user_input.split(maxsplit=1)
            if len(parts) == 2:
                current_thread_id = parts[1]
                print(f">>> 已切换会话 thread_id = {current_thread_id}")
            else:
                print(">>> 用法: /switch session_xx")
            continue
        if user_input == "/show":
            state = agent.get_state({"configurable": {"thread_id": current_thread_id}})
            print("\n---- 当前会话历史 ----")
            for msg in state.values["messages"]:
                print(f"{msg.type}: {msg.content}")
            continue
        if user_input == "/clear":
            state = agent.get_state({"configurable": {"thread_id": current_thread_id}})
            msgs = state.values.get("messages", [])
            if msgs:
                removes = [RemoveMessage(id=m.id) for m in msgs]
                agent.update_state({"configurable": {"thread_id": current_thread_id}}, {"messages": removes})
            print(">>> 当前会话消息已清空")
            continue

        # 正常对话调用
        res = agent.invoke(
            {"messages": [{"role": "user", "content": user_input}]},
            {"configurable": {"thread_id": current_thread_id}},
        )
        ai_reply = res["messages"][-1].content
        print(f"AI：{ai_reply}")
