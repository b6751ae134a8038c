"""Every relative link in the project's Markdown (README.md, docs/, benchmarks/) reaches a file, and every
``#anchor`` a heading of that file, as GitHub names headings: moving a section (benchmarks/README.md's
journals went to HISTORY.md in issue 51) must not leave a link behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text without links' targets and emphasis marks, lower case, every
    character but letters, digits, ``_``, ``-`` and spaces dropped, spaces made ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[`*]", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings; a repeated one gets ``-1``, ``-2``... as on GitHub."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match:
            name = slug(match.group(2))
            count = seen.get(name, 0)
            seen[name] = count + 1
            found.add(name if count == 0 else f"{name}-{count}")
    return found


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "benchmarks").rglob("*.md"))]


def test_slug_is_githubs():
    assert slug("Today's figures") == "todays-figures"
    assert slug("Warm re-runs: the trace cache (bench_trace_cache.py, issue 51)") == \
        "warm-re-runs-the-trace-cache-bench_trace_cachepy-issue-51"
    assert slug("`--scheduler local:2` on copies") == "--scheduler-local2-on-copies"
    assert slug("End-to-end `reportgen generate` (target: median ≤ 5 s)") == "end-to-end-reportgen-generate-target-median--5-s"


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path):
    broken = []
    cache: dict[Path, set[str]] = {}
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for match in LINK.finditer(line):
            target = match.group(1)
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{number}: {target} (no such file)")
            elif anchor and dest.suffix == ".md":
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if anchor not in cache[dest]:
                    broken.append(f"{number}: {target} (no such heading)")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)
