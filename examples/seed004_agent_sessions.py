# Seed 004 (agent_sessions), ported to plait: only the imports changed (langgraph -> plait, langchain.agents -> plait.agents).
# Needs an OpenAI-compatible server on http://127.0.0.1:11433/v1 (llama.cpp in the seed); the tests run it against fakellm.
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

    # 会话A
    res1 = agent.invoke(
        {"messages": [{"role": "user", "content": "我叫张三，今年25岁，男生"}]},
        {"configurable": {"thread_id": "session_001"}},
    )
    print(res1["messages"][-1].content)

    res2 = agent.invoke(
        {"messages": [{"role": "user", "content": "我叫什么名字？多大了？"}]},
        {"configurable": {"thread_id": "session_001"}},
    )
    print(f"[session_001] {res2['messages'][-1].content}")

    # 会话B
    res3 = agent.invoke(
        {"messages": [{"role": "user", "content": "我叫什么名字？多大了？"}]},
        {"configurable": {"thread_id": "session_002"}},
    )
    print(f"[session_002] {res3['messages'][-1].content}")
