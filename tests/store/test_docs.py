"""docs/store.md runs: every python block, in order, in a fresh directory; the printed results are checked."""

from __future__ import annotations

import contextlib
import io
import os
import re
import warnings
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "store.md"


def test_store_doc_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(blocks) == 3
    namespace: dict[str, object] = {}
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for block in blocks:
                exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102 - the doc's own code
    finally:
        os.chdir(cwd)
    lines = out.getvalue().splitlines()
    assert lines == ["Hello, Wang!", "[('drink', 1.0), ('work', 0.5), ('raw', None)]"]
    assert (tmp_path / "memory.db").exists()
