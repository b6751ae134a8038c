"""The README's screenshot of At a glance (docs/at-a-glance.png) shows the report `generate sample_data` makes
today: its alt text's findings and the contents list the picture shows are checked against a fresh report.
When this fails, retake the picture (1400x900, the top of the page) and update both."""

from __future__ import annotations

import json
import re

from reportgen.pipeline import generate
from tests.support.paths import ROOT

# The contents list in docs/at-a-glance.png, as the picture shows it.
PICTURED_CONTENTS = [
    "Training job summary", "System usage statistics", "Node utilization over time", "Framework metrics summary",
    "Overview: CPU operators", "Overview: GPU operators", "Rules summary", "Analyzing the training loop",
    "Step duration analysis", "GPU utilization analysis", "Workload balancing", "Dataloading analysis",
    "Batch size", "CPU bottlenecks", "I/O bottlenecks", "GPU memory", "Initialization time", "Data quality",
    "Legal notice"]


def test_readme_screenshot_shows_the_current_report(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (alt,) = re.findall(r"!\[([^\]]*)\]\(docs/at-a-glance\.png\)", readme)
    alt = " ".join(alt.split())
    result = generate(str(ROOT / "sample_data"), tmp_path / "report.html")
    diagnosis = json.loads(result.json_path.read_text())["diagnosis"]
    assert diagnosis["status"] == "problems" and alt.startswith("At a glance on sample_data: problems found")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    start = html.index('id="at-a-glance"')
    glance = " ".join(re.sub(r"<[^>]+>", " ", html[start:html.index("</section>", start)]).split())
    first, second, third = diagnosis["findings"][:3]
    assert (first["cause"], second["cause"], third["cause"]) == ("input-pipeline", "step-outliers", "gpu-memory-growth")
    impacts = re.findall(r"about [^(]+\(\d+ % of the job\)", alt)
    assert len(impacts) == 2 and all(impact in glance for impact in impacts), (impacts, glance[:600])
    assert first["fix"].split(". ")[0].removeprefix("The cores are the limit: ") in alt
    # GPUMemoryUtilization is memory-controller activity, never shown as how full the GPU is (issue 48)
    peak = f"peak memory-controller activity {third['metrics']['peak_activity_pct']:.0f} %"
    assert "peak_pct" not in third["metrics"] and peak in alt and peak in glance
    nav = html[html.index("<nav"):html.index("</nav>")]
    assert [re.sub(r"<[^>]+>", "", a).strip() for a in re.findall(r"<a [^>]*>.*?</a>", nav)] == PICTURED_CONTENTS
