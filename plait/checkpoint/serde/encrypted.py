"""``EncryptedSerializer``: checkpoint values encrypted at rest (LangGraph's ``serde.encrypted``).

Wrap a serializer and a cipher, and give it to a saver::

    serde = EncryptedSerializer.from_pycryptodome_aes()  # key from LANGGRAPH_AES_KEY
    saver = SqliteSaver.from_conn_string("threads.db", serde=serde)

As in LangGraph, :meth:`~EncryptedSerializer.dumps_typed` returns the inner serializer's tag with
the cipher's name appended (``"msgpack+aes"``) and the cipher's bytes; for AES these are
``nonce (16) + MAC tag (16) + ciphertext`` in EAX mode, so values LangGraph encrypted decrypt here.
plait's savers store untagged bytes (:meth:`~EncryptedSerializer.dumps`): the same tag and
ciphertext behind a marker no plain value starts with. Unencrypted values still load, so a
thread written before encryption was turned on stays readable.

AES needs the ``encrypted`` extra (``pip install 'plait[encrypted]'``, for pycryptodome).
"""

from __future__ import annotations

import os
from typing import Any

from plait.checkpoint.serde.base import CipherProtocol, SerializerProtocol
from plait.checkpoint.serde.jsonplus import JsonPlusSerializer
from plait.errors import DecryptionError, InvalidConfigError, SerializationError

__all__ = ["CipherProtocol", "EncryptedSerializer"]

MARKER = b"\xc1\xe7"
"""Starts an encrypted value: 0xc1 never starts MessagePack, and 0xe7 after it cannot start deflate data."""
KEY_VAR = "LANGGRAPH_AES_KEY"


class EncryptedSerializer:
    """A serializer whose output ``cipher`` encrypts.

    Args:
        cipher: Encrypts and decrypts (see :meth:`from_pycryptodome_aes`).
        serde: Encodes values before they are encrypted (default: :class:`JsonPlusSerializer`).
    """

    def __init__(self, cipher: CipherProtocol, serde: SerializerProtocol | None = None) -> None:
        self.cipher = cipher
        self.serde: Any = serde if serde is not None else JsonPlusSerializer()

    # -- LangGraph's typed protocol ----------------------------------------------------------

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """``(tag + "+" + cipher name, ciphertext)`` of ``obj``."""
        tag, data = self.serde.dumps_typed(obj)
        name, ciphertext = self.cipher.encrypt(data)
        return f"{tag}+{name}", ciphertext

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Decode a pair made by :meth:`dumps_typed`; a tag without ``+`` is a plain value.

        Raises:
            DecryptionError: another key encrypted it, or the bytes were altered.
        """
        tag, payload = data
        if "+" not in tag:
            return self.serde.loads_typed(data)
        inner, name = tag.split("+", 1)
        return self.serde.loads_typed((inner, self._decrypt(name, payload)))

    def _decrypt(self, name: str, ciphertext: bytes) -> bytes:
        try:
            return self.cipher.decrypt(name, ciphertext)
        except DecryptionError:
            raise
        except (ValueError, KeyError) as exc:  # pycryptodome: "MAC check failed", a short input
            raise DecryptionError(
                f"Cannot decrypt a stored value ({name}): {exc}. It was encrypted with another key, "
                "or altered; use the key it was written with"
            ) from exc

    # -- plait's savers (untagged bytes) -----------------------------------------------------

    def dumps(self, obj: Any) -> bytes:
        """Encrypted bytes of ``obj``, with their tag, for plait's savers."""
        tag, ciphertext = self.dumps_typed(obj)
        return MARKER + tag.encode() + b"\x00" + ciphertext

    def loads(self, data: bytes) -> Any:
        """Decode bytes made by :meth:`dumps`; bytes without the marker are a plain value.

        Raises:
            DecryptionError: another key encrypted it, or the bytes were altered.
            SerializationError: the bytes are not a value at all.
        """
        data = bytes(data)
        if not data.startswith(MARKER):
            return self.serde.loads(data)
        tag, sep, ciphertext = data[len(MARKER) :].partition(b"\x00")
        if not sep:
            raise SerializationError("Cannot decode stored value: an encrypted value without its tag")
        return self.loads_typed((tag.decode("ascii", "replace"), ciphertext))

    def allow(self, *items: type | str) -> EncryptedSerializer:
        """Allow more classes on the inner serializer (see :meth:`Serializer.allow`); returns ``self``."""
        self.serde.allow(*items)
        return self

    def rebuildable(self, code: int, module: str, qualname: str) -> type | None:
        """The inner serializer's answer (see :meth:`Serializer.rebuildable`)."""
        found: type | None = self.serde.rebuildable(code, module, qualname)
        return found

    @classmethod
    def from_pycryptodome_aes(
        cls, serde: SerializerProtocol | None = None, **kwargs: Any
    ) -> EncryptedSerializer:
        """AES (EAX mode unless ``mode=`` says otherwise) with ``key=`` or the ``LANGGRAPH_AES_KEY`` variable.

        Args:
            serde: The inner serializer.
            **kwargs: ``key`` (16, 24 or 32 bytes), and options of ``Crypto.Cipher.AES.new``.

        Raises:
            ImportError: pycryptodome is not installed (the ``encrypted`` extra).
            InvalidConfigError: no key, or a key of another length (a ``ValueError``).
        """
        try:
            from Crypto.Cipher import AES  # noqa: PLC0415 - the optional extra, loaded when asked for
        except ImportError:
            raise ImportError(
                "EncryptedSerializer.from_pycryptodome_aes needs pycryptodome: pip install 'plait[encrypted]'"
            ) from None
        key = _key(kwargs.pop("key", None))
        if kwargs.get("mode") is None:
            kwargs["mode"] = AES.MODE_EAX
        return cls(_AesCipher(AES, key, kwargs), serde)


def _key(given: bytes | str | None) -> bytes:
    if given is None:
        found = os.getenv(KEY_VAR)
        if found is None:
            raise InvalidConfigError(
                f"{KEY_VAR} environment variable is not set: set it to a 16, 24 or 32 byte key, or pass key=",
                field=KEY_VAR,
            )
        given = found
    key = given.encode() if isinstance(given, str) else bytes(given)
    if len(key) not in (16, 24, 32):
        raise InvalidConfigError(
            f"{KEY_VAR} must be 16, 24, or 32 bytes long (AES-128/192/256), not {len(key)}", field=KEY_VAR
        )
    return key


class _AesCipher:
    """pycryptodome AES, laid out as LangGraph lays it out: ``nonce (16) + tag (16) + ciphertext``."""

    def __init__(self, aes: Any, key: bytes, options: dict[str, Any]) -> None:
        self._aes = aes
        self._key = key
        self._options = options

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        cipher = self._aes.new(self._key, **self._options)
        ciphertext, tag = cipher.encrypt_and_digest(plaintext)
        return "aes", bytes(cipher.nonce) + bytes(tag) + bytes(ciphertext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        if ciphername != "aes":
            raise DecryptionError(f"Cannot decrypt a value encrypted with {ciphername!r}: this cipher is AES")
        cipher = self._aes.new(self._key, nonce=ciphertext[:16], **self._options)
        plaintext: bytes = cipher.decrypt_and_verify(ciphertext[32:], ciphertext[16:32])
        return plaintext
