"""What the comparison notebook calls: build both sides and the comparison, display each section."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

from reportgen.errors import expanduser
from reportgen import __version__
from reportgen.atomic import write_text_atomic
from reportgen.compare.batch import BatchSize
from reportgen.compare.build import build_comparison
from reportgen.compare.side import load_side
from reportgen.compare.output import compare_data
from reportgen.cost import load_prices
from reportgen.notebook import ReportSession
from reportgen.render.blocks import environment
from reportgen.rule_outputs import find_rule_output_dir


class ComparisonSession(ReportSession):
    def __init__(self, report, a, b, standalone: bool):
        super().__init__(report, standalone)
        self.a, self.b = a, b

    def header(self) -> None:
        html = environment().get_template("compare_header.html.j2").render(
            a=self.a, b=self.b, generated_at=self.generated_at, version=__version__)
        self._display(html, {"role": "header", "job_name": self.report.job_name, "generated_at": self.generated_at,
                             "version": __version__, "kicker": "Comparison"})

    def data(self) -> dict:
        return compare_data(self.report, self.a.meta(), self.b.meta(), self.generated_at)

    def save_json(self, output_dir: str | os.PathLike) -> Path:
        folder = Path(output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "compare.json"
        write_text_atomic(target, json.dumps(self.data(), indent=1, allow_nan=False))
        return target


def _rule_dir(source: str) -> Path:
    """A ready rule-output folder as is; any other source (raw data, s3://, ARN) prepared as ``open_report`` does."""
    folder = expanduser(source)
    found = find_rule_output_dir(folder) if folder.is_dir() else None
    if found is not None:
        return found
    from reportgen.pipeline import prepare_rule_outputs

    work = Path(tempfile.mkdtemp(prefix="reportgen-notebook-"))
    atexit.register(shutil.rmtree, work, True)
    return prepare_rule_outputs(str(source), work).rule_dir


def _side(label: str, spec: dict):
    return load_side(label, _rule_dir(spec["rule_dir"]), name=spec.get("name", ""), source=spec.get("source", ""),
                     description=spec.get("description", ""), instance_type=spec.get("instance_type"),
                     instance_count=spec.get("instance_count"), instance_from=spec.get("instance_from", ""),
                     region=spec.get("region"), notes=spec.get("notes"), batch=BatchSize.of_spec(spec.get("batch")))


def open_comparison(a: dict, b: dict, prices_file: str = "", standalone: bool = False,
                    force: bool = False) -> ComparisonSession:
    """``a``/``b``: ``{"rule_dir": <rule outputs or any source>, "name", "source", "description", "instance_type", "instance_count",
    "instance_from", "region", "notes", "batch"}`` (only ``rule_dir`` is required). ``force``: a verdict even for runs
    found unrelated."""
    side_a, side_b = _side("A", a), _side("B", b)
    report = build_comparison(side_a, side_b, load_prices(prices_file or None), force)
    return ComparisonSession(report, side_a, side_b, standalone)
