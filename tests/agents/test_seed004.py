"""Seed 004's programs (examples/seed004_*.py: only their imports changed) against a real fakellm server.

Each program is run as its own process, with the seed's model URL pointed at fakellm.
``PLAIT_REAL_LLM=1`` with a server on 127.0.0.1:11433 (llama.cpp, as in the seed) runs
them against it instead (``test_against_the_seed_server``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEED_URL = "http://127.0.0.1:11433/v1"


def run(name: str, base_url: str, tmp_path: Path, stdin: str | None = None) -> str:
    source = (EXAMPLES / f"seed004_{name}.py").read_text()
    assert SEED_URL in source
    program = tmp_path / f"{name}.py"
    program.write_text(source.replace(SEED_URL, base_url))
    done = subprocess.run(
        [sys.executable, str(program)], input=stdin, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_sessions_are_isolated_by_thread_id(fakellm: Any, tmp_path: Path) -> None:
    fakellm.rules(
        [
            {
                "name": "recall",
                "when": {"turn": 2, "messages_contain": "张三"},
                "respond": {"content": "你叫张三，今年25岁。"},
            },
            {
                "name": "greet",
                "when": {"messages_contain": "我叫张三"},
                "respond": {"content": "你好，张三！"},
            },
            {"name": "unknown", "respond": {"content": "抱歉，我无法获取你的个人信息。"}},
        ]
    )
    out = run("agent_sessions", fakellm.base_url, tmp_path)
    assert out.splitlines() == [
        "你好，张三！",
        "[session_001] 你叫张三，今年25岁。",
        "[session_002] 抱歉，我无法获取你的个人信息。",
    ]


def test_interactive_session_program(fakellm: Any, tmp_path: Path) -> None:
    fakellm.rules(
        [
            {
                "name": "summary",
                "when": {"turn": 2, "messages_contain": "王瑞"},
                "respond": {"content": "王瑞，28岁，男性，汉族。"},
            },
            {
                "name": "greet",
                "when": {"messages_contain": "我是王瑞"},
                "respond": {"content": "你好，王瑞。"},
            },
            {"name": "unknown", "respond": {"content": "对不起，我无法提供关于您的个人信息。"}},
        ]
    )
    stdin = "你好，我是王瑞，今年28岁，男性，汉族人。\n概述一下我的基本信息\n/show\n/switch session_02\n概述一下我的基本信息\n/show\n/clear\n/show\n/exit\n"
    out = run("agent_session_cli", fakellm.base_url, tmp_path, stdin)
    assert "AI：你好，王瑞。" in out and "AI：王瑞，28岁，男性，汉族。" in out
    shown = out.split("---- 当前会话历史 ----")
    assert len(shown) == 4
    assert shown[1].split("\n\nHuman:")[0].strip().splitlines() == [
        "human: 你好，我是王瑞，今年28岁，男性，汉族人。",
        "ai: 你好，王瑞。",
        "human: 概述一下我的基本信息",
        "ai: 王瑞，28岁，男性，汉族。",
    ]
    assert ">>> 已切换会话 thread_id = session_02" in out
    assert "AI：对不起，我无法提供关于您的个人信息。" in out
    assert len(shown[2].split("\n\nHuman:")[0].strip().splitlines()) == 2  # session_02's own turn
    assert ">>> 当前会话消息已清空" in out
    assert shown[3].split("\n\nHuman:")[0].strip() == ""


def _counts(out: str, label: str) -> list[int]:
    return [int(n) for n in re.findall(label + r"(\d+)", out)]


def test_trim_by_count_keeps_first_and_last_four(fakellm: Any, tmp_path: Path) -> None:
    fakellm.rules([{"name": "reply", "respond": {"content": "好的，我们可以聊聊你最近的生活。"}}])
    out = run("agent_trim_count", fakellm.base_url, tmp_path)
    assert _counts(out, "当前消息总条数：") == [2, 4, 6, 6, 6, 6]
    assert out.count("[0] human  | 第0轮对话随便聊") == 6  # the first message is always kept
    assert "最终消息条数： 6" in out


def test_trim_by_tokens_stays_near_the_budget(fakellm: Any, tmp_path: Path) -> None:
    fakellm.rules(
        [{"name": "reply", "respond": {"content": "好的，那我们继续聊天。你最近有什么新鲜事想分享吗？"}}]
    )
    out = run("agent_trim_tokens", fakellm.base_url, tmp_path)
    tokens = [int(n) for n in re.findall(r"估算总token=(\d+)", out)]
    assert len(tokens) == 8 and max(tokens) <= 150 and tokens[0] < tokens[1]
    assert out.count("[0] human  | 第0轮对话随便聊") == 8


def test_delete_messages_program(fakellm: Any, tmp_path: Path) -> None:
    fakellm.rules([{"name": "reply", "respond": {"content": "对不起，我无法查看或处理这条消息。"}}])
    out = run("agent_delete", fakellm.base_url, tmp_path)
    assert "[填充完成｜删除前]消息总数 = 5" in out
    assert "[删除单条后]消息总数 = 4" in out
    assert "[全部清空后]消息总数 = 0" in out
    assert "[节点裁剪执行完成后]消息总数 = 5" in out


def test_summarize_program(fakellm: Any, tmp_path: Path) -> None:
    fakellm.rules(
        [
            {
                "name": "summary",
                "when": {"messages_contain": "精简为简短的对话摘要"},
                "respond": {"content": "用户在测试摘要。"},
            },
            {
                "name": "reply",
                "respond": {
                    "content": "好的，我明白了。请提供这一轮对话的内容，我会帮助您进行文本长度增加和摘要压缩效果的测试。"
                },
            },
        ]
    )
    out = run("agent_summarize", fakellm.base_url, tmp_path)
    assert "[历史对话摘要]: 用户在测试摘要。" in out
    counts = _counts(out, "消息总条数=")
    assert len(counts) == 10 and counts[:3] == [2, 4, 6] and max(counts) <= 7


def _seed_server_answers() -> bool:
    try:
        with urllib.request.urlopen(SEED_URL + "/models", timeout=2):
            return True
    except OSError:
        return False


@pytest.mark.skipif(os.environ.get("PLAIT_REAL_LLM") != "1", reason="opt-in: PLAIT_REAL_LLM=1")
def test_against_the_seed_server(tmp_path: Path) -> None:
    if not _seed_server_answers():
        pytest.skip(f"no OpenAI-compatible server answers on {SEED_URL}")
    out = run("agent_sessions", SEED_URL, tmp_path)
    lines = out.splitlines()
    assert lines[-2].startswith("[session_001] ") and lines[-1].startswith("[session_002] ")
    assert "当前消息总条数：6" in run("agent_trim_count", SEED_URL, tmp_path)
