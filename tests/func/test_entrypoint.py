"""@entrypoint workflows: invoke/stream, previous and entrypoint.final, state, injection, interrupts."""

from __future__ import annotations

import asyncio
import pathlib
from typing import Any

import pytest

from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite import SqliteSaver
from plait.config import get_stream_writer
from plait.func import entrypoint, task
from plait.runtime import Runtime
from plait.store.memory import InMemoryStore
from plait.types import Command, Interrupt, RetryPolicy, StreamWriter, interrupt


def _thread(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def test_invoke_returns_the_function_value(driver: Any) -> None:
    @task
    def double(x: int) -> int:
        return 2 * x

    @entrypoint()
    def workflow(numbers: list[int]) -> list[int]:
        futures = [double(n) for n in numbers]
        return [f.result() for f in futures]

    assert driver.invoke(workflow, [1, 2, 3]) == [2, 4, 6]
    assert driver.invoke(workflow, {"not": "a state"} and [5]) == [10]


def test_dict_input_is_passed_whole(driver: Any) -> None:
    @entrypoint()
    def workflow(inputs: dict[str, Any]) -> dict[str, Any]:
        return {"got": inputs}

    assert driver.invoke(workflow, {"a": 1, "b": [2]}) == {"got": {"a": 1, "b": [2]}}


def test_stream_updates_values_and_custom(driver: Any) -> None:
    @task
    def shout(text: str) -> str:
        get_stream_writer()(f"shouting {text}")
        return text.upper()

    @entrypoint()
    def workflow(text: str, *, writer: StreamWriter) -> str:
        writer("start")
        return shout(text).result() + "!"

    assert driver.stream(workflow, "hi") == [{"shout": "HI"}, {"workflow": "HI!"}]
    modes = ["updates", "values", "custom"]
    assert driver.stream(workflow, "hi", stream_mode=modes) == [
        ("custom", "start"),
        ("custom", "shouting hi"),
        ("updates", {"shout": "HI"}),
        ("updates", {"workflow": "HI!"}),
        ("values", "HI!"),
    ]
    assert driver.stream(workflow, "hi", stream_mode="values") == ["HI!"]


def test_previous_and_final_on_a_thread(driver: Any) -> None:
    seen: list[Any] = []

    @entrypoint(checkpointer=InMemorySaver())
    def counter(step: int, *, previous: Any = None) -> entrypoint.final[int, int]:
        seen.append(previous)
        total = (previous or 0) + step
        return entrypoint.final(value=total * 10, save=total)

    config = _thread()
    assert driver.invoke(counter, 1, config) == 10
    assert driver.invoke(counter, 2, config) == 30
    assert seen == [None, 1]
    assert driver.get_state(counter, config).values == 30
    driver.update_state(counter, config, 100)
    assert driver.invoke(counter, 1, config) == 1010
    assert seen == [None, 1, 100]
    assert counter.get_output_jsonschema() == {"title": "LangGraphOutput", "type": "integer"}
    assert counter.get_input_jsonschema() == {"title": "LangGraphInput", "type": "integer"}


def test_previous_is_none_without_a_checkpointer() -> None:
    @entrypoint()
    def workflow(value: int, *, previous: Any = None) -> dict[str, Any]:
        return {"previous": previous, "value": value}

    assert workflow.invoke(1) == {"previous": None, "value": 1}
    assert workflow.invoke(2) == {"previous": None, "value": 2}


def test_injected_config_store_and_runtime() -> None:
    store = InMemoryStore()
    store.put(("users",), "u1", {"name": "Ada"})

    @entrypoint(store=store, context_schema=dict)
    def workflow(key: str, *, config: dict[str, Any], store: Any, runtime: Runtime[Any]) -> dict[str, Any]:
        item = store.get(("users",), key)
        return {"name": item.value["name"], "tag": config["metadata"]["tag"], "ctx": runtime.context}

    out = workflow.invoke("u1", {"metadata": {"tag": "x"}}, context={"lang": "en"})
    assert out == {"name": "Ada", "tag": "x", "ctx": {"lang": "en"}}


def test_async_workflow_with_async_and_sync_tasks() -> None:
    @task
    async def fetch(n: int) -> int:
        await asyncio.sleep(0.01)
        return n + 1

    @task
    def square(n: int) -> int:
        return n * n

    @entrypoint(checkpointer=InMemorySaver())
    async def workflow(numbers: list[int]) -> list[int]:
        fetched = await asyncio.gather(*(fetch(n) for n in numbers))
        return [await square(n) for n in fetched]

    async def scenario() -> list[Any]:
        out = await workflow.ainvoke([1, 2], _thread())
        chunks = [c async for c in workflow.astream([3], _thread("u"))]
        return [out, chunks]

    assert asyncio.run(scenario()) == [[4, 9], [{"fetch": 4}, {"square": 16}, {"workflow": [16]}]]
    assert workflow.invoke([0], _thread("v")) == [1]  # the async workflow also runs from sync code


def test_interrupt_in_the_workflow_replays_finished_tasks(driver: Any) -> None:
    calls: list[int] = []

    @task
    def work(n: int) -> int:
        calls.append(n)
        return n * 2

    @entrypoint(checkpointer=InMemorySaver())
    def workflow(numbers: list[int]) -> list[Any]:
        done = [work(n) for n in numbers]
        answer = interrupt("continue?")
        return [f.result() for f in done] + [answer]

    config = _thread()
    paused = driver.invoke(workflow, [1, 2], config)
    assert list(paused) == ["__interrupt__"]
    assert paused["__interrupt__"][0].value == "continue?"
    assert driver.get_state(workflow, config).next == ("workflow",)
    assert driver.invoke(workflow, Command(resume="yes"), config) == [2, 4, "yes"]
    assert sorted(calls) == [1, 2]  # not run again on resume


def test_interrupt_inside_a_task_resumes_that_task(tmp_path: pathlib.Path) -> None:
    calls: list[str] = []

    @task
    def prepare(x: int) -> int:
        calls.append("prepare")
        return x + 1

    @task
    def ask(question: str) -> str:
        calls.append("ask")
        return interrupt(question)

    with SqliteSaver.from_conn_string(str(tmp_path / "threads.db")) as saver:

        @entrypoint(checkpointer=saver)
        def workflow(x: int) -> dict[str, Any]:
            n = prepare(x).result()
            first = ask(f"q{n}").result()
            second = ask(f"again {first}").result()
            return {"n": n, "answers": [first, second]}

        config = _thread()
        out = workflow.invoke(1, config)
        assert out["__interrupt__"][0].value == "q2"
        assert workflow.get_state(config).interrupts[0].value == "q2"
        out = workflow.invoke(Command(resume="a"), config)
        assert out["__interrupt__"][0].value == "again a"
        assert [i.value for i in workflow.get_state(config).interrupts] == ["again a"]
        assert workflow.invoke(Command(resume="b"), config) == {"n": 2, "answers": ["a", "b"]}
    assert calls == ["prepare", "ask", "ask", "ask", "ask"]


def test_parallel_task_interrupts_are_resumed_by_id() -> None:
    @task
    def ask(name: str) -> str:
        return f"{name}:{interrupt(name)}"

    @entrypoint(checkpointer=InMemorySaver())
    def workflow(names: list[str]) -> list[str]:
        futures = [ask(n) for n in names]
        return [f.result() for f in futures]

    config = _thread()
    out = workflow.invoke(["a", "b"], config)
    pending: list[Interrupt] = list(workflow.get_state(config).interrupts)
    assert sorted(i.value for i in out["__interrupt__"]) == ["a", "b"]
    assert sorted(i.value for i in pending) == ["a", "b"]
    by_value = {i.value: i.id for i in pending}
    out = workflow.invoke(Command(resume={by_value["a"]: 1}), config)
    assert [i.value for i in out["__interrupt__"]] == ["b"]
    assert workflow.invoke(Command(resume={by_value["b"]: 2}), config) == ["a:1", "b:2"]


def test_task_retry_policy() -> None:
    attempts: list[int] = []

    @task(retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False))
    def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("try again")
        return "ok"

    @entrypoint()
    def workflow(_: Any) -> str:
        return flaky().result()

    assert workflow.invoke(None or 0) == "ok"
    assert len(attempts) == 3


def test_task_errors_reach_the_workflow(driver: Any) -> None:
    @task
    def boom() -> None:
        raise ValueError("boom")

    @entrypoint()
    def workflow(_: Any) -> str:
        try:
            boom().result()
        except ValueError as exc:
            return f"caught {exc}"
        return "no error"

    assert driver.invoke(workflow, 1) == "caught boom"


def test_tasks_run_in_parallel() -> None:
    import threading

    together = threading.Barrier(4, timeout=60)  # broken (an error) unless all four calls run at once

    @task
    def slow(n: int) -> int:
        together.wait()
        return n

    @entrypoint()
    def workflow(count: int) -> list[int]:
        return [f.result() for f in [slow(i) for i in range(count)]]

    assert workflow.invoke(4) == [0, 1, 2, 3]


def test_nested_tasks(driver: Any) -> None:
    @task
    def inner(n: int) -> int:
        return n + 1

    @task
    def outer(n: int) -> int:
        return inner(n).result() * 10

    @entrypoint()
    def workflow(n: int) -> int:
        return outer(n).result()

    assert driver.invoke(workflow, 1) == 20
    assert driver.stream(workflow, 1) == [{"inner": 2}, {"outer": 20}, {"workflow": 20}]


def test_bad_declarations_raise() -> None:
    with pytest.raises(NotImplementedError, match="Generators"):

        @entrypoint()
        def generator(x: int) -> Any:
            yield x

    with pytest.raises(ValueError, match="at least one parameter"):

        @entrypoint()
        def nothing() -> None:
            return None

    with pytest.raises(ValueError, match="timeout"):  # timeouts: tests/pregel/test_timeouts.py
        entrypoint(timeout=0)

    def half(x: int) -> int:
        return x

    half.__annotations__["return"] = entrypoint.final  # un-parameterized: return and save are Any
    assert entrypoint()(half).get_output_jsonschema() == {"title": "LangGraphOutput"}
