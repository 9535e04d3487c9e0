"""One run of a graph as a state machine, shared by the sync and async drivers.

:class:`Loop` holds everything that changes during a run; what the run is given and never
changes is its :class:`~plait.pregel._settings.RunSettings` (``loop.settings``).
:meth:`Loop.effects` is the whole run (apply the input, then superstep after superstep: run the
tasks, merge, route, checkpoint, stream) written once, as a generator of typed effects
(:mod:`plait.pregel._effects`). It performs no I/O and calls no user code: the driver executes
each effect, synchronously (``_run.py``) or on the caller's event loop (``_arun.py``), and sends
back what the effect produced.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable, Sequence
from typing import Any, cast

from plait._schema import MISSING
from plait.checkpoint.base import (
    ERROR,
    INTERRUPT,
    RESUME,
    BaseCheckpointSaver,
    CheckpointTuple,
    new_checkpoint_id,
)
from plait.constants import START
from plait.errors import EmptyInputError, GraphDrained, GraphRecursionError, SerializationError
from plait.pregel._control import drain_reason
from plait.pregel._effects import (
    CallRouters,
    Effect,
    Emit,
    PutCheckpoint,
    PutWrites,
    RunTasks,
    Save,
    SaveOp,
    blame,
)
from plait.pregel._input import check_storable, input_writes
from plait.pregel._limits import recursion_error
from plait.pregel._next import START_TASK as _START
from plait.pregel._next import keep_pending, start_task
from plait.pregel._pause import NO_WRITES, NULL_TASK_ID, carry_update, paused_view, save_partial, task_id
from plait.pregel._pause import save_results as _save_results
from plait.pregel._pause import stored_writes as _stored_writes
from plait.pregel._recover import resume_step, stopped, with_recoveries
from plait.pregel._resume import SpareAnswer, queue_resume
from plait.pregel._run_state import RunState
from plait.pregel._settings import RunSettings
from plait.pregel._step import branch_state, prepare_tasks, routers, schedule
from plait.pregel._stream import STATIC, EventSink, next_tasks
from plait.pregel._task import DRAINED, Task, collect, note_task
from plait.pregel._writes import apply_writes, router_snapshot, router_views
from plait.types import Command, Interrupt

__all__ = ["Loop"]

_COMMAND = "__command__"
Steps = Generator[Effect, Any, None]  # a part of the run, as effects


class Loop:
    """The mutable part of one run; what it is given and never changes is ``settings``.

    Args:
        settings: The run's fixed settings (plan, saver, config, stream modes, options…).
    """

    # what every run starts with: set on the instance when they change
    drained: str | None = None  # why the run stopped early (RunControl), if it did
    checkpoint_id: str | None = None
    newest: str | None = None  # the thread head when the run forks from an older checkpoint
    checkpoint_config: dict[str, Any] | None = None
    spare: SpareAnswer | None = None  # a resume value no task waited for (see _resume.py)
    skip_before = False
    start_step = 0
    last_tasks: Sequence[Task] = ()
    expect_head: Any = None  # the thread head this run writes on (``...``: do not check)
    replaying = False  # the run starts from an explicit (past) checkpoint_id
    shown: dict[str, object] | None = None  # a paused step's values with its finished writes
    held_back: PutCheckpoint | None = None  # durability="exit": the checkpoint saved at the end
    holding: Any = None  # the driver's held saves (pregel/_held.py), sent before a cut-short step's writes

    def __init__(self, settings: RunSettings) -> None:
        self.settings = settings
        saver = settings.saver
        self.held: frozenset[Hashable] = frozenset()  # leases held by this run and the runs around it
        self.run = RunState(values={})
        if saver is not None:
            own: object = getattr(type(saver), "get_next_version", None)
            if own is not None and own is not BaseCheckpointSaver.get_next_version:
                self.run.bump = saver.get_next_version  # the saver versions keys its own way
        self.sink = EventSink(settings.modes, settings.config, settings.subgraphs)
        self.sink.state = self.state_values
        self.null_writes: list[tuple[str, object]] = []  # resume updates pending on the checkpoint
        self.carried: set[str] = set()  # keys they changed, not checkpointed yet
        self.events = self.sink.events
        self.saves: list[SaveOp] = []
        self.interrupts: list[Interrupt] = []
        self.done_writes: dict[str, list[tuple[str, object]]] = {}
        self.resumes: dict[str, list[object]] = {}
        self.interrupted: dict[str, list[Interrupt]] = {}
        # writes of functional-API tasks settled in this step (pregel/_func_tasks.py): saved if it stops
        self.task_writes: list[tuple[str, list[tuple[str, object]]]] = []

    def task_id(self, task: Task) -> str:
        """Id of ``task`` in the step that follows the current checkpoint."""
        return task_id(self.checkpoint_id, task)

    def load(self, saved: CheckpointTuple | None, head: CheckpointTuple | None = None) -> None:
        """Restore the thread's checkpoint (``None``: a new thread).

        Args:
            saved: The checkpoint the run starts from.
            head: The thread's newest checkpoint, when ``saved`` is an older one (time travel):
                the run's new checkpoint ids then sort after it too, whatever this process's clock says.
        """
        self.newest = head.checkpoint["id"] if head is not None else None  # pyright: ignore[reportTypedDictNotRequiredAccess]  # a stored checkpoint has an id
        run, settings = self.run, self.settings
        if saved is not None:
            run.restore(saved.checkpoint, int((saved.metadata or {}).get("step", -1)) + 1)
        for key, channel in settings.plan.channels.items():
            if key not in run.values:
                value = channel.initial()
                if value is not MISSING:
                    run.values[key] = value
        if saved is None:
            run.step = -1
            return
        cp = saved.checkpoint
        # a stored checkpoint always has an id (Checkpoint is total=False only for building one)
        self.checkpoint_id = cp["id"]  # pyright: ignore[reportTypedDictNotRequiredAccess]
        self.checkpoint_config = saved.config
        thread = settings.thread
        self.replaying = explicit = thread is not None and thread.checkpoint_id is not None
        # time travel: the first write forks on purpose
        self.expect_head = ... if explicit else cp["id"]  # pyright: ignore[reportTypedDictNotRequiredAccess]
        self._load_writes(_stored_writes(saved, self.newest))

    def load_past(self, saved: CheckpointTuple | None, head: CheckpointTuple | None) -> None:
        """Start from ``saved``, a checkpoint older than the thread's ``head`` (``None``: from no
        checkpoint, as a new thread): the run's checkpoints branch off it, after ``head``."""
        self.load(saved, head)
        self.newest = head.checkpoint["id"] if head is not None else None  # pyright: ignore[reportTypedDictNotRequiredAccess]
        self.replaying = saved is not None
        self.expect_head = ...

    def _load_writes(self, writes: Sequence[tuple[str, str, Any]]) -> None:
        """Sort the checkpoint's pending writes: answers, questions, finished tasks, resume updates."""
        run = self.run
        for tid, key, value in writes:
            if tid == NULL_TASK_ID:  # a resume's Command(update=...): applied below
                self.null_writes.append((key, value))
                continue
            if key == NO_WRITES:  # finished without writes: not run again
                self.done_writes.setdefault(tid, [])
                continue
            if key == INTERRUPT:  # a task asked again after a resume repeats its earlier questions
                asked = self.interrupted.setdefault(tid, [])
                asked.extend(i for i in value if all(i.id != j.id for j in asked))
                continue
            if key == ERROR:
                continue
            if key == RESUME:
                self.resumes.setdefault(tid, []).extend(value)
            else:
                self.done_writes.setdefault(tid, []).append((key, value))
        for tid in self.done_writes if self.interrupted else ():  # answered, then finished: not pending
            self.interrupted.pop(tid, None)
        if self.null_writes:
            self.carried |= apply_writes(self.settings.plan, run, [(START, self.null_writes)])

    def effects(self, input: object) -> Steps:  # noqa: A002 - LangGraph's name
        """The run after :meth:`load`: apply ``input`` (or resume), then supersteps until it ends.

        Raises:
            BaseException: the first error of a failed step (after the step's successful writes
                are saved), ``GraphRecursionError``, or an input error.
        """
        yield from self._begin(input)
        yield from self.steps()

    def steps(self, ran: list[Task] | None = None) -> Steps:
        """The supersteps from the current state; ``ran``: the current step's tasks, run already."""
        while True:
            tasks = ran if ran is not None else (yield from self._run_next())
            ran = None
            if tasks is None:
                break
            tasks = with_recoveries(tasks)  # error handlers that took over failed tasks
            if stopped(tasks):
                yield from self._stop_step(tasks)
                return
            yield from self._finish(tasks)
            if self.interrupts:
                break
        self._release(ended=not self.interrupts and self.drained is None)
        if self.saves or self.events:
            yield from self._flush(last=True)
        if self.drained is not None:
            raise GraphDrained(self.drained)

    def _run_next(self) -> Generator[Effect, Any, list[Task] | None]:
        """Have the next superstep's tasks run (``RunTasks``); ``None`` when the run is over."""
        try:  # before the step's saves go out, so the run's last save is known to be the last
            tasks = self._tick()
        except BaseException as exc:  # the previous step's saves still go out
            if isinstance(exc, GraphRecursionError):
                self._release()
            yield from self._flush()
            raise
        if tasks is not None:
            if self.saves or self.events:  # most steps of a run without saver or stream have nothing
                yield from self._flush()
            yield RunTasks(tuple(tasks))
        return tasks

    def _release(self, ended: bool = False) -> None:
        """``durability="exit"``: queue the checkpoint held back (none: a subgraph call ``ended``)."""
        held, self.held_back, thread = self.held_back, None, self.settings.thread
        if held is not None and not (ended and thread is not None and ":" in thread.checkpoint_ns):
            self.saves.insert(0, held)

    def _flush(self, *, last: bool = False) -> Steps:
        """Hand over the queued saves, then the queued events; ``last``: the run stores nothing after these."""
        if self.saves:
            ops, self.saves = tuple(self.saves), []
            try:
                yield Save(ops, last)
            except SerializationError as err:
                raise blame(err, self.last_tasks, self.run.step - 1) from None
        if self.events:
            events = tuple(self.events)
            self.events.clear()
            yield Emit(events)

    def _schedule(self, finished: Sequence[Task], stop: int) -> Steps:
        """Route from ``finished`` (``stop``: the run's last step, for managed values), then choose the next step."""
        plan, run = self.settings.plan, self.run
        calls = routers(plan, finished, self.settings.config, run.values, (run.step, stop), loop=self)
        answers = (yield CallRouters(calls, self.branch_input(stop))) if calls else ()
        schedule(plan, run, finished, answers)

    def _begin(self, input: object) -> Steps:  # noqa: A002
        self.start_step = self.run.step
        if isinstance(input, Command) or input is None:  # resuming: its state is streamed first
            if isinstance(input, Command):  # isinstance() leaves the node-name parameter Unknown
                if self.checkpoint_id is not None and self.run.next == [START]:  # an input checkpoint's
                    yield from self._resume()  # pending input goes first, as in LangGraph
                yield from self._begin_command(cast("Command[object]", input))
            elif (yield from self._resume()):
                return
            if self.checkpoint_id is not None:
                self.sink.values(self.state_values)
        else:
            settings, run = self.settings, self.run
            writes = input_writes(settings.plan, input)
            if settings.plan.triggers:  # a channel graph: its input checkpoint holds the input, no START step
                yield from self._start_with(writes, "input")
                return
            if settings.saver is not None:
                if settings.durability != "exit":
                    check_storable(settings.saver, writes, run.step)
                run.next, run.sends = [START], []
                self._checkpoint("input", set())
                if settings.durability != "exit":  # the input checkpoint is not stored: nor are its writes
                    input_task = task_id(self.checkpoint_id, _START)
                    self.saves.append(PutWrites(self.checkpoint_config or {}, writes, input_task))
            run.step += 1
            yield from self._start_with(writes)

    def _start_with(self, writes: list[tuple[str, object]], source: str = "loop") -> Steps:
        run, settings = self.run, self.settings
        plan = settings.plan
        changed = apply_writes(plan, run, [(START, writes)])
        run.barriers.clear()
        started = start_task(plan, writes)
        if plan.branches.get(started.name):  # conditional edges from START (its step starts the run)
            yield from self._schedule([started], run.step + settings.limit)
        else:
            schedule(plan, run, (started,))
        if changed and source == "loop":  # an input that sets nothing is not a state worth streaming
            self.sink.values(self.state_values)
        if settings.saver is not None:
            self._checkpoint(source, changed)
        run.step += 1
        self.start_step = run.step - 1

    def _resume(self) -> Generator[Effect, Any, bool]:
        """Go on from the loaded checkpoint; ``True`` when that applied an input (already streamed)."""
        run = self.run
        if self.checkpoint_id is None:
            raise EmptyInputError("Received no input for __start__")
        if run.next == [START]:  # an input checkpoint: its input is applied now
            writes = self.done_writes.pop(task_id(self.checkpoint_id, _START), [])
            yield from self._start_with(writes)
            return True
        older = self.newest is not None and self.newest != self.checkpoint_id
        ran = bool(self.done_writes or self.resumes or self.interrupted)  # its step ran, in part
        if self.replaying and (older or ran) and (run.next or run.sends) and self.settings.saver is not None:
            # replaying a past checkpoint (or one whose step ran): its copy (source "fork") starts the new
            # branch, the nodes after it run again (the old branch's pending writes and answers stay with it)
            self.done_writes.clear()
            self.resumes.clear()
            self.interrupted.clear()
            self._checkpoint("fork", set())
            run.step += 1
            self.start_step = run.step
        self.skip_before = True
        return False

    def _begin_command(self, cmd: Command[object]) -> Steps:
        settings = self.settings
        if cmd.resume is not None:
            thread = settings.thread
            nested = thread is not None and bool(thread.checkpoint_ns)  # the parent checked it
            superseded = self.newest is not None and self.newest != self.checkpoint_id  # an older checkpoint
            strict = settings.strict_resume and not nested and not superseded
            asked = {*self.interrupted, *self.resumes, *self.done_writes}
            self.spare = queue_resume(self.interrupted, self.resumes, cmd.resume, strict=strict, tasks=asked)
        if cmd.update is not None or cmd.goto:
            # On a new thread the update is the run's input (START's edges fire, as in LangGraph);
            # on an existing thread only ``goto`` decides what runs.
            name = START if self.checkpoint_id is None else _COMMAND
            task = Task(name, None, None)  # type: ignore[arg-type]
            collect(task, Command(update=cmd.update, goto=cmd.goto))
            changed = apply_writes(settings.plan, self.run, [(START, task.writes)])
            if name == _COMMAND:  # kept with the checkpoint until a step completes on it
                self.carried |= changed
                carry_update(self, task.writes)
            if cmd.goto:  # on an existing thread, added to the step that was pending
                pending = keep_pending(task, self.run) if name == _COMMAND else task
                yield from self._schedule([pending], self.start_step + settings.limit)
        self.skip_before = True

    def _tick(self) -> list[Task] | None:
        """The tasks of the next superstep, or ``None`` when the run is over.

        Raises:
            GraphRecursionError: ``recursion_limit`` supersteps ran without finishing.
        """
        run, settings = self.run, self.settings
        if run.step > self.start_step + settings.limit:
            raise recursion_error(run, settings.limit)
        if not run.next and not run.sends:
            return None
        before = None if self.skip_before else settings.before  # breakpoints stop Send tasks too
        if before and ("*" in before or any(n in before for n in (*run.next, *(n for n, _ in run.sends)))):
            self.interrupts.append(Interrupt(value=None, id="before"))
            self.sink.interrupted(())
            return None
        self.skip_before = False
        control = settings.control
        if control is not None and control.drain_requested:  # after the breakpoint: a resume would skip it
            self.drained = drain_reason(control)
            return None
        stop = self.start_step + settings.limit  # the run's last step: for managed values
        tasks = prepare_tasks(settings.plan, run, stop)
        if self.done_writes:  # the step ran in part before a pause
            tasks = resume_step(self, tasks)
        if self.sink.messages is not None or self.sink.tasks_on:
            self.sink.started(tasks, self.task_id, run.step)
        for task in tasks:  # finished before the pause: their writes are streamed first, as replayed
            if task.cached and task.done and task.handled is None:
                self.sink.settled(task, self.task_id(task), run.step)
        return tasks

    def _finish(self, tasks: Sequence[Task]) -> Steps:
        """Merge a completed step, route, queue its checkpoint; pause when ``interrupt_after`` says so."""
        run, settings = self.run, self.settings
        self.last_tasks = tasks
        self.task_writes.clear()  # the step completed: its functional tasks need no replay
        plan, one = settings.plan, len(tasks) == 1 and tasks[0].handled is None  # one: the common step
        routed = tasks if one else [t for t in tasks if t.handled is None]  # failed: its handler routes
        before = None if one else router_snapshot(plan, routed, tasks, run.values)
        changed = apply_writes(
            plan, run, ((tasks[0].name, tasks[0].writes),) if one else [(t.name, t.writes) for t in tasks]
        )
        # for managed values, as the step's tasks saw them
        steps = (run.step, self.start_step + settings.limit)
        views = None if before is None else router_views(plan, routed, before)
        config = settings.config
        calls = routers(plan, routed, config, run.values, steps, views, self) if plan.branches else ()
        answers: Sequence[object] = ()
        if calls:
            try:
                answers = yield CallRouters(calls, self.branch_input(steps[1]))
            except Exception as exc:
                if len(routed) == 1:  # its routers failed: named as LangGraph does
                    note_task(exc, routed[0].name, self.task_id(routed[0]))
                raise
        schedule(plan, run, routed, answers)
        if settings.modes:
            self.sink.finished(tasks, self.task_id, run.step)
            self.sink.values(self.state_values)
        if settings.saver is not None:
            _save_results(self, tasks)  # the tasks' results, kept with the checkpoint the step ran from
            self._checkpoint("loop", changed)
        run.step += 1
        after = settings.after
        if after and ("*" in after or any(t.name in after for t in tasks)) and (run.next or run.sends):
            self.interrupts.append(Interrupt(value=None, id="after"))
            self.sink.interrupted(())

    def _stop_step(self, tasks: Sequence[Task]) -> Steps:
        """End the run at a step that failed or paused: save what it did, raise its first error."""
        self._release()
        save_partial(self, tasks)
        failed = next((t.error for t in tasks if t.error is not None), None)
        if failed is not None:
            yield from self._flush()
            raise failed
        for t in tasks:
            self.interrupts.extend(t.interrupts)
        self.drained = next((str(i.value) for i in self.interrupts if i.id == DRAINED), None)
        # questions were streamed as their tasks stopped (sink.settled); a breakpoint (in a
        # subgraph) is reported after the state the step leaves
        self.sink.asked([i for t in tasks if not t.reported for i in t.interrupts])
        paused_view(self, tasks)
        if all(i.id in STATIC for i in self.interrupts):
            self.sink.interrupted(tuple(self.interrupts))
        yield from self._flush(last=True)
        if self.drained is not None:  # a subgraph drained: this run stops with it
            raise GraphDrained(self.drained)

    def _checkpoint(self, source: str, changed: set[str]) -> None:
        if self.carried:  # keys a resume's update changed before this step
            changed, self.carried = changed | self.carried, set()
        run, settings = self.run, self.settings
        newest = self.newest
        after = self.checkpoint_id if newest is None or (self.checkpoint_id or "") > newest else newest
        cid = new_checkpoint_id(after=after)
        checkpoint, versions = run.checkpoint(cid, changed)
        travel, thread, durability = settings.travel, settings.thread, settings.durability
        parents = dict(travel.parents) if travel is not None else {}
        own = {"source": source, "step": run.step, "parents": parents}  # events show it; the saver's has more
        metadata: dict[str, object] = {**settings.metadata, **own}
        assert thread is not None  # noqa: S101 - guarded by saver is not None
        parent = thread.config(self.checkpoint_id) if self.checkpoint_id else thread.config()
        op = PutCheckpoint(parent, dict(checkpoint), metadata, versions, self.expect_head)
        if durability != "exit":
            self.saves.append(op)
        else:  # one checkpoint when the run ends, on the parent this run started from
            held = self.held_back
            if held is not None:
                op = PutCheckpoint(
                    held.config, op.checkpoint, metadata, {**held.versions, **versions}, held.expected_head
                )
            self.held_back = op
        self.expect_head = cid
        self.checkpoint_id = cid
        self.checkpoint_config = thread.config(cid)
        located = self.checkpoint_config["configurable"]
        stored = "checkpoint_id" in parent["configurable"] and durability != "exit"  # exit: none yet
        self.sink.checkpoint(
            lambda: {
                "config": self.sink.run_config(located),
                "parent_config": self.sink.run_config(parent["configurable"]) if stored else None,
                "values": self.state_values(),
                "metadata": own,
                "next": list(run.next),
                "tasks": next_tasks(cid, run.next, run.sends, settings.plan, located),
            },
            run.step,
        )

    def branch_input(self, stop: int | None = None) -> object:
        """The state as conditional-edge functions receive it; managed values count down to ``stop``, the
        run's last step (``None``: an update outside a run, routed as if two steps were left, as LangGraph does)."""
        step = self.run.step
        return branch_state(self.settings.plan, self.run.values, step, step + 2 if stop is None else stop)

    def state_values(self) -> dict[str, object]:
        """Every key that is set, private ones included (what ``stream_mode="values"`` shows)."""
        values = self.run.values
        return {k: values[k] for k in self.settings.plan.channels if k in values}

    def final(self) -> Any:
        """What ``invoke`` returns: the output keys that are set, plus ``__interrupt__`` when paused."""
        values = self.run.values if self.shown is None else self.shown
        out: dict[str, object] = {k: values[k] for k in self.settings.plan.output_keys if k in values}
        real = [i for i in self.interrupts if i.id not in STATIC] if self.interrupts else None
        if real:
            out[INTERRUPT] = real
        return out
