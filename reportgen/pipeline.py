"""``generate``: source -> rule outputs -> executed notebook -> one standalone HTML file.

Each stage lives in its own module; this one only wires them and keeps the run atomic:
everything is produced in a private work folder and moved into place at the end.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from reportgen.errors import InputError
from reportgen.render.html import execute_notebook, notebook_to_html, write_atomically
from reportgen.rule_outputs import find_rule_output_dir, load_rule_outputs

Progress = Callable[[str], None]


@dataclass
class GenerateResult:
    html_path: Path
    json_path: Path
    html_bytes: int
    seconds: float
    rule_output_dir: Path
    notes: list[str] = field(default_factory=list)


def _silent(_: str) -> None:
    pass


def resolve_local(source: str) -> Path:
    """A local folder that holds rule outputs (SageMaker's ProfilerReport output or ours)."""
    folder = Path(source).expanduser()
    if not folder.exists():
        raise InputError(f"{source}: no such file or folder")
    if not folder.is_dir():
        raise InputError(f"{source}: not a folder (give the folder that holds profiler-reports/)")
    rule_dir = find_rule_output_dir(folder)
    if rule_dir is None:
        raise InputError(f"{source}: no rule outputs found (expected profiler-reports/*.json, e.g. "
                         "LowGPUUtilization.json)")
    return rule_dir


def _check_writable(path: Path) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if parent.exists() and not parent.is_dir():
        raise InputError(f"{path}: the output folder {parent} is a file")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=parent, prefix=".reportgen-probe-", delete=True)
        probe.close()
    except OSError as err:
        raise InputError(f"{path}: cannot write to {parent} ({err.strerror or err})") from None


def generate(source: str, output: Path, *, job_name: str = "", json_path: Path | None = None,
             keep_notebook: Path | None = None, progress: Progress = _silent) -> GenerateResult:
    started = time.perf_counter()
    output = Path(output)
    json_path = Path(json_path) if json_path else output.with_suffix(".json")
    _check_writable(output)
    rule_dir = resolve_local(source)
    # Read once here so bad input fails fast with a one-line error, before the notebook starts.
    outputs = load_rule_outputs(rule_dir)
    progress(f"rule outputs: {rule_dir} ({len(outputs.rules)} rules)")
    with tempfile.TemporaryDirectory(prefix=".reportgen-", dir=output.parent or ".") as work:
        work_dir = Path(work)
        executed = work_dir / "report.ipynb"
        progress("executing the analysis notebook")
        execute_notebook({"source": str(rule_dir.resolve()), "output_dir": str(work_dir),
                          "job_name": job_name, "standalone": True, "notes": []}, executed)
        progress("converting to HTML")
        html = notebook_to_html(executed)
        write_atomically(output, html)
        produced_json = work_dir / "report.json"
        if produced_json.is_file():
            shutil.move(str(produced_json), str(json_path))
        if keep_notebook:
            shutil.copyfile(executed, keep_notebook)
    seconds = time.perf_counter() - started
    return GenerateResult(output, json_path, len(html.encode("utf-8")), seconds, rule_dir)
