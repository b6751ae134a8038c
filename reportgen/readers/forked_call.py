"""One function computed in a forked child process, its result sent back here through a pipe.

Why: the system reader's own Python (grouping DuckDB's rows, building the tick tables) and the
framework traces' decoding take turns on the GIL when they run as two threads of one process. A child
forked before DuckDB starts its threads reads the system metrics on cores of its own; only its result
(the tick tables, ~12 MB pickled for 4 nodes x 2 h) comes back.

When: only where it is safe and the process is ours to fork. ``allow()`` is called by the command line
for its own process (a notebook kernel or a program calling the engine is not reportgen's to fork);
the platform is Linux (macOS's system libraries are not fork-safe); the process runs one OS thread at
that moment (``fork`` copies only the calling thread: a lock another thread held, DuckDB's or a BLAS
pool's, would stay held in the child forever); and there are at least two cores. Anywhere else the
caller computes the function itself.

Failure policy: the child only reads and computes; it writes nothing but the pipe (and files it was
handed open, see ``shared``), so it can be killed at any moment. ``close()`` kills and reaps it. A child
that ends without answering (killed from outside, out of memory, a crash) costs time, not the result:
``result(fallback)`` computes it here. A child killed by a stop signal stops the run (Ctrl-C reaches the
whole process group). An exception raised by the function is raised here, as it would be in a thread.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import sys
import threading
import time
import traceback

_allowed = False
_EXITING_THREAD_WAITS = 25  # ``can_fork``: 2 ms each
_PR_SET_PDEATHSIG = 1  # linux/prctl.h

# the child's stop signals go back to their default action: killed at once, it has nothing to clean up
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def allow() -> None:
    """This process is the command line's own: it may fork a child to compute a function (see the module)."""
    global _allowed
    _allowed = True


def can_fork() -> bool:
    """Whether ``ForkedCall`` may fork now: allowed, on Linux with two cores or more, and this process
    running one OS thread."""
    if not _allowed or not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    if len(os.sched_getaffinity(0)) < 2:  # one core: the two would take turns anyway
        return False
    for _ in range(_EXITING_THREAD_WAITS):
        try:
            if len(os.listdir("/proc/self/task")) == 1:
                return True
        except OSError:
            return False
        if threading.active_count() > 1:  # a Python thread still runs
            return False
        # A Python thread that has just been joined is still listed while the system ends it (the traces'
        # thread, right before the rules on a small profile); another native thread (DuckDB's, a BLAS pool's)
        # stays, and after these few milliseconds the answer is no.
        time.sleep(0.002)
    return False


def start(fn, *args, stack, shared: dict | None = None) -> "ForkedCall | None":
    """A ``ForkedCall``, or None where no fork is allowed (``can_fork``) or the system has no process to give:
    the caller then computes ``fn``'s result itself."""
    if not can_fork():
        return None
    try:
        return ForkedCall(fn, *args, stack=stack, shared=shared)
    except OSError:
        return None


class ForkedCall:
    """``fn(notice, *args)`` computed in a forked child. ``notice`` is a ``threading.Event`` of the child's,
    set when this process calls ``notify()`` (or ends). ``shared``: objects that both processes hold (made
    before the fork, such as an open temporary file) and that the result may refer to: they are sent by
    reference, so the result refers to this process's own. A fork that fails raises its OSError with nothing
    left behind (``start`` turns it into None). ``stack``: the ``contextlib.ExitStack`` that
    closes the child on the caller's way out, given here so that the close is registered before a stop
    signal can interrupt the caller (between this call's return and a ``stack.callback`` of its own, an
    interrupt left the child running). Call only where ``can_fork()`` is true."""

    def __init__(self, fn, *args, stack, shared: dict | None = None):
        self._shared = dict(shared or {})
        self._lock = threading.Lock()
        self._closed = False
        read_end, write_end = os.pipe()
        notice_read, notice_write = os.pipe()
        # The stop signals are held back across the fork: a KeyboardInterrupt raised in the child before it
        # resets their handlers would unwind the parent's code there, and one raised here before ``pid`` is
        # kept would leave the child to nobody. They are let through once this object can end the child.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:  # no process to be had (EAGAIN, ENOMEM): nothing made, nothing held back
            for fd in (read_end, write_end, notice_read, notice_write):
                os.close(fd)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            raise
        if pid == 0:  # the child: never returns
            _serve(fn, args, write_end, notice_read, self._shared, mask, (read_end, notice_write), parent)
        os.close(write_end)
        os.close(notice_read)
        self.pid: int | None = pid
        self._notice: int | None = notice_write
        self._pipe = os.fdopen(read_end, "rb")
        try:
            stack.callback(self.close)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a signal that came meanwhile is raised here

    def notify(self) -> None:
        """Set the child's ``notice`` (idempotent)."""
        with self._lock:
            fd, self._notice = self._notice, None
        if fd is not None:
            os.close(fd)

    def result(self, fallback):
        """The child's result, or its exception raised here; ``fallback()`` when it ended without answering."""
        try:
            kind, value = _Unpickler(self._pipe, self._shared).load()
        except EOFError:  # the child closed its end without a whole answer (it died, maybe mid-message)
            status = self._end(kill=False)
        except Exception:  # noqa: BLE001 - an answer that does not unpickle: the child is of no use
            status = self._end(kill=True)
        else:
            self._end(kill=False)
            if kind == "error":
                raise value
            return value
        finally:
            self._pipe.close()
            self.notify()
        if self._closed:  # close() ended it from another thread: the caller is stopping
            raise KeyboardInterrupt
        if status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) in STOP_SIGNALS:
            raise KeyboardInterrupt
        return fallback()

    def close(self) -> None:
        """End the child if it still runs, and reap it."""
        self._closed = True
        self.notify()
        self._end(kill=True)

    def _end(self, kill: bool):
        """Reap the child, killing it first with ``kill``: its wait status, None if reaped before."""
        with self._lock:
            if self.pid is None:
                return None
            pid, self.pid = self.pid, None
            if kill:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            while True:
                try:
                    return os.waitpid(pid, 0)[1]
                except ChildProcessError:  # reaped by someone else (SIGCHLD ignored)
                    return None
                except InterruptedError:
                    continue


class _Pickler(pickle.Pickler):
    """Sends the ``shared`` objects by name."""

    def __init__(self, file, shared: dict):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._names = {id(obj): name for name, obj in shared.items()}

    def persistent_id(self, obj):
        return self._names.get(id(obj))


class _Unpickler(pickle.Unpickler):
    """Takes the ``shared`` objects' names back to this process's objects."""

    def __init__(self, file, shared: dict):
        super().__init__(file)
        self._shared = shared

    def persistent_load(self, pid):
        return self._shared[pid]


def _serve(fn, args, write_end: int, notice_read: int, shared: dict, mask, parents: tuple, parent: int) -> None:
    """The child's whole life: ``("ok", result)`` or ``("error", exception)`` pickled into the pipe;
    ``os._exit`` so that nothing of the parent's (exit handlers, finalizers, buffered output) runs or is
    flushed twice. The stop signals, held back by the parent across the fork, get their default action
    before they are let through: a stop signal kills the child at once."""
    code = 0
    try:
        _die_with_parent(parent)
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for fd in parents:  # the parent's ends: the notice pipe's EOF must come when the parent closes its own
            os.close(fd)
        notice = threading.Event()
        threading.Thread(target=_wait_for_notice, args=(notice_read, notice), daemon=True).start()
        with os.fdopen(write_end, "wb", buffering=1 << 16) as out:
            try:
                answer = ("ok", fn(notice, *args))
            except Exception as err:  # noqa: BLE001 - raised in the parent
                answer = ("error", _picklable(err))
            _Pickler(out, shared).dump(answer)  # a result that does not pickle: the parent computes it
    except BaseException:  # noqa: BLE001 - the parent sees the pipe end and computes the result itself
        code = 1
    finally:
        os._exit(code)


def _die_with_parent(parent: int) -> None:
    """The kernel kills this child when its parent dies (``PR_SET_PDEATHSIG``): a parent killed with SIGKILL
    (an OOM kill, ``kill -9``) does not leave it reading on, holding the run's locked folders open. A parent
    that died before this call: the child ends at once."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not glibc's prctl: the pipe's end still ends the child at its answer
        pass
    if os.getppid() != parent:
        os._exit(1)


def _wait_for_notice(fd: int, notice: threading.Event) -> None:
    """Set ``notice`` when the parent closes its end of the pipe (``notify``, or its exit)."""
    try:
        while os.read(fd, 1):
            pass
    except OSError:
        pass
    notice.set()


def _picklable(err: Exception) -> Exception:
    """``err``, or a RuntimeError carrying its traceback where it does not pickle."""
    try:
        pickle.loads(pickle.dumps(err, protocol=pickle.HIGHEST_PROTOCOL))
        return err
    except Exception:  # noqa: BLE001
        text = "".join(traceback.format_exception(err))
        return RuntimeError(f"in the forked child: {text}")
