"""Run the notebook's kernel on the interpreter that runs reportgen.

Used only where the notebook cannot run in-process (``render.html.execute_notebook`` called inside
another IPython shell, e.g. from Jupyter). A user's machine may have another "python3" kernelspec registered (a system Jupyter,
conda, ...); papermill would then run the notebook somewhere reportgen is not installed.
This kernel manager ignores kernelspecs and launches ipykernel with ``sys.executable``.
"""

from __future__ import annotations

import subprocess
import sys

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager

from reportgen.resources import reportgen_pythonpath


class ThisPythonKernelManager(AsyncKernelManager):
    """An ipykernel on this interpreter; its stderr (startup chatter) is discarded."""

    @property
    def kernel_spec(self) -> KernelSpec:
        return KernelSpec(
            argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            display_name="Python (reportgen)",
            language="python",
            resource_dir="",
            env={"PYDEVD_DISABLE_FILE_VALIDATION": "1", "PYTHONPATH": reportgen_pythonpath()},
        )

    async def start_kernel(self, **kwargs):  # type: ignore[override]
        kwargs.setdefault("stderr", subprocess.DEVNULL)
        return await super().start_kernel(**kwargs)
