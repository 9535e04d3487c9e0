"""``plait migrate --from-langgraph``: each thread whole or not at all, and what happened to each one said.

The databases are written by LangGraph 1.2.24 itself (``_lg_notes_writer.py`` in its own interpreter).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from plait.checkpoint._langgraph_decode import LangGraphDecoder
from plait.checkpoint._langgraph_import import _Importer, _Thread, sqlite_source, translate
from plait.checkpoint.sqlite import SqliteSaver
from plait.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checkpoint"))
from _langgraph import LGREF, require_langgraph  # noqa: E402

WRITER = Path(__file__).with_name("_lg_notes_writer.py")
MODELS = """import dataclasses


@dataclasses.dataclass
class Note:
    text: str
    n: int
"""


@pytest.fixture()
def lg_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A LangGraph SQLite file: thread 'notes' (4 checkpoints, the newest holds a user dataclass), 'plain'."""
    require_langgraph()
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "notes_models.py").write_text(MODELS)
    monkeypatch.syspath_prepend(str(mods))
    path = str(tmp_path / "lg.sqlite")
    env = {**os.environ, "PYTHONPATH": str(mods)}
    done = subprocess.run(
        [str(LGREF), str(WRITER), path], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"notes": 4, "plain": 3, "asks": 3}
    return path


def run(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(main, list(args))
    assert (result.exit_code == 0) == ok, result.output
    assert "Traceback" not in result.output
    return result.output


def _ids(path: str, thread_id: str) -> list[str]:
    with SqliteSaver.from_conn_string(path) as saver:
        saver.serde.allow("notes_models.Note")
        return [t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": thread_id}})]


def _source_ids(path: str, thread_id: str) -> list[str]:
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id DESC", [thread_id]
    ).fetchall()
    conn.close()
    return [r[0] for r in rows]


def test_a_thread_that_fails_leaves_nothing_and_a_rerun_imports_it_whole(
    lg_notes: str, tmp_path: Path
) -> None:
    target = str(tmp_path / "out.sqlite")
    out = run("migrate", "--from-langgraph", lg_notes, "--to", target, ok=False)
    assert (
        "failed thread 'notes'" in out and "notes_models.Note" in out and "--allow notes_models.Note" in out
    )
    assert "nothing of it was written" in out and "imported thread 'plain': 3 checkpoint(s)" in out
    assert _ids(target, "notes") == [] and len(_ids(target, "plain")) == 3
    # the user allows the class and runs the same command again: the whole thread, newest head included
    out = run("migrate", "--from-langgraph", lg_notes, "--to", target, "--allow", "notes_models.Note")
    assert "imported thread 'notes': 4 checkpoint(s), verified" in out
    assert "thread 'plain' is already complete in the destination (3 checkpoint(s))" in out
    assert _ids(target, "notes") == _source_ids(lg_notes, "notes")
    with SqliteSaver.from_conn_string(target) as saver:
        saver.serde.allow("notes_models.Note")
        head = saver.get_tuple({"configurable": {"thread_id": "notes"}})
        assert head is not None
        values = head.checkpoint["channel_values"]
        assert values["text"] == "notes first second" and (values["note"].text, values["note"].n) == (
            "kept",
            3,
        )
    out = run("migrate", "--from-langgraph", lg_notes, "--to", target, "--allow", "notes_models.Note")
    assert "thread 'notes' is already complete in the destination (4 checkpoint(s))" in out
    assert "0 thread(s)" in out


def _partial(source_path: str, target: str, thread_id: str, keep: int) -> None:
    """What an import stopped half-way (by a crash, or by an older plait) left: the oldest checkpoints only."""
    with SqliteSaver.from_conn_string(target) as saver:
        saver.setup()
        saver.serde.allow("notes_models.Note")
        importer = _Importer(sqlite_source(source_path), saver, LangGraphDecoder(saver.serde))
        thread = _Thread()
        for row in list(importer.source.rows(thread_id))[:keep]:
            importer.one(row, thread)


def test_a_rerun_finishes_a_thread_an_earlier_import_left_half_done(lg_notes: str, tmp_path: Path) -> None:
    target = str(tmp_path / "out.sqlite")
    _partial(lg_notes, target, "notes", 2)
    assert len(_ids(target, "notes")) == 2
    out = run("migrate", "--from-langgraph", lg_notes, "--to", target, "--allow", "notes_models.Note")
    assert "imported thread 'notes': 4 checkpoint(s), verified" in out
    assert "stopped at 2 of 4 checkpoint(s)" in out
    assert _ids(target, "notes") == _source_ids(lg_notes, "notes")


def test_a_different_thread_of_the_same_id_is_left_alone_and_reported(lg_notes: str, tmp_path: Path) -> None:
    target = str(tmp_path / "out.sqlite")
    _partial(lg_notes, target, "notes", 2)
    with SqliteSaver.from_conn_string(target) as saver:  # the partial thread went on in plait
        saver.serde.allow("notes_models.Note")
        head: Any = saver.get_tuple({"configurable": {"thread_id": "notes"}})
        checkpoint = {**head.checkpoint, "id": "1ffffff0-0000-6000-8000-000000000000"}
        saver.put(head.config, checkpoint, {"step": 9}, {})
    out = run("migrate", "--from-langgraph", lg_notes, "--to", target, "--allow", "notes_models.Note")
    assert "kept thread 'notes' as the destination has it" in out and "1 checkpoint(s) of its own" in out
    assert len(_ids(target, "notes")) == 3  # left as it was


def test_an_import_stopped_between_the_head_and_its_writes_is_finished_by_a_rerun(
    lg_notes: str, tmp_path: Path
) -> None:
    target = str(tmp_path / "out.sqlite")
    with SqliteSaver.from_conn_string(target) as saver:  # every checkpoint stored, the head's writes not
        saver.setup()
        importer = _Importer(sqlite_source(lg_notes), saver, LangGraphDecoder(saver.serde))
        thread, rows = _Thread(), list(importer.source.rows("asks"))
        for row in rows[:-1]:
            importer.one(row, thread)
        head = rows[-1]
        record = importer.record(head)
        checkpoint, metadata = translate(head, record, importer.values(head, record), importer.metadata(head))
        parent = {"configurable": {"thread_id": "asks", "checkpoint_ns": "", "checkpoint_id": head.parent_id}}
        saver.put(parent, checkpoint, metadata, checkpoint["channel_versions"])  # type: ignore[arg-type]
    out = run("migrate", "--from-langgraph", lg_notes, "--to", target, "--allow", "notes_models.Note")
    assert "imported thread 'asks': 3 checkpoint(s), verified" in out, out
    with SqliteSaver.from_conn_string(target) as saver:
        got = saver.get_tuple({"configurable": {"thread_id": "asks"}})
        assert got is not None and [w[1] for w in got.pending_writes or ()] == ["__interrupt__"]
