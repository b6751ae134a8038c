"""Locate the bundled notebook and templates, in a wheel install or a source checkout."""

from __future__ import annotations

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


def template_dir() -> Path:
    return bundled("templates")


# Trace types in the vendored plotly.js partial bundle (see reportgen/vendor/README.md).
PLOTLY_TRACES = frozenset({"bar", "box", "contour", "heatmap", "histogram", "histogram2d", "histogram2dcontour",
                           "image", "pie", "scatter", "scatterternary", "violin"})


def plotly_js() -> str:
    """plotly.js, inlined once per report (no CDN): the vendored cartesian bundle, 1.5 MB."""
    return (_PACKAGE / "vendor" / "plotly-cartesian.min.js").read_text(encoding="utf-8")
