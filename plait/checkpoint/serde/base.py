"""The serializer protocol that LangGraph-style savers call (``dumps_typed`` / ``loads_typed``)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["CipherProtocol", "SerializerProtocol"]


@runtime_checkable
class SerializerProtocol(Protocol):
    """Turns a value into a ``(type tag, bytes)`` pair and back."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """Encode ``obj``; the tag says how the bytes were made."""
        ...

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Decode a pair made by :meth:`dumps_typed`."""
        ...


@runtime_checkable
class CipherProtocol(Protocol):
    """Encrypts bytes, naming the cipher, and decrypts what it encrypted (``EncryptedSerializer``)."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        """``(cipher name, ciphertext)``."""
        ...

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        """The plaintext of ``ciphertext``."""
        ...
