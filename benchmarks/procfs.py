"""Resident memory and CPU time of process trees, read straight from Linux's ``/proc``.

The memory samplers run beside the work they measure, on the same two cores:
psutil's ``children(recursive=True)`` and ``process_iter`` build Python
objects for every process on the machine at each sample, which cost the
scale benchmark's tasks about 4% of a core.  One pass here reads one small
file per process (``/proc/<pid>/stat``: parent and resident pages) and a
process's command line only the first time its pid is seen.  Where ``/proc``
is missing, psutil gives the same figures.
"""

from __future__ import annotations

import os

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
HAS_PROC = os.path.isdir("/proc/self")


def snapshot() -> dict[int, tuple[int, int, float]]:
    """pid -> (parent pid, resident bytes, CPU seconds so far: user + system)
    of every process now running."""
    if not HAS_PROC:
        return _psutil_snapshot()
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # the process ended between listing and reading
            continue
        # after "pid (comm) ": state ppid ... utime stime (fields 14-15 of the
        # line) ... rss (field 24)
        fields = stat[stat.rindex(b")") + 2:].split()
        out[int(name)] = (int(fields[1]), int(fields[21]) * PAGE,
                          (int(fields[11]) + int(fields[12])) / TICKS)
    return out


def tree_rss(procs: dict, root: int) -> int:
    """Resident bytes of ``root`` and all its descendants in ``procs``."""
    return _tree_sum(procs, root, 1)


def tree_cpu(procs: dict, root: int) -> float:
    """CPU seconds of ``root`` and its descendants now running in ``procs``."""
    return _tree_sum(procs, root, 2)


def descendants(procs: dict, roots) -> set[int]:
    """The pids of ``roots`` and all their descendants in ``procs``."""
    children: dict[int, list[int]] = {}
    for pid, proc in procs.items():
        children.setdefault(proc[0], []).append(pid)
    out, stack = set(), list(roots)
    while stack:
        pid = stack.pop()
        if pid not in out:
            out.add(pid)
            stack.extend(children.get(pid, ()))
    return out


def _tree_sum(procs: dict, root: int, field: int):
    return sum(procs[pid][field] for pid in descendants(procs, [root]) if pid in procs)


class Titles:
    """Command lines by pid, read once per process (a pid seen again with
    another parent is a new process) unless the title may still change:
    titles starting with one of ``unsettled`` are read again each time."""

    def __init__(self, unsettled: tuple[str, ...] = ()):
        self._seen: dict[int, tuple[int, str]] = {}
        self._unsettled = unsettled

    def of(self, pid: int, ppid: int) -> str:
        known = self._seen.get(pid)
        if known is None or known[0] != ppid or known[1].startswith(self._unsettled):
            known = (ppid, _cmdline(pid))
            self._seen[pid] = known
        return known[1]

    def forget_all_but(self, alive) -> None:
        for pid in set(self._seen) - set(alive):
            del self._seen[pid]


def _cmdline(pid: int) -> str:
    if not HAS_PROC:
        import psutil
        try:
            return " ".join(psutil.Process(pid).cmdline())
        except psutil.Error:
            return ""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _psutil_snapshot() -> dict[int, tuple[int, int, float]]:
    import psutil
    out = {}
    for p in psutil.process_iter(["ppid", "memory_info", "cpu_times"]):
        if p.info["memory_info"] is not None and p.info["cpu_times"] is not None:
            out[p.pid] = (p.info["ppid"], p.info["memory_info"].rss,
                          p.info["cpu_times"].user + p.info["cpu_times"].system)
    return out
