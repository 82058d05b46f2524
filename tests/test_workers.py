"""contract.workers: worker processes that run tasks, at most `running` of them at any instant.

The tasks here burn a fixed amount of CPU time (measured by the task itself with
`time.thread_time`), so what the pool did is read off when each task started and ended: with
more busy processes than `running`, time slicing shows as tasks that all end together, each
taking several times its own CPU in wall time, never as two running at once.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from zerojit.contract.executor import start_workers
from zerojit.contract.workers import _REAPING, TaskFailed, WorkerLost, Workers, _reap, prepare

CPU_SECONDS = 1.0
NO_SETUP = (int, ())  # a setup that does nothing


def forked_setup() -> tuple:
    """A setup whose workers fork from this process's forkserver: the one a test before prepared (the server keeps
    its first setup for the process's life), else the no-op one. The tasks here need no setup of their own."""
    from zerojit.contract import workers

    return workers._prepared or NO_SETUP


def burn(seconds: float) -> tuple[float, float, float]:
    """Spin until this thread has used `seconds` of CPU; (wall start, wall end, CPU used)."""
    start, cpu = time.time(), time.thread_time()
    while time.thread_time() - cpu < seconds:
        pass
    return start, time.time(), time.thread_time() - cpu


def _spans(processes: int, running: int, tasks: int) -> list[tuple[float, float, float]]:
    with Workers(running, forked_setup(), processes) as workers:
        assert workers.forked
        workers.map([(int, ())] * processes, processes)  # every process started and idle: the clock starts together
        return workers.map([(burn, (CPU_SECONDS,))] * tasks, processes)


def test_more_processes_than_running_share_the_cpu_and_end_together():
    """Three 1-CPU-second tasks, one may run at a time: sliced, they end within about a second of each other, each
    taking about three times its CPU; one process at a time (no slicing), they end one after another."""
    sliced = _spans(processes=3, running=1, tasks=3)
    ends = sorted(end for _, end, _ in sliced)
    starts = [start for start, _, _ in sliced]
    span = max(ends) - min(starts)
    assert ends[-1] - ends[0] < 1.0, sliced
    assert all(end - start > 2 * cpu for start, end, cpu in sliced), sliced
    assert span > 0.85 * sum(cpu for _, _, cpu in sliced), "two tasks ran at once"
    serial = _spans(processes=1, running=1, tasks=3)
    ends = sorted(end for _, end, _ in serial)
    assert ends[1] - ends[0] > 0.8 * CPU_SECONDS and ends[2] - ends[1] > 0.8 * CPU_SECONDS, serial


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def fail(message: str) -> None:
    raise ValueError(message)


def test_a_worker_that_dies_loses_only_its_task_and_another_takes_its_place():
    """Two workers, three of whose tasks kill their worker: every other task still runs (replacements start)."""
    with Workers(2, forked_setup()) as workers:
        results = workers.map([(die, ()), (int, ("3",)), (die, ()), (die, ()), (int, ("4",)), (int, ("5",))])
        assert workers.processes <= 2, "a replacement takes one lost worker's place, no more"
    assert all(isinstance(results[i], WorkerLost) and "exit code -9" in str(results[i]) for i in (0, 2, 3)), results
    assert [results[i] for i in (1, 4, 5)] == [3, 4, 5]


def test_a_lone_worker_that_dies_with_tasks_waiting_is_replaced_by_exactly_one():
    """The race-free case of the rule above: one worker, lost while two tasks wait, so its replacement is started
    for certain; a pool that grew by more than the one it lost would hold two."""
    with Workers(1, forked_setup()) as workers:
        results = workers.map([(die, ()), (int, ("3",)), (int, ("4",))])
        assert workers.processes == 1
    assert isinstance(results[0], WorkerLost) and results[1:] == [3, 4]


def test_pools_in_two_threads_losing_workers_report_each_ones_real_exit_code():
    """Starting a worker reads the exit code of every ended child of this process: one pool's starts, racing
    another's reads, once turned some -9s into 255s. Three rounds of two pools, 12 kills each."""
    prepare(forked_setup())  # from this (main) thread, before the pools' threads ask for the server

    def kills(results: list) -> None:
        with Workers(2, forked_setup()) as workers:
            results.extend(workers.map([(die, ())] * 12))

    for _ in range(3):
        here, there = [], []
        other = threading.Thread(target=kills, args=(there,))
        other.start()
        kills(here)
        other.join()
        assert all("exit code -9" in str(lost) for lost in here + there), here + there


def test_an_exit_code_is_read_under_the_lock_that_a_starting_worker_holds():
    """The race above made certain: `_reap` reads a process's exit code (`join`) only while it holds `_REAPING`,
    the lock a starter holds across `Process.start()` (which reads the codes of ended children)."""
    process = multiprocessing.get_context("fork").Process(target=int)
    process.start()
    held, join = [], process.join
    process.join = lambda *args: held.append(_REAPING.locked()) or join(*args)
    assert _reap(process) and held == [True] and process.exitcode == 0


def test_a_task_that_raises_fails_alone_and_its_worker_carries_on():
    with Workers(1, forked_setup()) as workers:
        pid = workers.map([(os.getpid, ())])[0]
        results = workers.map([(fail, ("no",)), (os.getpid, ()), (lambda: None, ())])  # the last cannot be pickled
    assert isinstance(results[0], TaskFailed) and str(results[0]) == "ValueError: no"
    assert results[1] == pid
    assert isinstance(results[2], TaskFailed) and "pickle" in str(results[2]).lower()


def test_when_no_worker_can_start_every_task_says_so():
    def broken_setup():  # not picklable for a spawned worker: the start itself fails
        pass

    with Workers(1, (broken_setup, ()), 2, start="spawn") as workers:
        results = workers.map([(int, ())] * 3)
    assert all(isinstance(r, WorkerLost) and "no worker process" in str(r) for r in results)


def test_start_workers_starts_one_per_job_and_a_map_may_hold_more_only_when_forked():
    with start_workers(2, forked_setup(), tasks=10) as workers:
        assert (workers.processes, workers.running, workers.forked) == (2, 2, True)
        workers.map([(int, ())] * 6, processes=4)
        assert workers.processes == 4
    with start_workers(2, forked_setup(), tasks=1) as workers:
        assert workers.processes == 1
    # a spawned worker could not die with its parent: never sliced
    with Workers(2, NO_SETUP, 4, start="spawn") as workers:
        assert not workers.forked
        assert workers.map([(int, ("1",))] * 6, processes=4) == [1] * 6 and workers.processes == 2


def test_workers_that_do_not_time_slice_never_hold_more_processes_than_run_at_once():
    """time_slice=False, the design before slicing: forked from the server, yet no more than `running` processes."""
    with start_workers(2, forked_setup(), tasks=10, time_slice=False) as workers:
        assert workers.forked and not workers.sliced
        assert workers.map([(int, ("1",))] * 6, processes=4) == [1] * 6 and workers.processes == 2
    with pytest.raises(ValueError, match="start='fork': not one of forkserver, spawn"):
        Workers(1, NO_SETUP, start="fork")


def test_a_cancelled_map_ends_within_a_quantum_and_leaves_no_worker_behind():
    """An interrupted warmup (Ctrl-C, a failed set-up) cancels from another thread: the map returns at once, its
    tasks cancelled, and no worker survives, not even one the time slicing had stopped."""
    import threading

    workers = Workers(1, forked_setup(), 3)
    workers.map([(int, ())] * 3, 3)  # all three up
    pids = set(workers.map([(os.getpid, ())] * 3, 3))
    found: list = []
    mapping = threading.Thread(target=lambda: found.extend(workers.map([(burn, (30.0,))] * 3, 3)))
    mapping.start()
    time.sleep(1.0)  # two of the three are stopped now
    cancelled = time.monotonic()
    workers.cancel()
    mapping.join(timeout=5)
    assert not mapping.is_alive() and time.monotonic() - cancelled < 2
    workers.close()
    assert all(isinstance(r, WorkerLost) and str(r) == "cancelled" for r in found)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


_KILLED_MIDWAY = """
import os, sys
sys.path.insert(0, {tests!r})
from test_workers import NO_SETUP, burn
from zerojit.contract.workers import Workers

workers = Workers(1, NO_SETUP, 3)
workers.map([(int, ())] * 3, 3)
print(os.getpid(), *sorted(set(workers.map([(os.getpid, ())] * 3, 3))), flush=True)
workers.map([(burn, (60.0,))] * 3, 3)
"""


def _state(pid: int) -> str:
    """The process's state letter in /proc (R, S, T for stopped, Z for a zombie)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _gone(pid: int) -> bool:
    """No such process, or a zombie nobody reaped yet (it runs no more)."""
    try:
        return _state(pid) == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's")
def test_workers_stopped_by_time_slicing_die_with_a_killed_parent():
    """SIGKILL the process that time-slices its workers (an OOM kill, a CI timeout): no SIGCONT ever comes, yet
    no worker stays behind stopped, nor does the forkserver."""
    parent = subprocess.Popen(
        [sys.executable, "-c", _KILLED_MIDWAY.format(tests=str(Path(__file__).parent))],
        stdout=subprocess.PIPE,
        text=True,
    )
    me, *pids = map(int, parent.stdout.readline().split())
    server = [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent_of(int(p)) == me and int(p) not in pids]
    # Two of them are stopped at any moment once the slicer runs; on a loaded machine that can take a while.
    deadline = time.monotonic() + 20
    while not any(_state(pid) == "T" for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(_state(pid) == "T" for pid in pids)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while not all(_gone(pid) for pid in pids + server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(pid) for pid in pids + server), [pid for pid in pids + server if not _gone(pid)]


def _parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ValueError):
        return None


_KILLED_AS_IT_STARTS = """
import sys
sys.path.insert(0, {tests!r})
from test_workers import NO_SETUP, burn
from zerojit.contract.workers import Workers

workers = Workers(1, NO_SETUP, 6)
print("go", flush=True)
workers.map([(burn, (60.0,))] * 6, 6)
"""


def _holding(token: str) -> list[tuple[int, str]]:
    """(pid, state) of every live process whose environment holds `token` (what a run started, at any depth)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if token.encode() in Path(f"/proc/{pid}/environ").read_bytes():
                state = _state(int(pid))
                found += [(int(pid), state)] if state != "Z" else []
        except OSError:
            pass  # gone meanwhile, or not ours to read
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's")
def test_a_worker_is_never_stopped_before_it_would_die_with_a_killed_parent():
    """SIGKILL the time-slicing process while its workers start: a worker the slicer stopped before it asked to die
    with its parent would stay stopped for ever under init. Each attempt kills a little later."""
    left = []
    for attempt in range(12):
        token = f"ZEROJIT_KILL_PROBE_{os.getpid()}_{attempt}"
        run = subprocess.Popen(
            [sys.executable, "-c", _KILLED_AS_IT_STARTS.format(tests=str(Path(__file__).parent))],
            stdout=subprocess.PIPE,
            env={**os.environ, token: "1"},
        )
        run.stdout.readline()
        time.sleep(0.02 * attempt)
        run.kill()
        run.wait()
        deadline = time.monotonic() + 5
        while _holding(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        if behind := _holding(token):
            left.append((attempt, behind))
            for pid, _ in behind:
                os.kill(pid, signal.SIGKILL)
    assert left == []


_INTERRUPTED_SETUP = """
import signal
import time
from zerojit.contract.workers import Workers

# Ctrl-C as in a terminal's foreground job: a job a shell starts in the background (`&`, as a CI runner may)
# inherits SIGINT ignored, and Python then leaves it ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)
Workers(1, (time.sleep, (5.0,)), 1)  # the forkserver runs the setup (a DSL's import) as it starts
print("go", flush=True)
for _ in range(300):  # as a command waits: Ctrl-C may reach the pool's starter thread, not this one, and
    time.sleep(0.1)  # Python raises it here only at the next bytecode (one long sleep holds it till its end)
"""


def test_a_ctrl_c_while_the_forkserver_sets_up_is_quiet_there():
    """Ctrl-C reaches the whole foreground group, the forkserver too, while it imports the DSL: the interrupt is
    the command's to report; the server says nothing and ends with it."""
    run = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED_SETUP],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own group, as a terminal's foreground job
        text=True,
    )
    run.stdout.readline()
    time.sleep(1.0)  # the server is in its setup now
    os.killpg(run.pid, signal.SIGINT)
    _, err = run.communicate(timeout=30)
    assert "KeyboardInterrupt" in err and "_run_prepared_setup" not in err, (run.returncode, err)
