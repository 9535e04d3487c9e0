"""The public API is generic: ``StateGraph[State, Context, Input, Output]`` and typed ``invoke``."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest
from typing_extensions import TypedDict

from plait.graph import START, CompiledStateGraph, StateGraph


class State(TypedDict):
    x: int


@dataclass
class Context:
    user: str


def test_graphs_are_subscriptable_like_langgraphs() -> None:
    builder = StateGraph[State, Context](State, context_schema=Context)
    builder.add_node("inc", lambda s: {"x": s["x"] + 1}).add_edge(START, "inc")
    graph: CompiledStateGraph[State, Context, State, State] = builder.compile()
    assert graph.invoke({"x": 1}, context=Context("ada")) == {"x": 2}
    assert StateGraph[State] is not None and CompiledStateGraph[State, None, State, State] is not None


def test_unknown_keyword_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="unexpected keyword arguments: \\['state_shema'\\]"):
        StateGraph(State, state_shema=State)  # type: ignore[call-arg]


def test_a_type_checker_sees_the_input_and_context_types(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("mypy", reason="mypy comes with the 'dev' extra")
    program = tmp_path / "user_code.py"
    program.write_text(
        textwrap.dedent(
            """
            from dataclasses import dataclass
            from typing_extensions import TypedDict
            from plait.graph import START, StateGraph

            class State(TypedDict):
                x: int

            @dataclass
            class Context:
                user: str

            graph = StateGraph(State, context_schema=Context).add_edge(START, "n").compile()
            graph.invoke({"x": 1}, {"configurable": {"thread_id": "t"}}, context=Context("ada"))
            graph.invoke({"x": "one"})
            graph.invoke({"x": 1}, context="ada")
            """
        )
    )
    errors, report = _mypy_errors(program)
    lines = program.read_text().splitlines()
    wrong = [n for n, text in enumerate(lines, 1) if '"one"' in text or 'context="ada"' in text]
    assert errors == wrong and len(wrong) == 2, report


def test_a_type_checker_sees_the_output_of_a_v2_invoke(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("mypy", reason="mypy comes with the 'dev' extra")
    program = tmp_path / "user_code.py"
    program.write_text(
        textwrap.dedent(
            """
            import asyncio
            from typing_extensions import TypedDict
            from plait.graph import START, StateGraph
            from plait.types import GraphOutput

            class State(TypedDict):
                x: int

            class Out(TypedDict):
                y: str

            graph = StateGraph(State, output_schema=Out).add_node("n", lambda s: {"y": "a"}).add_edge(START, "n").compile()
            out = graph.invoke({"x": 1}, version="v2")
            typed: GraphOutput[Out] = out
            fine: str = out.value["y"]
            wrong_key = out.value["x"]
            wrong_type: int = out.value["y"]
            later = asyncio.run(graph.ainvoke({"x": 1}, version="v2"))
            also_wrong: int = later.value["y"]
            old = graph.invoke({"x": 1})
            anything: int = old["whatever"]
            """
        )
    )
    errors, report = _mypy_errors(program)
    lines = program.read_text().splitlines()
    wrong = [n for n, text in enumerate(lines, 1) if "wrong" in text]
    assert errors == wrong and len(wrong) == 3, report


def _mypy_errors(program: pathlib.Path) -> tuple[list[int], str]:
    """The lines of ``program`` that ``mypy --strict`` reports errors on (each once), and its report."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(program)],
        capture_output=True,
        text=True,
        check=False,
    )
    errors = sorted({int(line.split(":")[1]) for line in proc.stdout.splitlines() if ": error:" in line})
    return errors, proc.stdout
