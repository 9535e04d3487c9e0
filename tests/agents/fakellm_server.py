"""A real ``fakellm`` server (OpenAI-compatible, driven by YAML rules) on a free loopback port.

Used by the agent tests and by ``tests/cli/test_chat.py``. Rules are written to the
server's YAML file and reloaded; conversation turn counters are reset with them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["FakeLLM", "free_port", "start_fakellm"]


def free_port() -> int:
    """A TCP port nobody listens on (right now) on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FakeLLM:
    """A running fakellm process.

    Args:
        process: The server process.
        port: Its port.
        config: Its YAML rule file.
    """

    def __init__(self, process: subprocess.Popen[bytes], port: int, config: Path) -> None:
        self.process = process
        self.port = port
        self.config = config

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``.../v1``)."""
        return f"{self.url}/v1"

    def _post(self, path: str) -> Any:
        request = urllib.request.Request(self.url + path, data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read() or b"null")

    def rules(self, rules: list[dict[str, Any]]) -> None:
        """Replace the rules (first match wins) and forget every conversation."""
        self.config.write_text(json.dumps({"rules": rules}, ensure_ascii=False))  # JSON is YAML
        self._post("/_fakellm/reload")
        self._post("/_fakellm/reset")

    def stats(self) -> dict[str, Any]:
        """Request counts per rule and the recent requests."""
        with urllib.request.urlopen(self.url + "/_fakellm/stats", timeout=10) as answer:
            return json.loads(answer.read())  # type: ignore[no-any-return]

    def stop(self) -> None:
        """End the server process."""
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_fakellm(directory: Path) -> FakeLLM:
    """Start ``fakellm serve`` on a free port with an empty rule file in ``directory``.

    Raises:
        RuntimeError: the server did not answer within 20 seconds.
    """
    config = directory / "fakellm.yaml"
    config.write_text('{"rules": []}')
    port = free_port()
    command = [sys.executable, "-c", "from fakellm.cli import main; main()", "serve"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--config", str(config)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    process = subprocess.Popen(
        command, cwd=directory, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    server = FakeLLM(process, port, config)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"fakellm exited: {process.stderr.read().decode() if process.stderr else ''}")
        try:
            server.stats()
            return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError("fakellm did not start within 20 seconds")
