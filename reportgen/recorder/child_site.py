"""Copied as ``sitecustomize.py`` into a private temp folder that ``reportgen record`` puts first on a Python
command's PYTHONPATH: it lets the recorder learn when the user's script finished, before the interpreter's
teardown (1-3 s with torch or TensorFlow imported, which would otherwise count as training loop).

An ``atexit`` hook writes ``<time.time()> <pid>`` to the file named by ``REPORTGEN_SCRIPT_END_FILE``: atexit hooks
run right after the main module's last line (registered this early, after every other hook: within 20 ms of the
last line with torch or TensorFlow imported, the teardown seconds after). Only the first Python process takes the
variable (it is removed from the environment, and PYTHONPATH restored, so the script's subprocesses inherit
neither), only that process writes (not a forked child), and the recorder keeps the mark only when its pid is the
command's own. Any failure here is silent: nothing of the command's behaviour changes. Standard library only (the
command's interpreter may not have reportgen); the user's own ``sitecustomize``, if any, is loaded after it.
"""

import atexit
import os
import sys
import time

END_FILE = "REPORTGEN_SCRIPT_END_FILE"
PATH_BEFORE = "REPORTGEN_PYTHONPATH_BEFORE"  # the command's PYTHONPATH before the recorder's folder (absent: none)


def _take_mark() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    target = os.environ.pop(END_FILE, None)
    if not target:  # a later Python process (PYTHONPATH already restored) or a command run without the recorder
        return
    before = os.environ.pop(PATH_BEFORE, None)
    if before is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = before
    pid = os.getpid()

    def write_end() -> None:
        if os.getpid() != pid:  # a forked child that exits normally runs its parent's hooks too
            return
        try:
            with open(target, "w", encoding="ascii") as out:
                out.write(f"{time.time()!r} {pid}\n")
        except Exception:  # noqa: BLE001 - never change how the command ends
            pass

    atexit.register(write_end)


if __name__ == "sitecustomize":  # as the child's sitecustomize only; the recorder reads the names above
    import importlib

    try:
        _take_mark()
    except Exception:  # noqa: BLE001 - never change how the command starts
        pass
    # The user's own sitecustomize (further on sys.path), as site would import it: its errors are its own.

    _OURS = sys.modules.pop(__name__, None)
    try:
        importlib.import_module(__name__)
    except ImportError as err:
        if _OURS is not None:  # the import system takes this module's entry back when it has run
            sys.modules[__name__] = _OURS
        if err.name != __name__:
            raise
    except BaseException:
        if _OURS is not None:
            sys.modules[__name__] = _OURS
        raise
