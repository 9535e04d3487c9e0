"""``plait serve``: an agent server that the LangGraph SDK drives (``pip install 'plait[serve]'``)."""

from __future__ import annotations

try:
    import sse_starlette  # noqa: F401  # pyright: ignore[reportUnusedImport]  # imported only to check the extra is installed
    import starlette  # noqa: F401  # pyright: ignore[reportUnusedImport]  # imported only to check the extra is installed
    import uvicorn  # noqa: F401  # pyright: ignore[reportUnusedImport]  # imported only to check the extra is installed
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"plait.server needs starlette, uvicorn and sse-starlette ({exc.name} is missing); "
        "install them with: pip install 'plait[serve]'"
    ) from exc

from plait.server._app import create_app
from plait.server._config import ConfigError, Settings

__all__ = ["ConfigError", "Settings", "create_app"]
