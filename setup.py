"""Build hook: ship ``plait-as-langgraph.pth`` at the root of site-packages (wheels and editable installs).

The file starts the ``PLAIT_AS_LANGGRAPH`` import switch at interpreter start-up (plait/_alias.py);
it does nothing unless that environment variable is set. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import os

from setuptools import Command, setup
from setuptools.command.build import build

PTH_NAME = "plait-as-langgraph.pth"
PTH_LINE = (  # (plait is imported only when the variable is set to something other than off)
    "import os; os.environ.get('PLAIT_AS_LANGGRAPH', '').strip().lower() not in "
    "('', '0', 'false', 'no', 'off') and __import__('plait._alias').__dict__['_alias'].install_from_env()\n"
)


class build_pth(Command):
    """Write the start-up hook where the wheel's root is assembled."""

    description = "write plait-as-langgraph.pth"
    user_options: list[tuple[str, str | None, str]] = []
    editable_mode = False

    def initialize_options(self) -> None:
        self.build_lib: str | None = None

    def finalize_options(self) -> None:
        self.set_undefined_options("build_py", ("build_lib", "build_lib"))

    def _target(self) -> str:
        # editable wheels are assembled in install's install_lib; regular ones from build_lib
        if self.editable_mode:
            return str(self.get_finalized_command("install").install_lib)
        return str(self.build_lib)

    def run(self) -> None:
        target = self._target()
        os.makedirs(target, exist_ok=True)
        with open(os.path.join(target, PTH_NAME), "w") as fh:
            fh.write(PTH_LINE)

    def get_outputs(self) -> list[str]:
        return [] if self.editable_mode else [os.path.join(str(self.build_lib), PTH_NAME)]


class build_with_pth(build):
    sub_commands = [*build.sub_commands, ("build_pth", None)]


setup(cmdclass={"build": build_with_pth, "build_pth": build_pth})
