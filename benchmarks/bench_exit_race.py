"""Host probe: how often a task-like process's sockets reach end-of-file
before the process can be reaped, by its threads and with the cores idle or
busy.

``python -m benchmarks.bench_exit_race [--exits 60] [--mb 256]``

Airflow 3.3's task supervisor (task SDK 1.3.2, ``supervisor.py``) watches a
task process through its sockets.  When the last of them reaches end-of-file
it checks once whether the process has exited (``waitpid`` without waiting);
if not, it goes on waiting on a selector with nothing left in it until its
next heartbeat, ``[workers] min_heartbeat_interval`` (1 s here), and only
then hands the worker slot to the next task: the scale benchmark's late
hand-offs.  The kernel closes an exiting process's files before it makes the
process reapable, and a process with several threads is reapable only once
all of them have exited; on busy cores the last of them may wait for a core
after the sockets closed.

Each case forks ``exits`` children the way the supervisor does (two socket
pairs, the child's ends on its stdout and stderr).  A child touches ``mb``
MB, starts threads or not (Arrow's CPU pool reading a CSV, numpy's BLAS: as a
task has after reading its data), reports its thread count and exits with
``os._exit``.  The parent reads both sockets to end-of-file, then checks once
with ``waitpid(WNOHANG)``.  "Busy": one spinning process per usable core.
"""

from __future__ import annotations

import argparse
import os
import selectors
import signal
import socket
import subprocess
import sys
import traceback
from contextlib import ExitStack, contextmanager

from benchmarks.harness import run_benchmark

TIMEOUT = 60.0
# exits when orphaned, so that a killed probe leaves no core spinning
SPIN = ("import os, sys; parent = os.getppid(); print('ready', flush=True)\n"
        "while os.getppid() == parent: pass")


def cores() -> int:
    return len(os.sched_getaffinity(0))


def _start_threads() -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    pacsv.read_csv(pa.BufferReader(b"a,b\n" + b"1,2\n" * 200_000))
    np.ones((200, 200)) @ np.ones((200, 200))


def _child(out: socket.socket, err: socket.socket, mb: int, threads: bool,
           hold: tuple[int, int] | None):
    """The forked child's work; the caller exits the process.  ``hold``: a pipe
    (read, write) whose read end it reads to end-of-file after closing its
    stdout and stderr (the tests' certain case of a process outliving its
    sockets)."""
    if hold is not None:
        os.close(hold[1])
    for fd, sock in ((1, out), (2, err)):
        os.dup2(sock.fileno(), fd)
    heap = bytearray(mb * 2**20)
    for page in range(0, len(heap), 4096):  # calloc'd pages are not yet touched
        heap[page] = 1
    if threads:
        _start_threads()
    os.write(1, str(len(os.listdir("/proc/self/task"))).encode())
    if hold is not None:
        os.close(1)
        os.close(2)
        out.close()
        err.close()
        while os.read(hold[0], 1):
            pass


def _fork_child(theirs: list[socket.socket], mb: int, threads: bool,
                hold: tuple[int, int] | None) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        _child(*theirs, mb, threads, hold)
        code = 0
    except BaseException:
        os.write(2, traceback.format_exc().encode())
    finally:
        os._exit(code)


def _read_to_eof(pid: int, ours: list[socket.socket]) -> list[bytes]:
    """What the child wrote on each socket, once both reached end-of-file."""
    received = {s: b"" for s in ours}
    with selectors.DefaultSelector() as sel:
        for s in ours:
            sel.register(s, selectors.EVENT_READ)
        while sel.get_map():
            events = sel.select(timeout=TIMEOUT)
            if not events:
                raise TimeoutError(f"exit-race child {pid}: no end-of-file in {TIMEOUT:.0f} s")
            for key, _ in events:
                data = key.fileobj.recv(65536)
                received[key.fileobj] += data
                if not data:
                    sel.unregister(key.fileobj)
    return [received[s] for s in ours]


def one_exit(mb: int, threads: bool, hold: bool = False) -> tuple[bool, int]:
    """(was the child not yet reapable when its sockets closed, its threads)."""
    pairs = [socket.socketpair() for _ in range(2)]
    hold_r, hold_w = os.pipe() if hold else (None, None)
    pid, status = None, None
    try:
        pid = _fork_child([theirs for _, theirs in pairs], mb, threads,
                          (hold_r, hold_w) if hold else None)
        for _, theirs in pairs:
            theirs.close()
        out, err = _read_to_eof(pid, [ours for ours, _ in pairs])
        done, status = os.waitpid(pid, os.WNOHANG)
        late = done == 0
        if hold_w is not None:
            os.close(hold_w)
            hold_w = None
        if late:
            status = os.waitpid(pid, 0)[1]
    finally:
        for fd in (hold_r, hold_w):
            if fd is not None:
                os.close(fd)
        for ours, theirs in pairs:
            ours.close()
            theirs.close()
        if pid is not None and status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or not out.isdigit():
        raise RuntimeError(f"exit-race child failed (status {status}): "
                           f"{err.decode(errors='replace')[-2000:]}")
    return late, int(out)


@contextmanager
def busy_cores(on: bool):
    """One spinning process per usable core while the block runs (if ``on``),
    each spinning before the block starts."""
    with ExitStack() as stack:
        for _ in range(cores() if on else 0):
            p = stack.enter_context(subprocess.Popen([sys.executable, "-c", SPIN],
                                                     stdout=subprocess.PIPE, text=True))
            stack.callback(p.kill)
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError("a spinning process did not start")
        yield


def measure(exits: int, mb: int) -> dict:
    import numpy  # noqa: F401  imported once here: the children inherit them
    import pyarrow.csv  # noqa: F401

    cases = {}
    for busy in (False, True):
        for threads in (False, True):
            with busy_cores(busy):
                runs = [one_exit(mb, threads) for _ in range(exits)]
            name = f"{'busy' if busy else 'idle'}_cores_{'threads' if threads else 'one_thread'}"
            late = sum(late for late, _ in runs)
            cases[name] = {"exits": exits, "not_reapable_at_eof": late,
                           "share": round(late / exits, 3) if exits else 0.0,
                           "child_threads": max((n for _, n in runs), default=0)}
    return {"mb_per_child": mb, "cores": cores(), "cases": cases}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exits", type=int, default=60)
    parser.add_argument("--mb", type=int, default=256)
    args = parser.parse_args(argv)
    return run_benchmark("exit_race", lambda: measure(args.exits, args.mb),
                         sample_interval=1.0, dataset="none (a host probe)",
                         params={"exits": args.exits, "mb": args.mb})


if __name__ == "__main__":
    main()
