"""EncryptedSerializer: values encrypted at rest in a real SQLite file, in LangGraph's format."""

from __future__ import annotations

import pathlib
import sqlite3
import sys
from typing import Any

import pytest
from Crypto.Cipher import AES
from typing_extensions import TypedDict

from plait.checkpoint.serde import Serializer
from plait.checkpoint.serde.encrypted import CipherProtocol, EncryptedSerializer
from plait.checkpoint.sqlite import SqliteSaver
from plait.errors import DecryptionError, InvalidConfigError, SerializationError
from plait.graph import START, StateGraph

KEY = b"0123456789abcdef0123456789abcdef"
SECRET = "the launch code is 0000"


class State(TypedDict):
    note: str


def _graph(saver: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("echo", lambda state: {"note": state["note"] + "!"})
    builder.add_edge(START, "echo")
    return builder.compile(checkpointer=saver)


def _run(path: pathlib.Path, serde: Any) -> dict[str, Any]:
    with SqliteSaver.from_conn_string(str(path), serde=serde) as saver:
        return _graph(saver).invoke({"note": SECRET}, {"configurable": {"thread_id": "t"}})


def _state(path: pathlib.Path, serde: Any) -> Any:
    with SqliteSaver.from_conn_string(str(path), serde=serde) as saver:
        return _graph(saver).get_state({"configurable": {"thread_id": "t"}}).values


def _file_bytes(path: pathlib.Path) -> bytes:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path.read_bytes()


def test_round_trip_through_sqlite(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "threads.db"
    serde = EncryptedSerializer.from_pycryptodome_aes(key=KEY)
    assert _run(path, serde) == {"note": SECRET + "!"}
    assert SECRET.encode() not in _file_bytes(path)  # nothing readable on disk
    assert _state(path, EncryptedSerializer.from_pycryptodome_aes(key=KEY)) == {"note": SECRET + "!"}


def test_wrong_key_fails_with_a_typed_error(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "threads.db"
    _run(path, EncryptedSerializer.from_pycryptodome_aes(key=KEY))
    wrong = EncryptedSerializer.from_pycryptodome_aes(key=b"x" * 32)
    with pytest.raises(SerializationError, match="encrypted with another key") as info:
        _state(path, wrong)  # the saver names the checkpoint it could not read...
    cause = info.value.__cause__
    assert isinstance(cause, DecryptionError)  # ...because of this
    assert isinstance(cause, ValueError)  # pycryptodome's failed check is a ValueError in LangGraph


def test_plain_rows_stay_readable_once_encryption_is_on(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "threads.db"
    _run(path, Serializer())
    assert _state(path, EncryptedSerializer.from_pycryptodome_aes(key=KEY)) == {"note": SECRET + "!"}


def test_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGGRAPH_AES_KEY", KEY.decode())
    serde = EncryptedSerializer.from_pycryptodome_aes()
    assert serde.loads_typed(serde.dumps_typed({"a": [1, 2]})) == {"a": [1, 2]}
    assert EncryptedSerializer.from_pycryptodome_aes(key=KEY).loads(serde.dumps("x")) == "x"
    monkeypatch.setenv("LANGGRAPH_AES_KEY", "short")
    with pytest.raises(InvalidConfigError, match="16, 24, or 32 bytes"):
        EncryptedSerializer.from_pycryptodome_aes()
    monkeypatch.delenv("LANGGRAPH_AES_KEY")
    with pytest.raises(ValueError, match="LANGGRAPH_AES_KEY environment variable is not set"):
        EncryptedSerializer.from_pycryptodome_aes()


def test_typed_format_is_langgraphs() -> None:
    """``("msgpack+aes", nonce + tag + ciphertext)``, EAX mode: what LangGraph writes and reads."""
    serde = EncryptedSerializer.from_pycryptodome_aes(key=KEY)
    tag, blob = serde.dumps_typed({"k": "v"})
    assert tag == "msgpack+aes"
    plain = AES.new(KEY, AES.MODE_EAX, nonce=blob[:16]).decrypt_and_verify(blob[32:], blob[16:32])
    assert serde.serde.loads_typed(("msgpack", plain)) == {"k": "v"}
    cipher = AES.new(KEY, AES.MODE_EAX)  # as LangGraph lays a value out
    body, mac = cipher.encrypt_and_digest(serde.serde.dumps_typed([1, "two"])[1])
    assert serde.loads_typed(("msgpack+aes", cipher.nonce + mac + body)) == [1, "two"]
    assert serde.loads_typed(("null+aes", serde.cipher.encrypt(b"")[1])) is None
    assert serde.loads_typed(serde.serde.dumps_typed("plain")) == "plain"  # no "+": not encrypted


def test_tampered_or_foreign_values_are_refused() -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=KEY)
    tag, blob = serde.dumps_typed("value")
    with pytest.raises(DecryptionError):
        serde.loads_typed((tag, blob[:-1] + bytes([blob[-1] ^ 1])))
    with pytest.raises(DecryptionError, match="'rot13'"):
        serde.loads_typed(("msgpack+rot13", blob))


def test_custom_cipher() -> None:
    class Reverse:
        def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
            return "rev", plaintext[::-1]

        def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
            return ciphertext[::-1]

    assert isinstance(Reverse(), CipherProtocol)
    serde = EncryptedSerializer(Reverse())
    assert serde.dumps_typed(None) == ("null+rev", b"")
    assert serde.loads(serde.dumps({"x": 1})) == {"x": 1}


def test_missing_pycryptodome_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "Crypto", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "Crypto.Cipher", None)
    with pytest.raises(ImportError, match=r"plait\[encrypted\]"):
        EncryptedSerializer.from_pycryptodome_aes(key=KEY)
