"""Headless Chromium (Debian's package) driven by Playwright, and screenshots kept as test artefacts.

Screenshots go to ``PLAIT_ARTIFACTS`` (or the test's temporary folder); with ``PLAIT_UPDATE_DOCS=1``
they also replace the pictures of the same name in ``docs/img``.
"""

from __future__ import annotations

import os
import pathlib
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "img"


@contextmanager
def chromium_page() -> Iterator[Any]:
    """A 1400x1000 page in headless Chromium; skips (fails on CI) when Chromium or Playwright is missing."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright comes with the 'dev' extra")
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs Debian's package)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 1000})
        finally:
            browser.close()


def screenshot(page: Any, name: str, tmp_path: pathlib.Path) -> pathlib.Path:
    """Save a full-page screenshot ``name.png`` as a test artefact (and in docs/img with PLAIT_UPDATE_DOCS)."""
    folder = pathlib.Path(os.environ.get("PLAIT_ARTIFACTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    if os.environ.get("PLAIT_UPDATE_DOCS"):
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOCS / path.name)
    return path
