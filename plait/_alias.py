"""Route every ``langgraph`` import of the process to plait (``PLAIT_AS_LANGGRAPH``).

``import langgraph.X`` gives the very module object ``plait.X``, so ``langgraph.types.Send is
plait.types.Send`` and patching ``langgraph.x.y`` patches plait. A path plait lacks fails with
``ModuleNotFoundError``; it never falls back to a real ``langgraph`` installed beside plait.

Started at interpreter start-up by the ``plait-as-langgraph.pth`` file that installing plait
puts into ``site-packages`` (when the environment variable is set), or by ``import
plait.as_langgraph`` at the top of a program.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType

SOURCE = "langgraph"
TARGET = "plait"
ENV = "PLAIT_AS_LANGGRAPH"
_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"", "0", "false", "no", "off"})


class _AliasLoader(importlib.abc.Loader):
    """Hands out plait's module under LangGraph's name."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the import system stamped the alias spec on plait's module: give it its own back
        if self._spec is not None:
            module.__spec__ = self._spec


class LangGraphFinder(importlib.abc.MetaPathFinder):
    """A meta-path finder mapping ``langgraph[.X]`` to ``plait[.X]``."""

    def find_spec(
        self,
        fullname: str,
        path: object = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != SOURCE and not fullname.startswith(SOURCE + "."):
            return None
        name = TARGET + fullname[len(SOURCE) :]
        found = sys.modules.get(name)
        spec = found.__spec__ if found is not None else _find(name)
        if spec is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: plait has no {name!r} "
                f"({ENV} routes every langgraph import to plait)",
                name=fullname,
            )
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(name), is_package=spec.submodule_search_locations is not None
        )


def _find(name: str) -> importlib.machinery.ModuleSpec | None:
    try:
        return importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return None


def active() -> bool:
    """Whether ``langgraph`` imports are routed to plait in this process."""
    return any(isinstance(finder, LangGraphFinder) for finder in sys.meta_path)


def real_langgraph_modules() -> list[str]:
    """Names of modules of a real ``langgraph`` package already loaded in this process."""
    loaded: list[str] = []
    for name, module in list(sys.modules.items()):
        if (name == SOURCE or name.startswith(SOURCE + ".")) and not _is_plait(module):
            loaded.append(name)
    return sorted(loaded)


def _is_plait(module: ModuleType) -> bool:
    own = getattr(module, "__name__", "")
    return isinstance(own, str) and (own == TARGET or own.startswith(TARGET + "."))


def install() -> None:
    """Route ``langgraph`` imports to plait from now on (idempotent).

    Raises ImportError when the real ``langgraph`` was imported first: its classes would
    then mix with plait's in one process.
    """
    if active():
        return
    loaded = real_langgraph_modules()
    if loaded:
        raise ImportError(
            f"plait.as_langgraph: the real langgraph was imported before the switch "
            f"({', '.join(loaded[:3])}{', ...' if len(loaded) > 3 else ''}); import plait.as_langgraph "
            f"first in the program, or set {ENV}=1 in its environment"
        )
    sys.meta_path.insert(0, LangGraphFinder())


_STARTED: list[bool] = []


def install_from_env() -> None:
    """Start-up hook of ``plait-as-langgraph.pth``: install when ``PLAIT_AS_LANGGRAPH`` is on (once: a
    venv whose ``lib64`` links to ``lib`` runs its ``.pth`` files twice)."""
    if _STARTED:
        return
    _STARTED.append(True)
    value = os.environ.get(ENV, "").strip().lower()
    if value in _OFF:
        return
    if value not in _ON:
        sys.stderr.write(f"plait: {ENV}={value!r} is not one of 1/true/yes/on or 0/false/no/off: ignored\n")
        return
    try:
        install()
    except ImportError as exc:  # never break interpreter start-up
        sys.stderr.write(f"{exc}\n")
