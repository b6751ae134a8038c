"""Run the notebook's kernel on the interpreter that runs reportgen.

A user's machine may have another "python3" kernelspec registered (a system Jupyter,
conda, ...); papermill would then run the notebook somewhere reportgen is not installed.
This kernel manager ignores kernelspecs and launches ipykernel with ``sys.executable``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool

KERNEL_NAME = "reportgen-python"


def _pythonpath() -> str:
    """Make the kernel import the very reportgen that is running (also from a source checkout)."""
    here = str(Path(__file__).resolve().parents[2])
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join([here, *[str(Path(p).resolve()) for p in rest]])


# What the report notebook imports first: run by a kernel started ahead of time (``warm_imports``) while it
# waits for its first cell.
WARM_IMPORTS = "import reportgen.notebook, IPython.display"


class ThisPythonKernelManager(AsyncKernelManager):
    """An ipykernel on this interpreter; its stderr (startup chatter) is discarded."""

    warm_imports = Bool(False, help="import the notebook's modules at kernel start-up").tag(config=True)

    @property
    def kernel_spec(self) -> KernelSpec:
        warm = [f"--IPKernelApp.exec_lines={WARM_IMPORTS}"] if self.warm_imports else []
        return KernelSpec(
            argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}", *warm],
            display_name="Python (reportgen)",
            language="python",
            resource_dir="",
            env={"PYDEVD_DISABLE_FILE_VALIDATION": "1", "PYTHONPATH": _pythonpath()},
        )

    async def start_kernel(self, **kwargs):  # type: ignore[override]
        kwargs.setdefault("stderr", subprocess.DEVNULL)
        return await super().start_kernel(**kwargs)
