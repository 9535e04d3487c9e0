"""The generated sync code matches its async source (tools/unasync_gen.py --check)."""

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_generated_sync_code_is_up_to_date() -> None:
    spec = importlib.util.spec_from_file_location("unasync_gen", ROOT / "tools" / "unasync_gen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("unasync_gen", module)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0, "run: .venv/bin/python tools/unasync_gen.py"


def test_every_region_is_generated() -> None:
    """Each module listed by the generator has both markers, once per async source."""
    spec = importlib.util.spec_from_file_location("unasync_gen_list", ROOT / "tools" / "unasync_gen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for path in module.REGIONS:
        text = (ROOT / path).read_text()
        assert text.count(module.SOURCE_BEGIN) == text.count(module.GENERATED_BEGIN) > 0, path
    marked = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "plait").rglob("*.py")
        if module.SOURCE_BEGIN in p.read_text()
    }
    assert marked <= set(module.REGIONS), "a module with an async source region is missing from REGIONS"
