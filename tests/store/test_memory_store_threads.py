"""InMemoryStore read from several threads while others write: reads take no lock when nothing
expires, and must still see whole items (an older or a newer one, never a mix or an error)."""

from __future__ import annotations

import threading

from plait.store.memory import InMemoryStore


def test_reads_without_a_lock_see_whole_items_while_threads_write() -> None:
    store = InMemoryStore()
    for k in range(50):
        store.put(("ns",), f"k{k}", {"v": 0, "w": 0})
    start = threading.Barrier(6)
    bad: list[object] = []

    def write(offset: int) -> None:
        start.wait()
        for i in range(2000):
            n = offset + i
            store.put(("ns",), f"k{n % 50}", {"v": n, "w": n})  # v and w always equal in one item

    def read() -> None:
        start.wait()
        for i in range(4000):
            item = store.get(("ns",), f"k{i % 50}")
            if item is None or item.value["v"] != item.value["w"] or item.key != f"k{i % 50}":
                bad.append(item)

    threads = [threading.Thread(target=write, args=(o,)) for o in (0, 10_000, 20_000)]
    threads += [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
    item = store.get(("ns",), "k0")
    assert item is not None and item.value["v"] in {1950, 11950, 21950}
