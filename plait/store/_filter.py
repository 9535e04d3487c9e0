"""Search filters: checking them, the reference matcher, and the part SQL can evaluate.

A filter maps value keys (always field names, even ``"$x"``) to a plain value (equality; a dict matches the keys it
names, a list element-wise) or to a dict of operators ``$eq``,
``$ne``, ``$gt``, ``$gte``, ``$lt`` and ``$lte``. Comparisons follow JSON types:
``True`` does not equal ``1``, a missing key equals ``None``, and ordering
compares numbers with numbers and strings with strings (by code point) only;
any other pair does not match. A key names a top-level field; a key with dots
that is not itself a top-level field is a path into nested objects
(``"user.role"``), as in LangGraph's SQLite store. Every store answers the same; the SQL stores
translate filters on scalars to SQL (:func:`scalar_terms`) and evaluate the
rest with :func:`matches`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from plait._internal._narrow import is_mapping, is_sequence, is_str_mapping
from plait.store.base import InvalidFilterError

__all__ = [
    "OPERATORS",
    "Term",
    "check_filter",
    "kind_of",
    "matcher",
    "matches",
    "scalar_terms",
]

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
Term = tuple[str, str, object]
"""One SQL-evaluable condition: ``(key, operator, scalar)``."""

_MISSING: object = None
_INT64 = 2**63
_SAFE_KEY = re.compile(r"[A-Za-z0-9_.\-]+")


def check_filter(conditions: Mapping[Any, Any], *, safe_keys: bool = False) -> None:
    """Check a search filter; its top-level keys are field names, never operators.

    Args:
        conditions: The filter.
        safe_keys: Also require every top-level key to be a non-empty string of ASCII
            letters, digits, ``_``, ``.`` and ``-``, as LangGraph's SQLite store does.

    Raises:
        InvalidFilterError: On an unknown operator, a dict mixing operators and
            field names, or (with ``safe_keys``) another key.
    """
    for key, expected in conditions.items():
        if safe_keys and not (isinstance(key, str) and _SAFE_KEY.fullmatch(key)):
            raise InvalidFilterError(
                f"Invalid filter key: {key!r}. On a SQLite store, filter keys may contain only "
                "ASCII letters, digits, underscores, dots and hyphens; rename the field or "
                "filter the search results in Python."
            )
        _check_expected(expected)


def _check_expected(expected: object) -> None:
    if is_mapping(expected):
        fields = expected
        operators = [n for n in fields if isinstance(n, str) and n.startswith("$")]
        if operators and len(operators) != len(fields):
            raise InvalidFilterError(f"A filter dict cannot mix operators and field names: {expected!r}")
        for name in operators:
            if name not in OPERATORS:
                raise InvalidFilterError(
                    f"Unsupported filter operator: {name!r}. Use one of {sorted(OPERATORS)}."
                )
        for sub in fields.values():
            _check_expected(sub)
    elif is_sequence(expected):
        for sub in expected:
            _check_expected(sub)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object" if isinstance(value, Mapping) else "other"


def _equal(actual: Any, expected: Any) -> bool:
    """Deep JSON equality: kinds must agree at every level."""
    kind = _kind(expected)
    if _kind(actual) != kind:
        return False
    if kind == "array":
        a, e = cast("Sequence[object]", actual), cast("Sequence[object]", expected)
        return len(a) == len(e) and all(_equal(x, y) for x, y in zip(a, e, strict=True))
    if kind == "object":
        a2, e2 = cast("Mapping[str, object]", actual), cast("Mapping[str, object]", expected)
        return a2.keys() == e2.keys() and all(_equal(a2[k], e2[k]) for k in e2)
    return bool(actual == expected)


def _compare(actual: Any, name: str, arg: Any) -> bool:
    if name == "$eq":
        return _equal(actual, arg)
    if name == "$ne":
        return not _equal(actual, arg)
    kind = _kind(arg)
    if kind not in ("number", "string") or _kind(actual) != kind:
        return False
    if name == "$gt":
        return bool(actual > arg)
    if name == "$gte":
        return bool(actual >= arg)
    if name == "$lt":
        return bool(actual < arg)
    return bool(actual <= arg)


def _match(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        fields = cast("Mapping[str, object]", expected)
        if any(str(n).startswith("$") for n in fields):
            return all(_compare(actual, n, arg) for n, arg in fields.items())
        if not isinstance(actual, Mapping):
            return False
        found = cast("Mapping[str, object]", actual)
        return all(_match(found.get(k, _MISSING), e) for k, e in fields.items())
    if isinstance(expected, (list, tuple)):
        items = cast("Sequence[object]", expected)
        if not isinstance(actual, (list, tuple)):
            return False
        got = cast("Sequence[object]", actual)
        return len(got) == len(items) and all(_match(a, e) for a, e in zip(got, items, strict=True))
    return _equal(actual, expected)


def _field(value: Mapping[str, object], key: str) -> object:
    """The top-level field ``key``, else (for a dotted key) the nested field it names, else missing."""
    if key in value or not isinstance(key, str) or "." not in key:  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass any key
        return value.get(key, _MISSING)
    found: Any = value
    for part in key.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return _MISSING
        found = cast("Mapping[str, object]", found)[part]
    return found


def matches(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    """Whether a stored value satisfies every condition of a filter.

    Args:
        value: The stored value.
        conditions: The filter.

    Returns:
        ``True`` when all conditions hold.
    """
    return all(_match(_field(value, key), expected) for key, expected in conditions.items())


Test = Callable[[Mapping[str, object]], bool]


def matcher(conditions: Mapping[str, object]) -> Test:
    """:func:`matches` with the filter bound, for testing many values against one filter.

    A plain key (no dots) compared with a scalar is tested directly; other
    conditions go through the general matcher. Same answers as :func:`matches`.

    Args:
        conditions: The filter.

    Returns:
        A function of a stored value: ``True`` when all conditions hold.
    """
    tests = [_term_test(key, expected) for key, expected in conditions.items()]
    if len(tests) == 1:
        return tests[0]
    return lambda value: all(test(value) for test in tests)


def _term_test(key: str, expected: object) -> Test:  # noqa: PLR0911 - one test per JSON kind
    kind = type(expected)
    if type(key) is not str or "." in key:
        return lambda value: _match(_field(value, key), expected)
    if kind is str:
        return lambda value: isinstance(found := value.get(key), str) and found == expected
    if kind is bool:
        return lambda value: isinstance(found := value.get(key), bool) and found == expected
    if kind is int or kind is float:
        return lambda value: (
            isinstance(found := value.get(key), (int, float))
            and not isinstance(found, bool)
            and bool(found == expected)
        )
    if expected is None:
        return lambda value: value.get(key) is None
    return lambda value: _match(value.get(key, _MISSING), expected)


def _scalar(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return -_INT64 <= value < _INT64
    return value is None or isinstance(value, (str, float, bool))


def scalar_terms(conditions: Mapping[str, object] | None) -> list[Term] | None:
    """The filter as ``(key, operator, scalar)`` terms, or ``None`` if SQL cannot evaluate it.

    Only conditions on scalars (and keys without dots, quotes or backslashes)
    translate; a filter with nested dicts or lists, or a dotted key (a field or a
    path), is evaluated by :func:`matches` instead.

    Args:
        conditions: The filter.

    Returns:
        The terms (all must hold), or ``None``.
    """
    terms: list[Term] = []
    for key, expected in (conditions or {}).items():
        if not isinstance(key, str) or '"' in key or "\\" in key or "." in key:  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass any key
            return None
        if is_str_mapping(expected):
            for name, arg in expected.items():
                if not name.startswith("$") or not _scalar(arg):
                    return None
                terms.append((key, name, arg))
        elif _scalar(expected):
            terms.append((key, "$eq", expected))
        else:
            return None
    return terms


def kind_of(value: object) -> str:
    """The JSON kind of a scalar: ``null``, ``bool``, ``number`` or ``string``."""
    return _kind(value)
