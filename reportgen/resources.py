"""Locate the bundled notebook and templates, in a wheel install or a source checkout."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def bundled(name: str) -> Path:
    """``notebooks`` or ``templates``: inside the package when installed, else the repo root."""
    for candidate in (_PACKAGE / "_bundled" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"reportgen installation is incomplete: no {name}/ folder found")


def notebook_path() -> Path:
    return bundled("notebooks") / "profiler_report.ipynb"


def compare_notebook_path() -> Path:
    return bundled("notebooks") / "compare_report.ipynb"


def sample_data_dir() -> Path:
    """The notebook's default source: ``sample_data/`` seen from where a user runs it (the repository root or
    ``notebooks/``), else beside this source checkout. A wheel does not carry it: give ``source`` there."""
    for candidate in (Path("sample_data"), Path("..") / "sample_data", _PACKAGE.parent / "sample_data"):
        if candidate.is_dir():
            return candidate.resolve()
    raise FileNotFoundError("no sample_data/ folder here, in the parent folder or beside reportgen: set the "
                            "notebook's source parameter (papermill ... -p source <folder>)")


def template_dir() -> Path:
    return bundled("templates")


# Trace types in the vendored plotly.js bundle, built with only these (scripts/build_plotly.sh,
# reportgen/vendor/README.md): a chart of another type would draw nothing.
PLOTLY_TRACES = frozenset({"bar", "box", "heatmap", "pie", "scatter"})


def plotly_js_gzip() -> bytes:
    """plotly.js as shipped: the vendored bundle of the report's trace types, gzip'd (0.44 MB; 1.32 MB
    inflated). The page inlines it once, in base64, and the browser inflates it: no CDN, no request."""
    return (_PACKAGE / "vendor" / "plotly-reportgen.min.js.gz").read_bytes()


def plotly_js() -> str:
    """plotly.js itself (for a page or notebook that wants the script as text)."""
    return gzip.decompress(plotly_js_gzip()).decode("utf-8")


def reportgen_pythonpath() -> str:
    """PYTHONPATH for a child process (the notebook's worker or kernel) that must import the very reportgen
    that is running, also from a source checkout: its folder first, then the caller's PYTHONPATH."""
    here = str(Path(__file__).resolve().parents[1])
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join([here, *[str(Path(p).resolve()) for p in rest]])
