"""The ``--scheduler`` value read once into a ``Scheduler``, and whether Dask is installed to honour it.

Apart from ``client`` so that the command line checks a value (and says how to install Dask) without
importing anything of Dask.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reportgen.errors import InputError

_LOCAL_RE = re.compile(r"^local(?::(\d+))?$")
_TCP_RE = re.compile(r"^(tcp|tls)://[^\s/:]+:\d{1,5}/?$")
INSTALL_HINT = "pip install 'reportgen[dask]'"


@dataclass(frozen=True)
class Scheduler:
    spec: str
    workers: int | None = None  # local cluster size (None: one per CPU core)
    address: str | None = None  # tcp://host:port of an existing scheduler

    @property
    def local(self) -> bool:
        return self.address is None


def parse_scheduler(spec: str) -> Scheduler:
    """``local``, ``local:N`` or ``tcp://host:port`` (also ``tls://``); anything else is a usage error."""
    text = str(spec).strip()
    m = _LOCAL_RE.match(text)
    if m:
        n = int(m.group(1)) if m.group(1) else None
        if n is not None and not 1 <= n <= 1024:
            raise InputError(f"--scheduler {text}: the number of local workers must be between 1 and 1024")
        return Scheduler(text, workers=n)
    if _TCP_RE.match(text):
        return Scheduler(text, address=text.rstrip("/"))
    raise InputError(f"--scheduler {text!r}: expected local, local:N or tcp://host:port")


def dask_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("dask") is not None and importlib.util.find_spec("distributed") is not None


def check_dask_installed() -> None:
    if not dask_installed():
        raise InputError(f"--scheduler needs Dask, which is not installed: {INSTALL_HINT}")
