"""Child processes: the script runs in a session and process group of its own, its whole tree is
tracked while it runs, and everything in it is ended afterwards, whatever it did (crashed, hung,
forked, ignored SIGTERM, or escaped into a new session of its own)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO

# Between SIGTERM and SIGKILL: long enough for a clean exit, short enough not to stall a run.
TERMINATE_GRACE_S = 2.0
KILL_ROUNDS = 5
PR_SET_CHILD_SUBREAPER = 36


def _read_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of a live process, from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields start after the last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def list_processes() -> dict[int, tuple[int, int]]:
    """Every visible process: pid -> (parent pid, start time)."""
    table = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                stat = _read_stat(int(name))
                if stat is not None:
                    table[int(name)] = stat
    return table


def descendants(root: int, table: dict[int, tuple[int, int]]) -> set[int]:
    """`root` and every process below it in `table`."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, stack = {root}, [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


@dataclass
class ProcessTree:
    """Remembers every process ever seen under a root, with its start time, so that a process
    that escaped (reparented) is still sampled and ended, and a reused pid is never hit.

    `adopter`: this process, when it is a child subreaper: orphans of the script are then
    reparented to it, and count as the script's while it is the only one running.
    """

    root: int
    adopter: int | None = None
    seen: dict[int, int] = field(default_factory=dict)
    lister: Callable[[], dict[int, tuple[int, int]]] = list_processes

    def refresh(self) -> set[int]:
        """Every process of the tree that is alive now, escaped ones included."""
        table = self.lister()
        roots = {self.root}
        if self.adopter is not None:
            roots |= {pid for pid, (parent, _) in table.items() if parent == self.adopter}
        for root in roots:
            for pid in descendants(root, table) & table.keys():
                self.seen.setdefault(pid, table[pid][1])
        return {pid for pid, start in self.seen.items() if pid in table and table[pid][1] == start}

    def survivors(self) -> list[int]:
        return sorted(self.refresh())


def become_subreaper() -> bool:
    """Make orphans of our children ours, not init's (Linux): a script that double-forks a
    daemon cannot slip out of the tree then."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def end_leftovers() -> None:
    """SIGKILL every process still below this one: run once no script runs any more."""
    table = list_processes()
    leftovers = descendants(os.getpid(), table) - {os.getpid()}
    _signal_all(leftovers, None, signal.SIGKILL)
    for pid in leftovers:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)  # reap the ones we adopted


def _signal_all(pids: Iterable[int], pgid: int | None, signum: int) -> None:
    if pgid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signum)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def end_tree(process: subprocess.Popen, tree: ProcessTree) -> None:
    """SIGTERM the child's group and every process seen under it, then SIGKILL what is left,
    again and again while the tree still spawns (a SIGTERM handler may start new processes)."""
    pgid = process.pid  # start_new_session made the child its group's leader
    _signal_all(tree.survivors(), pgid, signal.SIGTERM)
    deadline = time.monotonic() + TERMINATE_GRACE_S
    while time.monotonic() < deadline:
        if process.poll() is not None and not [p for p in tree.survivors() if p != process.pid]:
            break
        time.sleep(0.05)
    for _ in range(KILL_ROUNDS):
        survivors = [p for p in tree.survivors() if p != process.pid or process.poll() is None]
        if not survivors:
            break
        _signal_all(survivors, pgid, signal.SIGKILL)
        time.sleep(0.05)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


def launch(command: list[str], env: dict[str, str], log: IO[bytes]) -> subprocess.Popen:
    return subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
