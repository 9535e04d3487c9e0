"""Field paths into stored values: ``"a.b"``, ``"a[0]"``, ``"a[-1]"``, ``"a[*].c"``, ``"a.*"``, ``"{a,b.c}"``.

:func:`get_text_at_path` returns the texts an index embeds for one path; ``"$"``
(or an empty path) is the whole value as JSON. Mappings of any kind are walked,
not only dicts.
"""

from __future__ import annotations

import json

from plait._internal._narrow import is_list, is_str_mapping

__all__ = ["get_text_at_path", "tokenize_path"]

Path = tuple[str, ...]


def tokenize_path(path: str) -> Path:
    """Split a field path into tokens: names, ``[i]``/``[*]`` and ``{a,b}`` groups.

    Args:
        path: A path such as ``"a.b[*].c"``.

    Returns:
        The tokens.
    """
    tokens: list[str] = []
    word = ""
    i = 0
    while i < len(path):
        char = path[i]
        if char in "[{":
            if word:
                tokens.append(word)
                word = ""
            close = "]" if char == "[" else "}"
            end = path.find(close, i)
            end = len(path) - 1 if end < 0 else end
            tokens.append(path[i : end + 1])
            i = end + 1
            continue
        if char == ".":
            if word:
                tokens.append(word)
            word = ""
        else:
            word += char
        i += 1
    if word:
        tokens.append(word)
    return tuple(tokens)


def _plain(obj: object) -> object:
    """``obj`` with every mapping turned into a dict, for ``json.dumps``."""
    if is_str_mapping(obj):
        return {k: _plain(v) for k, v in obj.items()}
    if is_list(obj):
        return [_plain(v) for v in obj]
    return obj


def _leaf(obj: object) -> list[str]:
    if isinstance(obj, (str, int, float, bool)):
        return [str(obj)]
    if is_list(obj) or is_str_mapping(obj):
        return [json.dumps(_plain(obj), sort_keys=True, ensure_ascii=False)]
    return []


def _child(obj: object, name: str) -> object:
    return obj.get(name) if is_str_mapping(obj) else None


def _index(obj: object, inner: str, rest: Path) -> list[str]:
    """``[i]`` (negative counts from the end) or ``[*]`` applied to a list."""
    if not is_list(obj):
        return []
    items = obj
    if inner == "*":
        return [text for item in items for text in _walk(item, rest)]
    try:
        return _walk(items[int(inner)], rest)
    except (ValueError, IndexError):
        return []


def _group(obj: object, inner: str) -> list[str]:
    """``{a,b.c}``: the texts of several fields of a mapping."""
    if not is_str_mapping(obj):
        return []
    found: list[str] = []
    for field in inner.split(","):
        target: object = obj
        for name in tokenize_path(field.strip()):
            target = _child(target, name)
        found.extend(_leaf(target) if target is not None else [])
    return found


def _walk(obj: object, tokens: Path) -> list[str]:
    if not tokens:
        return _leaf(obj)
    token, rest = tokens[0], tokens[1:]
    if token.startswith("["):
        return _index(obj, token[1:-1], rest)
    if token.startswith("{"):
        return _group(obj, token[1:-1])
    if token == "*":
        if is_str_mapping(obj):
            return [text for item in obj.values() for text in _walk(item, rest)]
        if is_list(obj):
            return [text for item in obj for text in _walk(item, rest)]
        return []
    if is_str_mapping(obj) and token in obj:
        return _walk(obj[token], rest)
    return []


def get_text_at_path(obj: object, path: str | Path) -> list[str]:
    """The texts found at ``path`` in ``obj`` (``"$"`` or empty: the whole value as JSON).

    Args:
        obj: A stored value.
        path: A path string or its tokens.

    Returns:
        The texts, in document order; missing fields give none.
    """
    if path in ("", "$", ()):
        return [json.dumps(_plain(obj), sort_keys=True, ensure_ascii=False)]
    return _walk(obj, tokenize_path(path) if isinstance(path, str) else path)
