"""The functional API: ``@entrypoint`` workflows made of ``@task`` calls.

A workflow is a plain function. Decorated with :class:`entrypoint` it becomes a
graph you ``invoke``/``stream`` (with a checkpointer: on a thread, resumable
after ``interrupt()``). Functions decorated with :func:`task` and called inside
it run in parallel and return futures; their results are saved, so a resumed
workflow replays finished calls instead of running them again::

    @task
    def double(x: int) -> int:
        return 2 * x

    @entrypoint(checkpointer=InMemorySaver())
    def workflow(numbers: list[int]) -> list[int]:
        futures = [double(n) for n in numbers]
        answer = interrupt("go on?")
        return [f.result() for f in futures] if answer == "yes" else []
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeGuard, TypeVar, get_args, get_origin, overload

from plait.pregel._cache import task_namespace
from plait.pregel._entrypoint import EXTRAS, EntrypointPregel, entrypoint_plan
from plait.pregel._func_tasks import TaskSpec, call_task
from plait.pregel._timeout import sync_timeout_error
from plait.types import CachePolicy, RetryPolicy, TimeoutPolicy, retry_policies

__all__ = ["entrypoint", "task"]

R = TypeVar("R")
S = TypeVar("S")
_TASK_EXTRAS = ("config", "runtime", "store", "writer")


def _signature(fn: Callable[..., object]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


class _TaskFunction:
    """A ``@task`` function: calling it inside a workflow starts it and returns a future."""

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec
        self.func = spec.fn
        self.name = spec.name
        self.retry_policy = spec.retry
        self.cache_policy = spec.cache_policy
        functools.update_wrapper(self, spec.fn)

    def __call__(self, *args: object, **kwargs: object) -> Any:
        """Start the task; a future (``.result()``; awaitable in an async workflow).

        Raises:
            RuntimeError: called outside a running workflow.
        """
        return call_task(self.spec, args, kwargs)

    # >>> async source
    async def aclear_cache(self, cache: Any) -> None:
        """Delete this task's results from ``cache``."""
        if self.spec.cache_policy is not None:
            await cache.aclear([self.spec.cache_ns])

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def clear_cache(self, cache: Any) -> None:
        """Delete this task's results from ``cache``."""
        if self.spec.cache_policy is not None:
            cache.clear([self.spec.cache_ns])

    # <<< generated sync


def _task_name(fn: Callable[..., object], name: str | None) -> str:
    if name:
        return name
    while isinstance(fn, functools.partial):
        fn = fn.func
    found = getattr(fn, "__name__", None)
    return found if isinstance(found, str) else type(fn).__name__


def _make_task(
    fn: Callable[..., object],
    name: str | None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None,
    cache_policy: CachePolicy[Callable[..., str | bytes]] | None,
    timeout: TimeoutPolicy | None = None,
) -> _TaskFunction:
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise NotImplementedError("Generators are not supported in the functional API (@task)")
    sig = _signature(fn)
    extras = tuple(n for n in _TASK_EXTRAS if sig is not None and n in sig.parameters)
    call = None if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)
    if timeout is not None and not is_async:
        raise sync_timeout_error(_task_name(fn, name), kind="Task")
    spec = TaskSpec(
        fn=fn,
        name=_task_name(fn, name),
        retry=retry_policies(retry_policy),
        cache_policy=cache_policy,
        cache_ns=task_namespace(fn),
        extras=extras,
        is_async=is_async,
        signature=sig if extras else None,
        timeout=timeout,
    )
    return _TaskFunction(spec)


@overload
def task(
    __func_or_none__: None = None,
    *,
    name: str | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: CachePolicy[Callable[..., str | bytes]] | None = None,
    timeout: float | timedelta | TimeoutPolicy | None = None,
    **kwargs: Any,
) -> Callable[[Callable[..., object]], _TaskFunction]: ...


@overload
def task(__func_or_none__: Callable[..., object]) -> _TaskFunction: ...


def task(
    __func_or_none__: Callable[..., object] | None = None,
    *,
    name: str | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: CachePolicy[Callable[..., str | bytes]] | None = None,
    timeout: float | timedelta | TimeoutPolicy | None = None,
    **kwargs: Any,
) -> Callable[[Callable[..., object]], _TaskFunction] | _TaskFunction:
    """Make a function a task: inside an :class:`entrypoint` a call starts it in parallel and
    returns a future; its result is saved, so a resumed workflow replays it.

    Args:
        name: The task's name (default: the function's), shown in ``updates`` stream events.
        retry_policy: Retry the call on errors (the first policy of a sequence applies).
        cache_policy: Cache results by argument (with ``@entrypoint(cache=...)``).
        timeout: Limits on each attempt of an async task (seconds, a ``timedelta`` or a
            :class:`~plait.types.TimeoutPolicy`); past them it raises ``NodeTimeoutError``.
        **kwargs: ``retry`` (LangGraph's older name of ``retry_policy``).

    Raises:
        NotImplementedError: a generator function.
        ValueError: ``timeout`` on a sync function (it cannot be cancelled), or not positive.
    """
    retry_policy = retry_policy or kwargs.pop("retry", None)
    policy = TimeoutPolicy.coerce(timeout)
    if kwargs:
        raise TypeError(f"task() got unexpected keyword arguments: {sorted(kwargs)}")

    def decorate(fn: Callable[..., object]) -> _TaskFunction:
        return _make_task(fn, name, retry_policy, cache_policy, policy)

    return decorate if __func_or_none__ is None else decorate(__func_or_none__)


@dataclass(frozen=True, slots=True)
class _Final(Generic[R, S]):
    """Return ``value`` to the caller and save ``save`` as the thread's ``previous``.

    Attributes:
        value: What ``invoke`` returns.
        save: What the next run on the thread receives as ``previous`` (saved even if ``None``).
    """

    value: R
    save: S

    def parts(self) -> tuple[R, S]:
        """``(value, save)``."""
        return self.value, self.save


def _is_final(value: object) -> TypeGuard[_Final[object, object]]:
    return isinstance(value, _Final)


def _split(value: object) -> tuple[object, object]:
    return value.parts() if _is_final(value) else (value, value)


def _types(fn: Callable[..., object], sig: inspect.Signature) -> tuple[object, object]:
    """The input and output types annotated on ``fn`` (``Any`` where there is none)."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - unresolvable annotations simply mean "no type"
        hints = {}
    input_type = hints.get(next(iter(sig.parameters)), Any)
    ret = hints.get("return", inspect.Signature.empty)
    if ret is inspect.Signature.empty or ret is _Final:
        return input_type, Any
    if get_origin(ret) is _Final:
        args = get_args(ret)
        if len(args) != 2:
            raise TypeError(
                "Annotate both the returned and the saved type: entrypoint.final[ReturnType, SaveType]"
            )
        return input_type, args[0]
    return input_type, ret


class entrypoint:  # noqa: N801 - LangGraph's name
    """Decorate a workflow function: it becomes a graph with ``invoke``/``stream``/``get_state``…

    The function takes one input argument and may declare, by name, ``previous``
    (what the last run on the thread returned or saved), ``config``, ``store``,
    ``writer`` (``custom`` stream events) and ``runtime``.

    Args:
        checkpointer: Saver that makes threads durable (needed for ``interrupt()`` and ``previous``).
        store: Long-term store handed to the function and its tasks.
        cache: Cache for tasks (and the function) that have a ``cache_policy``.
        context_schema: Type of the run-scoped ``context``.
        cache_policy: Cache the function's results, keyed on its input.
        retry_policy: Retry the function on errors.
        timeout: Limits on each attempt of an async function (as ``@task(timeout=...)``).
        **kwargs: ``config_schema`` / ``retry`` (LangGraph's older names).

    Raises:
        NotImplementedError: a generator function.
        ValueError: the function takes no parameter; ``timeout`` on a sync function, or not positive.
    """

    final = _Final
    """``entrypoint.final(value=..., save=...)``: return one value, save another for ``previous``."""

    def __init__(  # noqa: PLR0913 - LangGraph's API
        self,
        checkpointer: object = None,
        store: object = None,
        cache: object = None,
        context_schema: type[Any] | None = None,
        cache_policy: CachePolicy[Callable[..., str | bytes]] | None = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
        **kwargs: Any,
    ) -> None:
        self.timeout = TimeoutPolicy.coerce(timeout)
        self.context_schema = context_schema or kwargs.pop("config_schema", None)
        self.retry_policy = retry_policies(retry_policy or kwargs.pop("retry", None))
        if kwargs:
            raise TypeError(f"entrypoint() got unexpected keyword arguments: {sorted(kwargs)}")
        self.checkpointer = checkpointer
        self.store = store
        self.cache = cache
        self.cache_policy = cache_policy

    def __call__(self, func: Callable[..., object]) -> EntrypointPregel:
        """Compile ``func`` into a runnable workflow."""
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            raise NotImplementedError("Generators are not supported in the functional API (@entrypoint)")
        sig = _signature(func)
        if sig is None or not sig.parameters:
            raise ValueError("Entrypoint function must have at least one parameter")
        input_type, output_type = _types(func, sig)
        names = tuple(n for n in EXTRAS if n in list(sig.parameters)[1:])
        is_async = inspect.iscoroutinefunction(func)
        if self.timeout is not None and not is_async:
            raise sync_timeout_error(func.__name__)
        plan = entrypoint_plan(
            func,
            names,
            is_async,
            _split,
            retry=self.retry_policy,
            cache_policy=self.cache_policy,
            cache=self.cache,
            timeout=self.timeout,
        )
        return EntrypointPregel(
            plan,
            func.__name__,
            input_type,
            output_type,
            self.context_schema,
            checkpointer=self.checkpointer,
            store=self.store,
            name=func.__name__,
        )
