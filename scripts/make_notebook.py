"""Regenerate notebooks/profiler_report.ipynb (one cell per report section).

The notebook is committed; this script keeps its cells in step with the section registry.
"""

from pathlib import Path

import nbformat

from reportgen.report.sections import BUILDERS

ROOT = Path(__file__).resolve().parents[1]


def new_notebook(intro: str, parameters: str) -> tuple[nbformat.NotebookNode, list]:
    """A Python notebook with an intro cell and a papermill ``parameters`` cell (shared by both notebooks)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata.language_info = {"name": "python"}
    params = nbformat.v4.new_code_cell(parameters)
    params.metadata["tags"] = ["parameters"]
    return nb, [nbformat.v4.new_markdown_cell(intro), params]


def write(nb: nbformat.NotebookNode, cells: list, path: Path) -> None:
    """Stable cell ids, so regenerating an unchanged notebook changes nothing."""
    for number, cell in enumerate(cells):
        cell.id = f"cell-{number:02d}"
    nb.cells = cells
    nbformat.write(nb, path)


def main() -> None:
    nb, cells = new_notebook(
        "# Profiling report\n\n"
        "The analysis notebook of **reportgen**. `reportgen generate` runs it with papermill; you can also run it "
        "here against any ProfilerReport output folder: set `source` below and run all cells. Every table, text "
        "and chart comes from the `reportgen` package (`reportgen.report`), so this notebook stays thin.",
        "# Parameters (papermill injects new values below this cell)\n"
        "source = \"../sample_data\"  # rule outputs or raw profiler data: a folder, s3:// URI, ARN or job name\n"
        "output_dir = \"\"  # where report.json is written; empty: not written\n"
        "job_name = \"\"  # shown in the header; empty: guessed from the folder\n"
        "standalone = False  # True when rendered to HTML by reportgen (charts drawn by the page)\n"
        "notes = []  # data-quality notes from earlier pipeline stages\n"
        "description = \"\"  # what the source resolved to (shown in the header)\n"
        "incomplete = False  # the job was still running when the data was read\n"
        "source_label = \"\"  # what the user asked for (ARN, s3:// URI, folder); empty: source\n"
        "cost = {}  # instance_type, instance_count, region, prices_file: adds the cost section; empty: none")
    cells.append(nbformat.v4.new_code_cell(
        "from reportgen.notebook import open_report\n\n"
        "report = open_report(source, job_name=job_name, standalone=standalone, notes=notes,\n"
        "                     description=description, incomplete=incomplete, source_label=source_label,\n"
        "                     cost=cost)\n"
        "report.header()"))
    for section_id, _builder in BUILDERS:
        if section_id == "step-duration-analysis":
            cells.append(nbformat.v4.new_code_cell('report.show("training-loop-analysis")'))
        cells.append(nbformat.v4.new_code_cell(f'report.show("{section_id}")'))
        if section_id == "training-job-summary":
            cells.append(nbformat.v4.new_code_cell('if cost:\n    report.show("cost")'))
    cells.append(nbformat.v4.new_code_cell('report.show("data-quality")'))
    cells.append(nbformat.v4.new_code_cell("if output_dir:\n    report.save_json(output_dir)"))
    write(nb, cells, ROOT / "notebooks" / "profiler_report.ipynb")


if __name__ == "__main__":
    main()
