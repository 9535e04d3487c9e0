"""The sync code generated from async code (tools/unasync_gen.py) is up to date, and no new
hand-written sync/async twins appear where the generator is used."""

import ast
import importlib.util
import pathlib
from types import ModuleType

ROOT = pathlib.Path(__file__).resolve().parents[1]

CONVERTED = (
    "plait/pregel",
    "plait/checkpoint",
    "plait/store",
    "plait/prebuilt",
    "plait/stream",
    "plait/func.py",
    "plait/_internal/_runnable.py",
)
"""Where every sync/async pair is generated (or its async form only hands the call to the sync one)."""

PRIMITIVES = "plait/_internal/_io_primitives.py"
"""The I/O primitives (httpcore's ``_synchronization.py``): the one module whose sync/async pairs are
hand-written, because they do different things (threads / ``asyncio.gather``, a blocking lock wait /
a polled one, an async user function refused / awaited, ...)."""


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
    assert _generator().twins(CONVERTED) == []


def test_the_primitives_module_is_the_one_exempt() -> None:
    """The generator leaves out the primitives module, and only it; each async primitive has its sync
    twin there, under the name NAMES gives it."""
    gen = _generator()
    assert gen.PRIMITIVES == PRIMITIVES
    assert gen.twins((PRIMITIVES,)) == []
    module = (ROOT / PRIMITIVES).read_text()
    pairs = {name for name in gen.NAMES if f"async def {name}(" in module}
    assert pairs == {
        "arun_all",
        "asettle_all",
        "acall_maybe_async",
        "atake_lock",
        "aone_attempt",
        "arun_in_context",
    }
    for name in pairs:
        assert f"\ndef {gen.NAMES[name]}(" in module, name


DELEGATION = '''
class Saver:
    def put(self, x):
        """Store."""
        a = 1
        return x

    async def aput(self, x):
        """Async put: in a worker thread."""
        return await asyncio.to_thread(self.put, x)

    def get(self, x):
        """Read."""
        a = 1
        return x

    async def aget(self, x):
        if x is None:
            return self.get(x)
        a = 1
        return await read(x)
'''


def test_a_delegating_async_method_is_not_a_twin() -> None:
    """``aput`` running ``put`` in a thread is delegation; ``aget`` with its own copy of the work is a
    twin, even though it falls back on ``get``."""
    found = _generator()._scan("m.py", ast.parse(DELEGATION).body, "", set())
    assert found == ["m.py:Saver.get/aget (4 lines)"]


def test_async_only_and_sync_only_blocks() -> None:
    """``# >>> async only`` lines are left out of the sync form; ``# >>> sync only`` lines (commented
    out in the async source) are uncommented in it."""
    source = (
        "async def ax(self):\n"
        "    # >>> async only\n"
        "    await hop()\n"
        "    # <<< async only\n"
        "    # >>> sync only\n"
        "    # if fast:\n"
        "    #     return 1  # the sync form's\n"
        "    # <<< sync only\n"
        '    return await self._pregel("ainvoke")()\n'
    )
    assert _generator().unasync_text(source) == (
        "def ax(self):\n"
        "    if fast:\n"
        "        return 1  # the sync form's\n"
        '    return self._pregel("invoke")()\n'
    )
