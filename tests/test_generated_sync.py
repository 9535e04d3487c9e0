"""The sync code generated from async code (tools/unasync_gen.py) is up to date, and no new
hand-written sync/async twins appear where the generator is used."""

import importlib.util
import pathlib
from types import ModuleType

ROOT = pathlib.Path(__file__).resolve().parents[1]

CONVERTED = (
    "plait/store",
    "plait/prebuilt",
    "plait/checkpoint/_lease.py",
    "plait/checkpoint/_lease_wait.py",
    "plait/pregel/remote.py",
    "plait/pregel/_traced.py",
    "plait/pregel/_batch.py",
    "plait/pregel/_legacy_ns.py",
    "plait/pregel/_subgraphs.py",
    "plait/pregel/_cache.py",
    "plait/pregel/_update.py",
    "plait/pregel/_func_tasks.py",
)
"""Where every sync/async pair is generated, but for the I/O primitives below."""

PRIMITIVES = {
    "plait/store/_embed.py:EmbeddingsLambda._call/_acall",  # a sync embed function is refused / awaited
    "plait/store/_sqlstore.py:SqlStore._transact/_atransact",  # abstract; the async default is a thread hop
    "plait/prebuilt/_react.py:AgentParts._choose/_achoose",  # a model function is refused / awaited
    "plait/prebuilt/tool_node.py:ToolNode._run_all/_arun_all",  # tool calls in threads / as tasks
    "plait/checkpoint/_lease_wait.py:take_local/atake_local",  # the local lock: blocking / polled
    "plait/pregel/_batch.py:_run_all/_arun_all",  # a batch's runs in threads / gathered on the loop
    "plait/pregel/_func_tasks.py:settled/awaited",  # a task's calls run here / gathered
    "plait/pregel/_func_tasks.py:_attempt_call/_aattempt_call",  # in this thread / on the loop
    "plait/pregel/_traced.py:release/arelease",  # async node runs: handed back / awaited (arelease calls release)
}
"""Pairs that differ in what they do, not only in ``await`` (httpcore's ``_synchronization.py``)."""


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("unasync_gen", ROOT / "tools" / "unasync_gen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_sync_code_is_up_to_date() -> None:
    assert _generator().main(["--check"]) == 0, "run: .venv/bin/python tools/unasync_gen.py"


def test_every_region_is_generated() -> None:
    """Each module listed by the generator has both markers, once per async source."""
    gen = _generator()
    for path in gen.REGIONS:
        text = (ROOT / path).read_text()
        assert text.count(gen.SOURCE_BEGIN) == text.count(gen.GENERATED_BEGIN) > 0, path
    marked = {
        str(p.relative_to(ROOT)) for p in (ROOT / "plait").rglob("*.py") if gen.SOURCE_BEGIN in p.read_text()
    }
    assert marked <= set(gen.REGIONS), "a module with an async source region is missing from REGIONS"


def test_no_hand_written_twins_where_the_generator_is_used() -> None:
    found = {pair.rsplit(" (", 1)[0] for pair in _generator().twins(CONVERTED)}
    assert found == PRIMITIVES
