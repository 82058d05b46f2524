"""Compile workers: forked from a forkserver that imported the DSL once, time-sliced to at most --jobs at a time.

Start-up. A spawned worker starts Python and imports its DSL before its first compile (CuTe DSL
with FlashAttention-4: about 9.7 s on an H200 host), which is most of a parallel warmup's cost.
`prepare(setup)` starts this process's forkserver with `setup` (the backend's `configure(arch,
cache)`) run in it, in parallel with this process's own import of the DSL; every worker then forks
from it configured (a fork, not an import), and a later pool with the same setup (the next preset
of a bake) forks from the same server. After the setup the server freezes its objects out of the
garbage collector (`gc.freeze`), so a worker's collections never walk, nor copy on write, the heap
it inherited. The server and its workers see no GPU (CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES
empty): importing CuTe DSL on a GPU host initializes CUDA, which a forked child can then never use,
and a compile-only worker needs none (it compiles for the configured target exactly as on a
CPU-only host, whose artifacts load on the GPU host). The forkserver serves one setup for the life
of the process (multiprocessing keeps one per process): workers for another setup (another backend,
target or cache; FlyDSL and CuTe DSL never share a process) are spawned, and so is every worker of
`Workers(..., start="spawn")` (the previous design, which bench/variant_warmup.py measures beside this).
The server lives as long as this process (a CLI command; an engine does not start workers), which
stops it as it exits: it holds nothing but what its setup imported, and tearing that interpreter
down (mostly a final garbage collection over the DSL's objects) would hold this process's pipes for
seconds.

Time slicing. A compile is indivisible and, until a warmup has recorded its time, of unknown length.
Run --jobs N at a time, one after another, and a long compile that happens to start last ends the
warmup alone: deepseek-v3-b200's 20 FA4 variants on 14 workers spanned 12.3 s in plan order against
9.1 s longest first (H200 host, 2026-12-02). So `Workers` may hold more processes than N, and while
more than N of them compile, this process time-slices them: every QUANTUM seconds it stops (SIGSTOP)
the ones that ran longest and continues (SIGCONT) those that waited, so at most N compile at any
instant and every compile in flight advances at the same pace (processor sharing): they end
together, near their total CPU / N, whatever their order. `Workers(..., time_slice=False)` holds N
processes, each compiling one key at a time (the design before this one).
"""

from __future__ import annotations

import atexit
import base64
import collections
import ctypes
import gc
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import pickle
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

Setup = tuple[Callable[..., Any], tuple]
Task = tuple[Callable[..., Any], tuple]  # a picklable function and its arguments, run in a worker
_SETUP_ENV = "ZEROJIT_FORKSERVER_SETUP"  # what the forkserver runs as it starts, read by this module's import
_PARENT_ENV = "ZEROJIT_FORKSERVER_PARENT"  # the process the server dies with (set when its main thread started it)
_prepared: Setup | None = None
_PREPARING = threading.Lock()  # two threads' first pools start one server
_server_dies_with_us = False  # the server was started by the main thread, so it dies with this process
_NO_DEVICE = {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}  # compile-only workers need no GPU
QUANTUM = 0.25  # seconds a time-sliced compile runs before the ones that waited take their turn
ARRIVAL_POLL = 0.02  # seconds between looks for a newly started worker while tasks wait for one
PROCESSES_PER_JOB = 2  # processes a time-sliced map may hold per task that runs at once
START_METHODS = ("forkserver", "spawn")  # how `Workers` start: forks of one set-up server, or fresh interpreters


def prepare(setup: Setup) -> None:
    """Start the forkserver now with `setup` run in it (once per process; a later, different setup is ignored)."""
    global _prepared
    with _PREPARING:
        if _prepared is None:
            _start_server(setup)
            _prepared = setup
            atexit.register(_stop_server)


def _start_server(setup: Setup) -> None:
    """Start the forkserver, handing it `setup` through its environment (it runs it as it imports this module)."""
    global _server_dies_with_us
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    server_env = {_SETUP_ENV: base64.b64encode(pickle.dumps(setup)).decode(), **_NO_DEVICE}
    if threading.current_thread() is threading.main_thread():  # the server is then this process's for its life
        server_env[_PARENT_ENV] = str(os.getpid())
        _server_dies_with_us = True
    saved = {name: os.environ.get(name) for name in server_env}
    os.environ.update(server_env)  # the server inherits this process's environment as it starts
    try:
        multiprocessing.forkserver.ensure_running()  # returns at once: the server imports on its own
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _stop_server() -> None:
    """End the forkserver now (at this process's exit: no worker is left to fork)."""
    server = _server_pid()
    if server is None:
        return
    try:
        os.kill(server, signal.SIGKILL)
        os.waitpid(server, 0)
    except (ProcessLookupError, ChildProcessError):
        pass  # gone already


def context(setup: Setup, start: str) -> multiprocessing.context.BaseContext:
    """Where workers running `setup` start: forked from the prepared forkserver when `start` asks for it and the
    server holds this setup, else spawned (never forked from this process, which may hold a DSL runtime)."""
    forked = start == "forkserver" and setup == _prepared
    return multiprocessing.get_context("forkserver" if forked else "spawn")


class WorkerLost(RuntimeError):
    """A task got no answer: its worker ended (killed, crashed) first, no worker could start, or the run was
    cancelled. The task's result slot holds this."""


class TaskFailed(RuntimeError):
    """A task raised in its worker (or its result could not be sent back); the worker carries on."""


class _Worker:
    def __init__(self, process: multiprocessing.process.BaseProcess, connection: Any):
        self.process, self.connection = process, connection

    def signal(self, number: int) -> None:
        try:
            os.kill(self.process.pid, number)
        except ProcessLookupError:
            pass  # it ended: its connection says so


class Workers:
    """Worker processes that run `setup` once, then tasks; at most `running` tasks run at any instant.

    `processes` (default `running`) start at once, in the background (`prepare` makes them forks
    of one forkserver), so a caller creates this as soon as it knows compiles are coming and goes on
    with its own set-up. `map(tasks, processes)` runs tasks on the workers as they arrive and
    returns their results in order; with `processes` above `running` it starts more and
    time-slices them (with `time_slice`, and forks of the server only: a spawned worker could not
    die with a killed parent, so it is never left stopped). A worker that ends loses only its own
    task: another starts in its place. `cancel()` (from another thread: this process is being
    interrupted) ends a map within a quantum. `start`: one of START_METHODS ("spawn": every worker
    imports its setup itself, the design before the forkserver).
    """

    def __init__(
        self,
        running: int,
        setup: Setup,
        processes: int | None = None,
        *,
        start: str = "forkserver",
        time_slice: bool = True,
    ):
        if start not in START_METHODS:
            raise ValueError(f"start={start!r}: not one of {', '.join(START_METHODS)}")
        if start == "forkserver":
            prepare(setup)
        self.running = running
        self._context, self._setup = context(setup, start), setup
        self.forked = self._context.get_start_method() == "forkserver"  # the server's main thread forks them
        # May hold more processes than `running`: only where a stopped one dies with this process (its server does).
        self.sliced = time_slice and self.forked and _server_dies_with_us
        self._idle: list[_Worker] = []
        self._arrived: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._lock = threading.Lock()  # the counts below, the stop flag, and each arrival
        self.processes = 0  # started or starting, not lost
        self._starting = 0
        self._starters: list[threading.Thread] = []
        self._start_error: BaseException | None = None
        self._stopping = threading.Event()  # close() or cancel(): start no more, run no more
        self.first_started: float | None = None  # time.perf_counter() when the first worker was up
        self.grow((processes or running) if self.sliced else min(processes or running, running))

    def grow(self, processes: int) -> None:
        """Have `processes` workers in all: the missing ones start in the background."""
        with self._lock:
            more = processes - self.processes
            if more <= 0 or self._stopping.is_set():
                return
            self.processes += more
            self._starting += more
        starter = threading.Thread(target=self._start, args=(more,), name="zerojit-start-workers", daemon=True)
        self._starters.append(starter)
        starter.start()

    def _start(self, count: int) -> None:
        """Start `count` processes (a fork from the forkserver waits until the server imported the DSL); each becomes
        available once it says it is ready: set up, and armed to die with its parent, so the time slicer never
        stops one that a kill of this process would leave stopped for ever."""
        starting: dict[Any, multiprocessing.process.BaseProcess] = {}  # connection -> process, not ready yet
        for started in range(count):
            if self._stopping.is_set():
                self._gave_up(count - started)
                break
            try:
                here, there = self._context.Pipe()
                process = self._context.Process(
                    target=_serve, args=(self._setup, there, self.forked), daemon=True, name="zerojit-compile-worker"
                )
                with _REAPING:
                    process.start()
                there.close()
            except BaseException as exc:  # noqa: BLE001 - map reports it for the tasks no worker took
                self._start_error = exc
                self._gave_up(count - started)
                break
            starting[here] = process
        while starting:
            stopped = self._stopping.is_set()
            ready = [] if stopped else multiprocessing.connection.wait(list(starting), QUANTUM)
            for here in list(starting) if stopped else ready:  # stopping: those still setting up are nobody's
                process = starting.pop(here)
                if not stopped and self._ready(here):
                    with self._lock:
                        if not self._stopping.is_set():
                            self._starting -= 1
                            self.first_started = self.first_started or time.perf_counter()
                            self._arrived.put(_Worker(process, here))
                            continue
                _reap(process, kill=True)
                here.close()
                self._gave_up(1)

    def _ready(self, connection: Any) -> bool:
        """The worker's first word: ready, armed to die with the forkserver it was forked from (its parent then)."""
        try:
            word, parent = connection.recv()
        except (EOFError, OSError, ValueError, TypeError):  # it ended before it was ready
            return False
        return word == _READY and (not self.forked or parent == _server_pid())

    def _gave_up(self, count: int) -> None:
        with self._lock:
            self._starting -= count
            self.processes -= count

    def _arrivals(self) -> None:
        """Move the workers that started since the last look to the idle ones."""
        while not self._arrived.empty():
            self._idle.append(self._arrived.get())

    def _lost(self, worker: _Worker, replace: int) -> str:
        """A worker ended: why, and another starts in its place while `replace` (a map's process count) wants it."""
        _reap(worker.process)
        worker.connection.close()
        with self._lock:
            self.processes -= 1
        self.grow(replace)
        return f"worker pid {worker.process.pid} ended (exit code {worker.process.exitcode}) before it answered"

    def map(self, tasks: Sequence[Task], processes: int | None = None) -> list[Any]:
        """Each task's result, in order; an exception instance where a task got none (`WorkerLost`, `TaskFailed`).

        `processes`: how many workers may hold these tasks at once (default `running`; more are
        time-sliced to `running` at any instant, if the pool time-slices, else it holds `running`).
        """
        wanted = min(processes if processes and self.sliced else self.running, len(tasks))
        self.grow(wanted)
        pending = collections.deque(enumerate(tasks))
        results: list[Any] = [None] * len(tasks)
        busy: dict[Any, tuple[_Worker, int]] = {}  # connection -> worker, task index
        slices = _TimeSlices(self.running)
        try:
            while (pending or busy) and not self._stopping.is_set():
                self._arrivals()
                while pending and self._idle:
                    worker = self._idle.pop()
                    index, task = pending.popleft()
                    try:
                        worker.connection.send(task)
                    except (OSError, EOFError):  # it ended while idle: the task waits for another
                        pending.appendleft((index, task))
                        self._lost(worker, replace=wanted)
                        continue
                    except Exception as exc:  # noqa: BLE001 - the task cannot be sent (pickling); the worker stays
                        results[index] = TaskFailed(f"{type(exc).__name__}: {exc}")
                        self._idle.append(worker)
                        continue
                    busy[worker.connection] = (worker, index)
                    slices.add(worker)
                if pending and not busy and not self._idle and self._arrived.empty() and self._starting == 0:
                    cause = self._start_error or "every worker ended"
                    for index, _ in pending:  # no worker will come for these
                        results[index] = WorkerLost(f"no worker process to run it: {cause}")
                    pending.clear()
                    break
                # Wake for the next turn, and often enough to see a worker arrive or a cancel.
                timeout = min(
                    slices.until_next_turn() if slices.sliced else QUANTUM,
                    ARRIVAL_POLL if pending and self._starting else QUANTUM,
                )
                for connection in multiprocessing.connection.wait(list(busy), timeout):
                    worker, index = busy.pop(connection)
                    slices.remove(worker)  # continued first: a stopped worker could hold half its answer back
                    try:
                        results[index] = connection.recv()
                        self._idle.append(worker)
                    except (EOFError, OSError):
                        results[index] = WorkerLost(self._lost(worker, replace=wanted if pending else 0))
                slices.turn()
        finally:
            slices.release()
            for worker, index in busy.values():  # cancelled or interrupted: what they compile is nobody's now
                _reap(worker.process, kill=True)
                results[index] = WorkerLost("cancelled")
            for index, _ in pending:
                results[index] = WorkerLost("cancelled")
        return results

    def cancel(self) -> None:
        """Stop a `map` running in another thread within a quantum: its workers are killed, its tasks cancelled."""
        with self._lock:
            self._stopping.set()

    def close(self) -> None:
        """End every worker: the ready ones are told to go; one still setting up is nobody's and dies (its setup may
        not end: a hung import), and no more start."""
        cancelled = self._stopping.is_set()  # interrupted: nothing waits for the starters (they end on their own)
        self.cancel()
        for starter in [] if cancelled else self._starters:
            starter.join()  # within a quantum: a starter that sees the stop kills what it still waits for
        self._arrivals()
        for worker in self._idle:
            try:
                worker.connection.send(None)
            except OSError:
                pass  # it ended already
        for worker in self._idle:
            if not _reap(worker.process, timeout=10):
                _reap(worker.process, kill=True)
            worker.connection.close()
        self._idle = []

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _TimeSlices:
    """Which busy workers may run: the first `running` in turn order; every QUANTUM the order rotates."""

    def __init__(self, running: int):
        self.running = running
        self.order: collections.deque[_Worker] = collections.deque()
        self.stopped: set[_Worker] = set()
        self.next_turn = time.monotonic() + QUANTUM

    @property
    def sliced(self) -> bool:
        return len(self.order) > self.running

    def add(self, worker: _Worker) -> None:
        self.order.append(worker)
        self._apply()

    def remove(self, worker: _Worker) -> None:
        self.order.remove(worker)
        if worker in self.stopped:
            worker.signal(signal.SIGCONT)
            self.stopped.discard(worker)
        self._apply()

    def until_next_turn(self) -> float:
        return max(0.0, self.next_turn - time.monotonic())

    def turn(self) -> None:
        """At a quantum's end, the workers that waited run and as many that ran longest wait."""
        if time.monotonic() < self.next_turn:
            return
        self.next_turn = time.monotonic() + QUANTUM
        if self.sliced:
            self.order.rotate(-(len(self.order) - self.running))
            self._apply()

    def _apply(self) -> None:
        for position, worker in enumerate(self.order):
            if position < self.running and worker in self.stopped:
                worker.signal(signal.SIGCONT)
                self.stopped.discard(worker)
            elif position >= self.running and worker not in self.stopped:
                worker.signal(signal.SIGSTOP)
                self.stopped.add(worker)

    def release(self) -> None:
        """Continue every stopped worker (map is leaving: none may stay stopped)."""
        for worker in self.stopped:
            worker.signal(signal.SIGCONT)
        self.stopped.clear()


def _serve(setup: Setup, connection: Any, forked: bool) -> None:
    """A worker: run the setup (a no-op when forked from a server that ran it), say it is ready (with its parent:
    the pool checks it is the forkserver, which it dies with), then run each task it is sent; told to stop, it
    leaves without tearing down the DSL's heap (seconds, for a spawned worker that imported it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is this process's parent's to handle: it ends the workers
    if forked:
        die_with_parent()  # the forkserver: dead with the process that started it, whose cancel never comes
    function, args = setup
    function(*args)
    connection.send((_READY, os.getppid()))
    while True:
        try:
            task = connection.recv()
        except EOFError:
            break
        if task is None:
            break
        function, args = task
        try:
            result = function(*args)
        except BaseException as exc:  # noqa: BLE001 - the task's failure, not the worker's
            result = TaskFailed(f"{type(exc).__name__}: {exc}")
        try:
            connection.send(result)
        except Exception as exc:  # noqa: BLE001 - an answer that does not pickle
            connection.send(TaskFailed(f"its result could not be sent back ({type(exc).__name__}: {exc})"))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


_READY = "ready"  # a worker's first word: set up, and armed to die with its parent
_REAPING = threading.Lock()  # held while a worker starts or its exit code is read: see _reap


def _reap(process: multiprocessing.process.BaseProcess, timeout: float | None = None, *, kill: bool = False) -> bool:
    """Wait (up to `timeout`) for `process` to end, killed first with `kill`, and read its exit code; False if it
    still runs. Its end is awaited outside the lock, its code read inside: `Process.start()` (in a starter
    thread) reads the code of every child that ended, and of two threads reading one forkserver child's code,
    the second finds the pipe drained and records 255 over the first's real code (-9 for a kill)."""
    if kill:
        process.kill()
    if not multiprocessing.connection.wait([process.sentinel], timeout):
        return False
    with _REAPING:
        process.join()
    return True


def _server_pid() -> int | None:
    """The forkserver's pid (the parent of every worker forked from it)."""
    return getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None)


def die_with_parent(parent: int | None = None) -> None:
    """Have the kernel kill this process when its parent (the thread that started it) ends, on Linux.

    Time slicing leaves workers stopped (SIGSTOP); if the process that time-slices them is killed
    (SIGKILL, an OOM kill, a CI timeout) no SIGCONT ever comes, and they would stay stopped for
    ever. Asked for in the forkserver and in each worker forked from it, that death reaches every
    one. `parent`: the pid expected; gone already, this process ends now.
    """
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: no such call
        return
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def _run_prepared_setup() -> None:
    """In the forkserver, as it imports this module: the setup `prepare` handed over, before any worker forks
    (nothing in the package imports this module at its own import, so the setup may import the package)."""
    encoded = os.environ.pop(_SETUP_ENV, None)  # set only while `prepare` starts the server
    parent = os.environ.pop(_PARENT_ENV, None)
    if parent is not None:
        die_with_parent(int(parent))
    if encoded:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C during the DSL's import is the parent's to handle
        function, args = pickle.loads(base64.b64decode(encoded))
        function(*args)
        gc.freeze()  # workers fork from here: their collections skip (and never copy) what the setup built
        atexit.register(os._exit, 0)  # if it outlives this process's stop: nothing to tear down but the DSL's heap


_run_prepared_setup()
