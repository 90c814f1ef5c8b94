#!/usr/bin/env python3
# bench/supervise.py - runs one benchmarked server in the foreground as a child
# subreaper, so every process the server forks (even ones that detach with
# setsid or double-fork) stays in this process's tree and, once it exits, is
# reaped here; bench.py then gets the server's whole CPU from /proc as
# utime+stime+cutime+cstime over this tree.  TERM/INT are forwarded to the
# server; leftovers of the tree are killed by pid when the server is gone.
#
# usage: supervise.py INFOFILE LOGFILE -- COMMAND [ARG...]
#   INFOFILE gets "SUPERVISOR_PID SERVER_PID" once the server is started.
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
STOP_GRACE_S = 5.0


class Stop(Exception):
    pass


def descendants(root):
    """pids of every live descendant of root (by walking /proc ppid links)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        ppid = int(data[data.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo and len(out) < 100000:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def reap_all():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_tree(sig):
    for pid in descendants(os.getpid()):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.stderr.write(__doc__ or "usage: supervise.py INFOFILE LOGFILE -- CMD...\n")
        return 2
    infofile, logfile, cmd = sys.argv[1], sys.argv[2], sys.argv[4:]
    os.setsid()  # our own session: a terminal's ^C reaches us only through run.sh
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.stderr.write("supervise: prctl(PR_SET_CHILD_SUBREAPER) failed\n")
    log = os.open(logfile, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    child = os.fork()
    if child == 0:
        os.dup2(log, 1)
        os.dup2(log, 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    os.close(log)
    tmp = infofile + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{os.getpid()} {child}\n")
    os.rename(tmp, infofile)

    def on_signal(signum, frame):
        raise Stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    status = 0
    try:
        while True:  # ends when no child is left (server and all its orphans)
            try:
                pid, st = os.wait()
            except ChildProcessError:
                break
            if pid == child:
                status = os.waitstatus_to_exitcode(st)
    except Stop:
        pass
    # stop: the server first, then whatever is left of its tree, by pid
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        os.kill(child, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline:
        reap_all()
        if not descendants(os.getpid()):
            break
        if time.monotonic() > deadline - STOP_GRACE_S / 2:
            kill_tree(signal.SIGTERM)
        time.sleep(0.05)
    kill_tree(signal.SIGKILL)
    time.sleep(0.1)
    reap_all()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())
