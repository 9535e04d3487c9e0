"""Drivers of the natively async SQL savers: async operations run on their event loop.

Sync calls (``get_tuple``, ``put`` …) from another thread are handed to that loop; from the
loop itself they would deadlock, so they are refused with the async name to use instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from typing import TypeVar

from plait.checkpoint._engine_ops import Op, Ops, adrive, aiterate

__all__ = ["NativeAsync"]

_T = TypeVar("_T")


class NativeAsync:
    """Mixed in before ``SqlSaverBase`` by the async savers (which set ``loop`` and ``_aperform``)."""

    loop: asyncio.AbstractEventLoop

    async def _aperform(self, op: Op) -> object:
        raise NotImplementedError

    async def _adrive(self, ops: Ops[_T]) -> _T:
        return await adrive(ops, self._aperform)

    async def _aitems(self, ops: Ops[None]) -> AsyncIterator[object]:
        async for item in aiterate(ops, self._aperform):
            yield item

    def _perform(self, op: Op) -> object:
        return self._on_loop(self._aperform(op))

    def _on_loop(self, job: Coroutine[object, object, _T]) -> _T:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            job.close()
            raise asyncio.InvalidStateError(
                f"Synchronous calls to {type(self).__name__} are only allowed from a thread other than its "
                "event loop's; on the loop, use the async methods (aget_tuple, aput, alist, ...) or "
                "ainvoke/astream."
            )
        return asyncio.run_coroutine_threadsafe(job, self.loop).result()
