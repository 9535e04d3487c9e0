"""Shared fixtures for the plait test-suite."""

from __future__ import annotations

import uuid

import pytest

from plait.checkpoint.memory import InMemorySaver


@pytest.fixture
def saver() -> InMemorySaver:
    """A fresh in-memory checkpointer."""
    return InMemorySaver()


@pytest.fixture
def thread() -> dict:
    """A config addressing a brand-new thread."""
    return {"configurable": {"thread_id": f"t-{uuid.uuid4().hex}"}}
