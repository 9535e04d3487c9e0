"""Leases on PostgreSQL and durability: writes inside a run may skip the disk wait only because the release flushes."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plait.checkpoint._engine_ops import Batch, Fetch, Op
from plait.checkpoint.base import empty_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _pg import PG_DSN, pg_saver  # noqa: E402


@pytest.fixture(name="saver")
def saver_fixture() -> Iterator[Any]:
    yield from pg_saver("plait_lease")


class Recorder:
    """Records the operations a real saver performs (and performs them)."""

    def __init__(self, saver: Any) -> None:
        self.ops: list[Op] = []
        self.perform = saver._perform
        saver._perform = self

    def __call__(self, op: Op) -> Any:
        self.ops.append(op)
        return self.perform(op)

    def durability(self) -> list[tuple[str, bool]]:
        """``(first statement, durable)`` of each batch and put."""
        out = []
        for op in self.ops:
            if isinstance(op, Batch):
                out.append((" ".join(op.steps[0].sql.split()[:4]).split("(")[0], op.durable))
            elif isinstance(op, Fetch) and "plait_put" in op.sql:
                out.append(("plait_put", bool(op.params[8])))
        return out


def _put(saver: Any, thread: str) -> dict[str, Any]:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"n": 1}
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    return saver.put(config, checkpoint, {"source": "input", "step": -1, "parents": {}}, {"n": 1})


def _admin(sql: str, saver: Any) -> None:
    import psycopg

    schema = saver._fetch("SELECT current_schema()", [])[0][0]
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {schema}")
        conn.execute(sql)  # type: ignore[arg-type]  # test SQL


def test_writes_inside_a_run_skip_the_disk_wait_and_the_release_is_durable(saver: Any) -> None:
    saver.setup()
    recorder = Recorder(saver)
    with saver.lease("t"):
        _put(saver, "t")
    _put(saver, "t")  # outside a run: durable at once
    steps = recorder.durability()
    assert steps[0] == ("SELECT * FROM plait_begin", False)  # acquire (and read the head)
    assert steps[1] == ("plait_put", False)  # the run's checkpoint
    assert steps[2] == ("SELECT plait_release", True)  # the release: a durable commit that flushes the run's
    assert steps[3] == ("plait_put", True)


def test_a_lease_taken_over_meanwhile_still_flushes_on_release(saver: Any) -> None:
    saver.setup()
    recorder = Recorder(saver)
    with saver.lease("t"):
        _put(saver, "t")
        _admin("UPDATE plait_checkpoint_leases SET owner = 'another process'", saver)
    batches = [op for op in recorder.ops if isinstance(op, Batch)]
    release, flush = batches[-2], batches[-1]
    assert release.durable and flush.durable and flush.steps[0].sql.lstrip().startswith("INSERT")
    rows = saver._fetch("SELECT thread_id, checkpoint_ns, owner FROM plait_checkpoint_leases", [])
    assert rows == [("t", "", "another process")]  # the marker row is gone, the other holder untouched


def test_a_failed_release_after_unflushed_writes_fails_the_run(saver: Any) -> None:
    saver.setup()
    with pytest.raises(ConnectionError, match="durable commit that releases the thread failed"):
        with saver.lease("t"):
            _put(saver, "t")
            _admin("ALTER TABLE plait_checkpoint_leases RENAME TO moved_away", saver)
    _admin("ALTER TABLE moved_away RENAME TO plait_checkpoint_leases", saver)


def test_a_failed_release_does_not_hide_the_runs_own_error(saver: Any) -> None:
    saver.setup()
    with pytest.raises(KeyError, match="the node failed"):
        with saver.lease("t"):
            _put(saver, "t")
            _admin("ALTER TABLE plait_checkpoint_leases RENAME TO moved_away", saver)
            raise KeyError("the node failed")
    _admin("ALTER TABLE moved_away RENAME TO plait_checkpoint_leases", saver)
