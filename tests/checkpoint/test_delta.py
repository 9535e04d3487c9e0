from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from plait.checkpoint._delta import (
    ADD,
    DELTA,
    FULL,
    KEEP,
    Blob,
    Entry,
    ValueCache,
    diff,
    encode_value,
    materialize,
    rebuild,
)
from plait.checkpoint.serde import Serializer

S = Serializer()


class Obj:
    """Distinct objects compared by identity, like messages in a transcript."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __repr__(self) -> str:
        return f"Obj({self.n})"


edits = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 3)),
        st.tuples(st.just("drop"), st.integers(0, 50), st.integers(1, 5)),
        st.tuples(st.just("replace"), st.integers(0, 50)),
        st.tuples(st.just("insert"), st.integers(0, 50)),
        st.tuples(
            st.just("clear"),
        ),
        st.tuples(st.just("dup"), st.integers(0, 50)),
    ),
    max_size=12,
)


def apply(old: list, edit: tuple, counter: list[int]) -> list:
    new = list(old)
    kind = edit[0]
    counter[0] += 1
    if kind == "append":
        new.extend(Obj(counter[0] * 10 + i) for i in range(edit[1]))
    elif kind == "drop" and new:
        i = edit[1] % len(new)
        del new[i : i + edit[2]]
    elif kind == "replace" and new:
        new[edit[1] % len(new)] = Obj(-counter[0])
    elif kind == "insert":
        new.insert(edit[1] % (len(new) + 1), Obj(counter[0]))
    elif kind == "clear":
        new = []
    elif kind == "dup" and new:
        new.append(new[edit[1] % len(new)])
    return new


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(), max_size=10), edits)
def test_materialize_of_diff_is_new(start, script):
    counter = [0]
    old = [Obj(n) for n in start]
    for edit in script:
        new = apply(old, edit, counter)
        segments = diff(old, new)
        rebuilt = materialize(old, segments)
        assert len(rebuilt) == len(new)
        assert all(a is b for a, b in zip(rebuilt, new, strict=True))
        old = new


def test_append_is_one_keep_and_one_add():
    old = [Obj(i) for i in range(100)]
    new = [*old, Obj(100)]
    assert diff(old, new) == [[KEEP, 0, 100], [ADD, [new[-1]]]]


def test_trim_front_and_replace_middle():
    old = [Obj(i) for i in range(10)]
    new = old[3:]
    new[2] = Obj(99)
    assert diff(old, new) == [[KEEP, 3, 5], [ADD, [new[2]]], [KEEP, 6, 10]]


def test_encode_value_uses_delta_and_falls_back():
    old = ["a" * 50 for _ in range(3)]
    blob, entry = encode_value(old, None, None, S.dumps)
    assert blob.kind == FULL and entry.items == old
    new = [*old, "b"]
    blob2, entry2 = encode_value(new, entry, "c1", S.dumps)
    assert blob2.kind == DELTA and blob2.prev == "c1" and len(blob2.data) < len(S.dumps(new))
    # nothing kept -> full
    blob3, _ = encode_value(["x"], entry2, "c2", S.dumps)
    assert blob3.kind == FULL
    # non-list values are always full
    blob4, entry4 = encode_value({"a": 1}, None, None, S.dumps)
    assert blob4.kind == FULL and entry4.value(S.loads) == {"a": 1}


def test_chain_is_snapshotted_when_mostly_dead():
    entry = None
    rid = None
    kinds = []
    window: list[str] = []
    for i in range(200):
        window = [*window[-4:], f"m{i}"]
        blob, entry = encode_value(window, entry, rid, S.dumps)
        rid = f"c{i}"
        kinds.append(blob.kind)
    assert kinds.count(FULL) >= 3
    assert entry.chain <= 2 * len(window) + 32


def test_rebuild_follows_prev_chain():
    rows = {}
    entry = None
    rid = None
    values = []
    value: list[str] = []
    for i in range(20):
        value = [*value[-8:], f"m{i}"]
        blob, entry = encode_value(value, entry, rid, S.dumps)
        rid = f"c{i:02d}"
        rows[rid] = blob
        values.append(list(value))
    out = rebuild("c19", rows, {}, S.loads, keep_all=True)
    assert list(out["c19"].items) == values[-1]
    assert list(out["c10"].items) == values[10]
    partial = rebuild("c19", {k: v for k, v in rows.items() if k > "c15"}, {"c15": out["c15"]}, S.loads)
    assert list(partial["c19"].items) == values[-1]
    assert "c14" not in partial


def test_cache_lru_and_drop_thread():
    cache = ValueCache(maxsize=2)
    e = Entry((1,), None, 1)
    cache.put(("t", "", "m", "1"), e)
    cache.put(("t", "", "m", "2"), e)
    assert cache.get(("t", "", "m", "1")) is e
    cache.put(("u", "", "m", "3"), e)
    assert cache.get(("t", "", "m", "2")) is None
    cache.drop_thread("t")
    assert len(cache) == 1
    assert Blob(FULL, None, b"").kind == FULL


def test_rebuild_pauses_the_collector_and_restores_it_even_on_error():
    import gc

    rows = {}
    blob, entry = encode_value(["a"], None, None, S.dumps)
    rows["c0"] = blob
    seen: list[bool] = []

    def loads(data: bytes) -> object:
        seen.append(gc.isenabled())
        return S.loads(data)

    assert gc.isenabled()
    rebuild("c0", rows, {}, loads)
    assert seen == [False] and gc.isenabled()
    try:
        rebuild("missing", rows, {}, loads)
    except KeyError:
        pass
    assert gc.isenabled()
    gc.disable()  # a caller that paused it keeps it paused
    try:
        rebuild("c0", rows, {}, loads)
        assert not gc.isenabled()
    finally:
        gc.enable()
