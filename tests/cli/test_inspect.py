"""The local inspector: threads, history, show, diff, prune, migrate on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from plait.checkpoint.sqlite import SqliteSaver
from plait.cli import main
from plait.cli.demo import build_graph


@pytest.fixture()
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "app.sqlite")
    with SqliteSaver.from_conn_string(path) as saver:
        graph = build_graph().compile(checkpointer=saver)
        for thread in ("alice", "bob"):
            for text in ("我想退货", "发货要多久", "滤芯多久换", "谢谢"):
                graph.invoke({"messages": [("user", text)]}, {"configurable": {"thread_id": thread}})
    return path


def run(*args: str, columns: int = 200) -> str:
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_threads_lists_every_thread_with_its_checkpoints(db: str) -> None:
    out = run("threads", db)
    assert "alice" in out and "bob" in out and "20" in out


def test_history_newest_first_with_changed_keys(db: str) -> None:
    out = run("history", db, "alice", "--limit", "3")
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert [r.split("│")[1].strip() for r in rows] == ["18", "17", "16"]
    assert "messages" in rows[0] and "topics, turn" in rows[2]


def test_an_80_column_terminal_gets_no_line_longer_than_80(db: str) -> None:
    from rich.cells import cell_len

    with SqliteSaver.from_conn_string(db) as saver:
        graph = build_graph().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "alice"}}
        past = list(graph.get_state_history(config))[5]
        graph.invoke({"messages": [("user", "a long question " * 10)]}, past.config)
        ids = [h.config["configurable"]["checkpoint_id"] for h in graph.get_state_history(config)][:5]
    for args in (("threads", db), ("history", db, "alice", "--limit", "40"), ("diff", db, "alice")):
        out = run(*args, columns=80)
        assert max(cell_len(line) for line in out.splitlines()) <= 80, out
    out = run("show", db, "alice", columns=80)
    assert max(cell_len(line) for line in out.splitlines()) <= 80, out
    history_out = run("history", db, "alice", "--limit", "40", columns=80)
    assert all(i in history_out for i in ids)  # ids stay whole, to copy into show --checkpoint
    assert "fork of" in history_out and "changed topics, turn; next respond" in history_out
    assert "│" in run("history", db, "alice", columns=200)  # a wide terminal gets the table


def test_show_prints_the_messages_and_slots(db: str) -> None:
    out = run("show", db, "bob")
    assert "messages: 6 messages" in out and "turn: 4" in out and "谢谢" in out


def test_diff_shows_added_and_removed_messages(db: str) -> None:
    out = run("diff", db, "alice", "--limit", "4")
    assert "+ messages: human 谢谢" in out
    assert "- messages: 2 message(s) removed" in out
    assert "~ turn: 3 -> 4" in out


def test_prune_keeps_the_newest_and_the_thread_stays_readable(db: str) -> None:
    assert "deleted 17 checkpoint(s)" in run("prune", db, "alice", "--keep-last", "3")
    assert "turn: 4" in run("show", db, "alice")
    assert "bob" in run("threads", db)


def test_bad_input_is_a_clear_usage_error(db: str, tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(main, ["threads", str(tmp_path / "nope.sqlite")])
    assert missing.exit_code == 2 and "no such SQLite file" in missing.output
    bad = runner.invoke(main, ["prune", db, "alice", "--older-than", "7x"])
    assert bad.exit_code == 2 and "is not a duration" in bad.output
    nothing = runner.invoke(main, ["prune", db, "alice"])
    assert nothing.exit_code == 2 and "--keep-last" in nothing.output
    unknown = runner.invoke(main, ["show", db, "nobody"])
    assert unknown.exit_code == 1 and "has no checkpoint" in unknown.output


def test_migrate_is_idempotent(db: str) -> None:
    assert "up to date" in run("migrate", db)
    assert "up to date" in run("migrate", db)


def test_inspector_refuses_foreign_or_broken_files_without_touching_them(tmp_path: Path) -> None:
    import sqlite3

    runner = CliRunner()
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    bad = runner.invoke(main, ["threads", str(junk)])
    assert bad.exit_code == 2 and "is not a SQLite database" in bad.output
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    none_yet = runner.invoke(main, ["threads", str(empty)])
    assert none_yet.exit_code == 1 and "no plait checkpoints yet" in none_yet.output
    foreign = tmp_path / "langgraph.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE checkpoints (thread_id TEXT, checkpoint BLOB)")
    conn.commit()
    conn.close()
    refused = runner.invoke(main, ["history", str(foreign), "t"])
    assert refused.exit_code == 1 and "plait migrate --from-langgraph" in refused.output
    conn = sqlite3.connect(foreign)
    assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master")} == {"checkpoints"}, "left untouched"


# -- untrusted files: a planted row runs nothing and ends the command with one error line -----------------


def _evil_record(marker: Path) -> bytes:
    import sys

    import ormsgpack

    args = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    gadget = ormsgpack.Ext(
        13,
        ormsgpack.packb(["plait.checkpoint._lease", "asyncio.subprocess.subprocess.Popen", {"args": args}]),
    )
    return ormsgpack.packb({"loc": gadget, "v": gadget})


def _plant(db: str, table: str, value: bytes) -> None:
    import sqlite3

    conn = sqlite3.connect(db)
    with conn:
        if table == "checkpoint_writes":
            head = conn.execute(
                "SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = 'alice'"
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, "
                "channel, task_path, value) VALUES ('alice', '', ?, 'evil', 0, 'messages', '', ?)",
                (head, value),
            )
        else:
            column, name = {
                "checkpoints": ("checkpoint", table),
                "checkpoint_blobs": ("value", f"plait_{table}"),
            }[table]
            conn.execute(f"UPDATE {name} SET {column} = ? WHERE thread_id = 'alice'", (value,))  # noqa: S608
    conn.close()


@pytest.mark.parametrize("table", ["checkpoints", "checkpoint_blobs", "checkpoint_writes"])
def test_planted_rows_in_an_untrusted_file_run_nothing_and_fail_cleanly(
    db: str, tmp_path: Path, table: str
) -> None:
    import time

    marker = tmp_path / "pwned"
    _plant(db, table, _evil_record(marker))
    runner = CliRunner()
    commands = [["show", db, "alice"], ["diff", db, "alice"]]
    if table == "checkpoints":
        commands.append(["history", db, "alice"])
    for args in commands:
        result = runner.invoke(main, args)
        assert result.exit_code == 1, (args, result.output)
        assert result.output.startswith("Error: cannot read a stored row: "), result.output
        assert "Popen" in result.output and "Traceback" not in result.output
        assert isinstance(result.exception, SystemExit)
    assert "messages: 6 messages" in run("show", db, "bob")  # other threads stay readable
    time.sleep(0.3)
    assert not marker.exists()


def test_inspector_on_a_planted_file_in_a_real_process_prints_no_traceback(db: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    marker = tmp_path / "pwned"
    _plant(db, "checkpoint_blobs", _evil_record(marker))
    _plant(db, "checkpoint_writes", b"\xc1\xff" + (2**31).to_bytes(4, "big") + b"\x00" * 64)  # declares 2 GiB
    proc = subprocess.run(
        [sys.executable, "-c", "from plait.cli import main; main()", "show", db, "alice"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: cannot read a stored row: ") and "Traceback" not in proc.stderr
    assert not marker.exists()


def test_unknown_thread_empty_database_and_bad_limit_are_clear_errors(db: str, tmp_path: Path) -> None:
    runner = CliRunner()
    for command in ("diff", "history", "show"):
        out = runner.invoke(main, [command, db, "nobody"])
        assert out.exit_code == 1 and "thread 'nobody' has no checkpoints" in out.output, out.output
        assert "Traceback" not in out.output
    for command in ("diff", "history"):
        out = runner.invoke(main, [command, db, "alice", "--limit", "-3"])
        assert out.exit_code == 2 and "--limit" in out.output and "Traceback" not in out.output
    import sqlite3

    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    out = runner.invoke(main, ["diff", str(empty), "t"])
    assert out.exit_code == 1 and "no plait checkpoints yet" in out.output


def test_help_says_db_may_be_a_dsn() -> None:
    for command in ("threads", "history", "show", "diff", "prune", "migrate"):
        out = run(command, "--help")
        assert "PostgreSQL DSN" in out and "host=" in out, command


def test_forks_are_visible_in_history(db: str) -> None:
    with SqliteSaver.from_conn_string(db) as saver:
        graph = build_graph().compile(checkpointer=saver)
        past = list(graph.get_state_history({"configurable": {"thread_id": "alice"}}))[5]
        graph.invoke({"messages": [("user", "again")]}, past.config)
    out = run("history", db, "alice", "--limit", "40")
    assert "fork of" in out


def test_postgres_reads_never_create_tables_and_keyword_dsns_work() -> None:
    import psycopg
    from _pg import private_schema

    with private_schema() as dsn:
        schema = dsn.rsplit("%3D", 1)[1]
        keywords = f"host=127.0.0.1 port=5432 user=postgres dbname=test options=-csearch_path={schema}"
        for target in (dsn, keywords):
            out = CliRunner().invoke(main, ["threads", target])
            assert out.exit_code == 1 and "no plait checkpoints yet" in out.output, out.output
        with psycopg.connect(dsn) as conn:
            tables = conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
            ).fetchone()
            assert tables == (0,), "a read created tables"
            conn.execute("CREATE TABLE checkpoints (thread_id text, checkpoint jsonb)")
        out = CliRunner().invoke(main, ["history", keywords, "t"])
        assert out.exit_code == 1 and "plait migrate --from-langgraph" in out.output, out.output
