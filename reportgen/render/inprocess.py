"""A papermill engine that runs the notebook's cells in this process, on an IPython shell.

Why: ``generate`` already holds everything the notebook imports (pandas, numpy, reportgen) when the
engine has run. A separate kernel process imports all of it again, and every one of the notebook's
cells is a round trip through ZeroMQ; on ``sample_data`` that was about half of the notebook path
(``benchmarks/HISTORY.md``, "The notebook path"). papermill still executes the notebook: it injects the
parameters, keeps its per-cell metadata and raises ``PapermillExecutionError`` for a failing cell; this
engine only replaces *where* the cells run (papermill's documented engine extension point).

The shell is the same IPython machinery a kernel uses, so ``display()`` produces the same mime bundles
and metadata and the page is byte-identical to the one a kernel produces (tested). What a kernel gives
and this does not: isolation of the cells from the caller. That is why it is used only when no other
IPython shell lives in this process (``available()``): inside Jupyter, ``reportgen.pipeline.generate``
falls back to a kernel process, so the user's own shell is never touched.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
import traceback
import types

ENGINE_NAME = "reportgen-in-process"
# What ipykernel reports for Python (papermill stores it in the executed notebook's metadata).
LANGUAGE_INFO = {"name": "python", "mimetype": "text/x-python", "file_extension": ".py",
                 "codemirror_mode": {"name": "ipython", "version": 3}, "pygments_lexer": "ipython3",
                 "nbconvert_exporter": "python"}
_LOCK = threading.Lock()  # one shell per process: notebooks run one at a time


def available() -> bool:
    """True unless another IPython shell (a Jupyter kernel, an IPython session) lives in this process."""
    module = sys.modules.get("IPython.core.interactiveshell")
    if module is None:  # IPython not even imported: no shell here (and no import on the engine's time)
        return True
    shell = module.InteractiveShell
    return not shell.initialized() or isinstance(shell.instance(), _shell_class())


def register() -> None:
    """Make ``engine_name=ENGINE_NAME`` known to papermill (imported by then, see ``render.html``)."""
    from papermill.engines import papermill_engines

    papermill_engines.register(ENGINE_NAME, _engine_class())


def warm_up() -> None:
    """Set up this process's shell before the first run (IPython's shell and its completer: ~30 ms that
    the first notebook would otherwise wait for)."""
    if available():
        with _LOCK:
            _shell()


def _new_output(kind: str, **fields):
    from nbformat.v4 import new_output

    return new_output(kind, **fields)


_CLASSES: dict = {}
_DEFINING = threading.Lock()  # the classes are made once, also when two threads ask at the same time


def _shell_class():
    """The IPython shell whose display publisher and display hook collect outputs instead of printing."""
    with _DEFINING:
        if "shell" not in _CLASSES:
            _CLASSES["shell"] = _define_shell_class()
        return _CLASSES["shell"]


def _define_shell_class():
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets import Type

    class CollectingPublisher(DisplayPublisher):
        """``display()``: one display_data output per call, in the running cell's outputs."""

        outputs: list = []

        def publish(self, data, metadata=None, source=None, *, transient=None, update=False):
            self.outputs.append(_new_output("display_data", data=data, metadata=metadata or {}))

        def clear_output(self, wait=False):
            self.outputs.clear()

    class CollectingHook(DisplayHook):
        """A cell's last expression: its execute_result output."""

        outputs: list = []
        count = 0

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            self.outputs.append(_new_output("execute_result", data=format_dict, metadata=md_dict or {},
                                            execution_count=self.count))

        def finish_displayhook(self):
            pass

        def flush(self):
            """What ``shell.reset()`` asks of the hook (drop the output cache), without IPython's ``gc.collect()``:
            40 ms at the end of every run; the notebook's objects go by reference counting."""
            cached = self.shell.user_ns.get("_oh")
            if cached is not None:
                cached.clear()
            self._, self.__, self.___ = "", "", ""

    class CollectingShell(InteractiveShell):
        display_pub_class = Type(CollectingPublisher)
        displayhook_class = Type(CollectingHook)

        def init_completer(self):
            """No tab completion: the cells are run, never typed (IPython's completer, its module and its hooks: ~5
            of the shell's ~12 CPU ms)."""
            self.Completer = None

    return CollectingShell


def _shell():
    """This process's collecting shell, its namespace emptied (a run never sees the previous run's names)."""
    from traitlets.config import Config

    cls = _shell_class()
    if cls.initialized():
        shell = cls.instance()
        shell.reset(new_session=False)
        return shell
    config = Config()
    config.HistoryManager.enabled = False  # no history database in the user's IPython folder
    # A module of its own: the default would replace sys.modules["__main__"] for the rest of the process.
    return cls.instance(config=config, user_module=types.ModuleType("reportgen_notebook"))


def _run_cell(shell, source: str, count: int, passthrough: bool = False) -> tuple[list, BaseException | None]:
    """(outputs, the exception the cell raised) — printed text becomes stream outputs, as in a kernel.
    ``passthrough`` (``generate --debug``): the cells keep this process's standard streams, so ``breakpoint()``
    in a section builder talks to the terminal; the failing cell's traceback is left to the caller."""
    outputs: list = []
    shell.display_pub.outputs = outputs
    shell.displayhook.outputs = outputs
    shell.displayhook.count = count
    out, err = io.StringIO(), io.StringIO()
    if passthrough:
        shell.showtraceback = lambda *args, **kwargs: None  # the run prints it once, on stderr
        try:
            result = shell.run_cell(source, store_history=False, silent=False)
        finally:
            del shell.showtraceback
    else:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result = shell.run_cell(source, store_history=False, silent=False)
    error = result.error_before_exec or result.error_in_exec
    if isinstance(error, KeyboardInterrupt):  # IPython catches Ctrl-C inside a cell: the run must still end
        raise error
    streams = [_new_output("stream", name=name, text=text.getvalue()) for name, text in (("stdout", out), ("stderr", err))
               if text.getvalue()]
    if error is not None:
        outputs.append(_new_output("error", ename=type(error).__name__, evalue=str(error),
                                   traceback=traceback.format_exception(type(error), error, error.__traceback__)))
    return streams + outputs, error


def _engine_class():
    with _DEFINING:
        if "engine" not in _CLASSES:
            _CLASSES["engine"] = _define_engine_class()
        return _CLASSES["engine"]


def _define_engine_class():
    from papermill.engines import Engine

    class InProcessEngine(Engine):
        """Runs the code cells one after the other on this process's collecting shell; stops at the first
        failing cell (papermill then raises ``PapermillExecutionError`` for it)."""

        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, passthrough=False, **kwargs):
            with _LOCK:
                shell = _shell()
                count = 0
                for index, cell in enumerate(nb_man.nb.cells):
                    if cell.cell_type != "code":
                        continue
                    count += 1
                    nb_man.cell_start(cell, index)
                    try:
                        cell.outputs, error = _run_cell(shell, cell.source, count, passthrough)
                        cell.execution_count = count
                        if error is not None:
                            nb_man.cell_exception(cell, cell_index=index, exception=error)
                            break
                    finally:
                        nb_man.cell_complete(cell, cell_index=index)
                shell.reset(new_session=False)  # the notebook's objects go with the run
            nb_man.nb.metadata["language_info"] = dict(LANGUAGE_INFO)

    return InProcessEngine
