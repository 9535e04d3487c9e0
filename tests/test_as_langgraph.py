"""The ``PLAIT_AS_LANGGRAPH`` switch: every ``langgraph`` import of a process gives plait's module.

The real langgraph package is installed beside plait here (langchain depends on it), as it is for
users; each check runs in a fresh interpreter, since the switch is process-wide.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

CHECK = """
import sys
import langgraph.graph, langgraph.types, langgraph.checkpoint.memory, langgraph.prebuilt
import plait.graph, plait.types
from langgraph._internal._runnable import RunnableCallable
from langgraph.utils.config import patch_configurable
import plait.as_langgraph as switch
real = [n for n, m in sys.modules.items() if n.split(".")[0] == "langgraph" and not m.__name__.startswith("plait")]
print(langgraph.graph is plait.graph, langgraph.types.Send is plait.types.Send, switch.active(), real)
"""


def _run(code: str, value: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PLAIT_AS_LANGGRAPH"}
    if value is not None:
        env["PLAIT_AS_LANGGRAPH"] = value
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)


@pytest.mark.parametrize("value", ["1", "true", "on"])
def test_the_environment_variable_routes_every_langgraph_import(value: str) -> None:
    out = _run(CHECK, value)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True True True []"


def test_off_by_default_and_for_false_values() -> None:
    probe = "import sys; import plait._alias as a; print(a.active())"
    for value in (None, "0", "false", ""):
        out = _run(probe, value)
        assert out.stdout.strip() == "False", (value, out.stderr)


def test_an_unknown_value_says_so_and_stays_off() -> None:
    out = _run("import plait._alias as a; print(a.active())", "maybe")
    assert out.stdout.strip() == "False"
    assert "PLAIT_AS_LANGGRAPH='maybe'" in out.stderr


def test_a_missing_path_fails_naming_plaits_module_and_never_loads_the_real_one() -> None:
    code = (
        "import sys\n"
        "try:\n"
        "    import langgraph.no_such_module\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc)\n"
        "print([n for n in sys.modules if n.startswith('langgraph') and not sys.modules[n].__name__.startswith('plait')])\n"
    )
    out = _run(code, "1")
    assert "plait has no 'plait.no_such_module'" in out.stdout
    assert out.stdout.strip().endswith("[]")


def test_the_import_switch_refuses_a_process_that_loaded_the_real_langgraph_first() -> None:
    if importlib.util.find_spec("langgraph") is None:  # (not imported here: the switch is process-wide)
        pytest.skip("the real langgraph is not installed (a langchain dependency in the dev extra)")
    code = "import langgraph.graph\ntry:\n    import plait.as_langgraph\nexcept ImportError as exc:\n    print(exc)\n"
    out = _run(code, None)
    assert "the real langgraph was imported before the switch" in out.stdout
