"""Regenerate notebooks/compare_report.ipynb (one cell per comparison section).

The notebook is committed; this script keeps its cells in step with ``reportgen.compare.build.SECTION_IDS``.
"""

from pathlib import Path

import nbformat

from make_notebook import new_notebook, write  # same folder: scripts/

from reportgen.compare.build import SECTION_IDS

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    nb, cells = new_notebook(
        "# Comparison of two runs\n\n"
        "The comparison notebook of **reportgen**. `reportgen compare A B` runs it with papermill; you can also "
        "run it here: set `a` and `b` below to two rule-output folders (`rule_dir`) and run all cells. Every "
        "table, text and chart comes from `reportgen.compare`, so this notebook stays thin.",
        "# Parameters (papermill injects new values below this cell)\n"
        "a = {\"rule_dir\": \"../sample_data\"}  # run A: rule outputs or any source generate accepts\n"
        "b = {\"rule_dir\": \"../sample_data\"}  # run B\n"
        "# each may also hold: name, source, description, instance_type, instance_count, instance_from, region, notes\n"
        "prices_file = \"\"  # a TOML file of hourly prices laid over the shipped table; empty: shipped table only\n"
        "output_dir = \"\"  # where compare.json is written; empty: not written\n"
        "standalone = False  # True when rendered to HTML by reportgen (charts drawn by the page)\n"
        "force = False  # True: a verdict even for runs the comparability check finds unrelated")
    cells.append(nbformat.v4.new_code_cell(
        "from reportgen.compare.session import open_comparison\n\n"
        "comparison = open_comparison(a, b, prices_file=prices_file, standalone=standalone, force=force)\n"
        "comparison.header()"))
    for section_id in SECTION_IDS:
        cells.append(nbformat.v4.new_code_cell(f'comparison.show("{section_id}")'))
    cells.append(nbformat.v4.new_code_cell("if output_dir:\n    comparison.save_json(output_dir)"))
    write(nb, cells, ROOT / "notebooks" / "compare_report.ipynb")


if __name__ == "__main__":
    main()
