"""``import plait.as_langgraph`` first in a program: from then on every ``langgraph`` import gives plait.

The same switch for programs one does not edit: ``PLAIT_AS_LANGGRAPH=1`` in their environment.
``active()`` tells whether it is on. See docs/langgraph.md.
"""

from plait._alias import active, install, real_langgraph_modules

install()

__all__ = ["active", "real_langgraph_modules"]
