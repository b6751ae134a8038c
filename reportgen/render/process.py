"""The page is made by a second process that gets ready while the engine runs.

Executing the analysis notebook (papermill) and converting it (nbconvert) first costs their imports —
papermill, IPython, nbconvert, the report builders: about as much CPU as the engine itself on
``sample_data``. ``NotebookProcess`` starts ``python -m reportgen.render.worker`` before the engine
runs; the worker does those imports on another core (a process of its own: no lock or import order is
shared with the engine's thread), then waits for one request. When the rule outputs are ready,
``render`` sends the notebook's parameters; the worker runs the notebook in its own process
(``render.inprocess``), converts it and writes the page (and, when asked, the executed notebook) into
the run's work folder. ``benchmarks/HISTORY.md`` ("The notebook path") has the measurements.

Where a second process cannot help (one usable CPU), cannot start, or dies before its answer, the same
work runs here (``render.html.render_page``): the result is the same page either way (tested).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from reportgen.errors import InputError, RenderError
from reportgen.render.html import Page, render_page
from reportgen.render.worker import TEMPLATE_CACHE_OPTION
from reportgen.resources import reportgen_pythonpath

REQUEST_VERSION = 1


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class NotebookProcess:
    """The worker process of one run (see the module docstring); ``close()`` ends it in every case."""

    def __init__(self, work_dir: Path, notice=None, in_process: bool = False, template_folder: Path | None = None):
        self.notice = notice or (lambda message: None)  # progress lines of the run (a worker that died)
        self.work_dir = Path(work_dir).resolve()
        self.process: subprocess.Popen | None = None
        self.stderr_path = self.work_dir / "notebook-worker.stderr"
        # in_process (``generate --debug``): the page is made here, where breakpoint() has the terminal.
        # template_folder: the trace cache's folder, where the worker keeps its templates compiled (None: none)
        if in_process or usable_cpus() < 2 or os.environ.get("REPORTGEN_NOTEBOOK_PROCESS") == "0":
            return
        try:
            with open(self.stderr_path, "wb") as stderr:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "reportgen.render.worker",
                     *([TEMPLATE_CACHE_OPTION, str(template_folder)] if template_folder is not None else [])],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=stderr, cwd=self.work_dir, env={**os.environ, "PYTHONPATH": reportgen_pythonpath()})
        except OSError:  # cannot fork or exec here (a locked-down container): the page is made in this process
            self.process = None

    def __enter__(self) -> NotebookProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def render(self, parameters: dict, notebook: Path | None = None, keep_notebook: bool = False,
               generated_at: str | None = None) -> Page:
        """Execute the notebook with ``parameters`` and convert it; errors as ``render.html.execute_notebook``
        raises them (an ``InputError`` from the notebook stays one, anything else is a ``RenderError``).
        ``generated_at``: what the report says instead of its time (``render.page_cache``'s placeholder)."""
        from reportgen.render.page_cache import fixed_generation_time

        if self.process is None:
            with fixed_generation_time(generated_at):
                return render_page(parameters, notebook=notebook, keep_notebook=keep_notebook)
        html_path, notebook_path = self.work_dir / "page.html", self.work_dir / "executed.ipynb"
        request = {"version": REQUEST_VERSION, "parameters": parameters,
                   "notebook": str(notebook) if notebook else None,
                   "html": str(html_path), "ipynb": str(notebook_path) if keep_notebook else None,
                   "generated_at": generated_at}
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
            self.process.stdin.close()
            reply_line = self.process.stdout.readline()
        except OSError:  # the worker is gone (killed, out of memory)
            reply_line = b""
        try:
            reply = json.loads(reply_line) if reply_line else None
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            # The worker died (killed, out of memory, an interpreter that cannot run ``-m``): its page is made
            # here instead; an error of the notebook itself then surfaces as it would have there.
            code = self.process.wait()
            self.notice(f"the page's worker process ended without a page (exit code {code}"
                        f"{self._stderr_tail()}); making the page in this process")
            with fixed_generation_time(generated_at):
                return render_page(parameters, notebook=notebook, keep_notebook=keep_notebook)
        if reply.get("error") == "input":
            raise InputError(str(reply.get("message")))
        if reply.get("error"):
            raise RenderError(str(reply.get("message")))
        return Page(html_path.read_text(encoding="utf-8"),
                    notebook_path.read_text(encoding="utf-8") if keep_notebook else None)

    def _stderr_tail(self) -> str:
        try:
            lines = self.stderr_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f": {lines[-1][:300]}" if lines else ""

    def close(self) -> None:
        """End the worker in every case: after its answer it exits by itself (``os._exit``, no teardown); one
        that was not needed (the run failed before its page, Ctrl-C) is killed at once rather than waited for
        through its imports."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout):
            try:
                pipe.close()
            except OSError:
                pass
