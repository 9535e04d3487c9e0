"""``plait_put_many`` against the puts it stands for (property test on a real server).

Random batches of strict puts (one or two threads, a task's writes between them, good and bad
parents, heads, base rows and keyframe rewrites, on threads with rows already stored) run once
as the batch's own statements and once as :func:`merge_puts` makes them, each in a transaction
rolled back afterwards. Both must refuse alike, or store the same rows, leave the same
``synchronous_commit`` and answer each step alike.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from _pg import private_schema
from hypothesis import given, settings
from hypothesis import strategies as st

from plait.checkpoint._engine_ops import Step
from plait.checkpoint.postgres import PostgresSaver, _sql
from plait.checkpoint.postgres._merge import merge_puts
from plait.checkpoint.postgres._saver import _answers

IDS = [f"{n:02d}" for n in range(12)]
CHANNELS = ("x", "y")


@pytest.fixture(scope="module")
def conn() -> Iterator[psycopg.Connection[Any]]:
    with private_schema("plait_mergeprop") as dsn:
        with PostgresSaver.from_conn_string(dsn) as saver:
            saver.setup()
        with psycopg.connect(dsn, autocommit=True) as conn:
            yield conn


def _stored(cur: psycopg.ClientCursor[Any]) -> tuple[list[Any], ...]:
    return (
        cur.execute(
            "SELECT thread_id, channel, version, prev_id, type, blob FROM plait_checkpoint_blobs ORDER BY 1, 2, 3"
        ).fetchall(),
        cur.execute(
            "SELECT thread_id, checkpoint_id, parent_checkpoint_id, step, source, checkpoint, metadata"
            " FROM plait_checkpoints ORDER BY 1, 2"
        ).fetchall(),
        cur.execute(
            "SELECT thread_id, checkpoint_id, task_id, idx FROM plait_checkpoint_writes ORDER BY 1, 2, 3, 4"
        ).fetchall(),
        cur.execute("SHOW synchronous_commit").fetchall(),
    )


def _outcome(conn: psycopg.Connection[Any], steps: tuple[Step, ...]) -> tuple[Any, ...]:
    """``("refused",)``, or the stored rows and the answers; rolled back either way."""
    with psycopg.ClientCursor(conn) as cur:
        cur.execute("BEGIN")
        try:
            cur.execute(_sql.join_steps(cur, steps))  # pyright: ignore[reportArgumentType, reportCallIssue]
            answers = _answers(cur, steps)
        except psycopg.Error as exc:
            assert "plait_put refused" in str(exc), exc  # nothing else may fail
            return ("refused",)
        finally:
            if cur.connection.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
                cur.execute("ROLLBACK")
        try:
            return _stored(cur), answers
        finally:
            cur.execute("ROLLBACK")


def _put(  # noqa: PLR0913 - a put and what came before it
    rnd: random.Random,
    thread: str,
    cid: str,
    head: str | None,
    rows: set[tuple[str, str]],
    earlier: list[str],
) -> Step:
    """A strict put of ``cid`` after the puts ``earlier``: mostly what a run sends; each part is
    sometimes stale or broken (a parent that is an earlier put but not the head: a fork)."""

    def fine() -> bool:
        return rnd.random() < 0.9

    parent = head if rnd.random() < 0.8 else rnd.choice([None, *earlier, *earlier, *earlier, *IDS])
    expected = head if fine() else rnd.choice([None, *IDS])
    blobs: list[tuple[Any, ...]] = []
    rewrites: list[tuple[Any, ...]] = []
    for channel in CHANNELS:
        known = sorted(v for c, v in rows if c == channel)
        if rnd.random() < 0.7:
            prev = rnd.choice([None, *known]) if fine() else rnd.choice([None, cid, *IDS])
            blobs.append((channel, cid, prev, "delta" if prev else "full", bytes([rnd.randrange(256)])))
        if rnd.random() < 0.3:  # a keyframe: an older row rewritten (any row, now and then)
            older = [v for v in known if v < cid] or [v for v in IDS if v < cid] or [cid]
            target = rnd.choice(older) if fine() else rnd.choice(IDS)
            rewrites.append((channel, target, cid, "delta", b"rw" + cid.encode()))
    need = rnd.random() < 0.5 or any(row[2] is not None for row in blobs)
    own: list[object] = [thread, "", cid, parent, need, rnd.random() < 0.6, expected, f"1:{thread}"]
    own += [rnd.random() < 0.8, rnd.choice([1, None]), "loop", "2026-12-02", cid.encode(), b"\x80"]
    for table in (blobs, rewrites):
        own += [[row[i] for row in table] for i in range(5)]
    return Step(_sql.STRICT[_sql.PUT], _sql.strict_params(own))


def _scenario(conn: psycopg.Connection[Any], rnd: random.Random) -> tuple[Step, ...]:
    """Rows already stored on threads ``T`` and ``U``, and a batch of puts on one or both."""
    stored = sorted(rnd.sample(IDS[:5], rnd.randint(0, 3)))
    conn.execute(
        "DELETE FROM plait_checkpoint_blobs; DELETE FROM plait_checkpoints; DELETE FROM plait_checkpoint_writes"
    )
    rows = {(c, i) for c in CHANNELS for i in stored if rnd.random() < 0.7}
    for thread in ("T", "U"):
        for cid in stored:
            conn.execute(
                "INSERT INTO plait_checkpoints VALUES (%s, '', %s, NULL, 0, 'loop', 'now', '\\x00', '\\x00')",
                [thread, cid],
            )
        for channel, cid in rows:
            conn.execute(
                "INSERT INTO plait_checkpoint_blobs VALUES (%s, '', %s, %s, NULL, 'full', '\\x01')",
                [thread, channel, cid],
            )
    lanes: list[list[Step]] = []
    for thread in ("T", "U") if rnd.random() < 0.5 else ("T",):
        count = rnd.randint(2, 4)
        ids = sorted(rnd.sample(IDS[4:], count)) if rnd.random() < 0.8 else rnd.sample(IDS, count)
        head, known, lane = (stored[-1] if stored else None), set(rows), []
        for cid in ids:
            lane.append(_put(rnd, thread, cid, head, known, ids[: len(lane)]))
            known |= {(c, cid) for c in lane[-1].params[4 + 14]}  # the channels it wrote
            head = cid if head is None or cid > head else head
        lanes.append(lane)
    steps: list[Step] = []
    while any(lanes):
        lane = rnd.choice([lane for lane in lanes if lane])
        steps.append(lane.pop(0))
        if rnd.random() < 0.3:
            steps.extend(
                _sql.writes_steps(("T", ""), rnd.choice(IDS), "task", [(0, "x", "", b"\x01")], False)
            )
    return tuple(steps)


@settings(max_examples=400, deadline=None)
@given(st.randoms(use_true_random=False))
def test_a_merged_batch_refuses_or_stores_exactly_as_its_puts_one_by_one(
    conn: psycopg.Connection[Any], rnd: random.Random
) -> None:
    steps = _scenario(conn, rnd)
    merged, expand = merge_puts(steps)
    alone = _outcome(conn, steps)
    joined = _outcome(conn, merged)
    if expand is not None and len(joined) == 2:
        joined = (joined[0], expand(joined[1]))
    assert joined == alone
