"""Regenerate notebooks/profiler_report.ipynb: one cell per report section, in ``SECTIONS`` order.

The notebook is committed; tests/e2e/test_notebook_path.py fails while it differs from what this script makes.
"""

from pathlib import Path

import nbformat

from reportgen.notebook_parameters import NotebookParameters
from reportgen.report.sections import SECTION_IDS

ROOT = Path(__file__).resolve().parents[1]


def new_notebook(intro: str, parameters: str) -> tuple[nbformat.NotebookNode, list]:
    """A Python notebook with an intro cell and a papermill ``parameters`` cell (shared by both notebooks)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata.language_info = {"name": "python"}
    params = nbformat.v4.new_code_cell(parameters)
    params.metadata["tags"] = ["parameters"]
    return nb, [nbformat.v4.new_markdown_cell(intro), params]


def finish(nb: nbformat.NotebookNode, cells: list) -> nbformat.NotebookNode:
    """Stable cell ids, so regenerating an unchanged notebook changes nothing."""
    for number, cell in enumerate(cells):
        cell.id = f"cell-{number:02d}"
    nb.cells = cells
    return nb


def write(nb: nbformat.NotebookNode, cells: list, path: Path) -> None:
    nbformat.write(finish(nb, cells), path)


def analysis_notebook() -> nbformat.NotebookNode:
    """The analysis notebook as it must be committed."""
    nb, cells = new_notebook(
        "# Profiling report\n\n"
        "The analysis notebook of **reportgen**. `reportgen generate` runs it with papermill; you can also run it "
        "here: set `source` below (or `papermill profiler_report.ipynb out.ipynb -p source <folder>`) and run all "
        "cells. Every table, text and chart comes from the `reportgen` package (`reportgen.report`), so this "
        "notebook stays thin. `report.figures(\"gpu-memory\")` gives a section's charts as plotly figures to "
        "restyle and `.show()`.",
        NotebookParameters.cell_source())
    cells.append(nbformat.v4.new_code_cell(
        "from reportgen.notebook import open_report\n\n" + NotebookParameters.open_report_call() + "\nreport.header()"))
    cells += [nbformat.v4.new_code_cell(f'report.show("{section_id}")') for section_id in SECTION_IDS]
    cells.append(nbformat.v4.new_code_cell("if output_dir:\n    report.save_json(output_dir)"))
    return finish(nb, cells)


NOTEBOOK = ROOT / "notebooks" / "profiler_report.ipynb"


def main() -> None:
    nbformat.write(analysis_notebook(), NOTEBOOK)


if __name__ == "__main__":
    main()
