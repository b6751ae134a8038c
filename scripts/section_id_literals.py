"""Spell report section ids as ``SectionId`` members, never as string literals, in ``reportgen/``.

    python scripts/section_id_literals.py          # rewrite: a literal "gpu-memory" -> SectionId.GPU_MEMORY
    python scripts/section_id_literals.py --check  # list the literals left (exit 1 if any)

Replayable: after a merge brings new literals, run it again (tests/unit/test_section_id_literals.py fails
until then). A ``SectionId`` is a ``str`` enum, so the rewrite moves no output byte. Not rewritten:
``"cost"`` (also a dict key everywhere: its few section uses were converted by hand), comments, and
the comparison page's own section ids (``compare/build.py``'s ``SECTION_IDS``, a vocabulary of its own).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reportgen.section_ids import SectionId  # noqa: E402  (this checkout's, after the path is set)

NAMES = {s.value: s.name for s in SectionId if s.value != "cost"}
LITERAL = re.compile(r'"(%s)"' % "|".join(re.escape(v) for v in NAMES))
SKIP_FILES = {"reportgen/section_ids.py", "reportgen/compare/build.py"}
# the comparison page's own "data-quality" section (compare/sections/data_quality.py) is not the report's
SKIP_LINES = ('Section("data-quality", "Data quality")',)
IMPORT = "from reportgen.section_ids import SectionId"


def _code_lines(text: str):
    """(index, line) of the lines outside docstrings and comments."""
    in_doc = False
    for index, line in enumerate(text.split("\n")):
        stripped = line.strip()
        quotes = stripped.count('"""')
        if in_doc:
            in_doc = quotes % 2 == 0
            continue
        if stripped.startswith('"""') or (quotes % 2 == 1):
            in_doc = quotes % 2 == 1
            continue
        if stripped.startswith("#") or any(skip in line for skip in SKIP_LINES):
            continue
        yield index, line


def literals(path: Path) -> list[tuple[int, str]]:
    """(line number, id) of every section id spelled as a literal in one module."""
    found = []
    for index, line in _code_lines(path.read_text(encoding="utf-8")):
        code = line.split("  #", 1)[0]
        found += [(index + 1, m.group(1)) for m in LITERAL.finditer(code)]
    return found


def modules() -> list[Path]:
    return [p for p in sorted((ROOT / "reportgen").rglob("*.py"))
            if p.relative_to(ROOT).as_posix() not in SKIP_FILES]


def rewrite(path: Path) -> int:
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    count = 0
    for index, line in _code_lines(text):
        code, sep, comment = line.partition("  #")
        new, n = LITERAL.subn(lambda m: f"SectionId.{NAMES[m.group(1)]}", code)
        if n:
            lines[index], count = new + sep + comment, count + n
    if count and IMPORT not in lines:
        last = max(i for i, line in enumerate(lines[:200]) if line.startswith(("import ", "from "))
                   and not line.startswith("from __future__"))
        if lines[last].count("(") > lines[last].count(")"):  # a parenthesised import: after its closing line
            while ")" not in lines[last]:
                last += 1
        lines.insert(last + 1, IMPORT)
    if count:
        path.write_text("\n".join(lines), encoding="utf-8")
    return count


def main(argv: list[str]) -> int:
    if "--check" in argv:
        left = [(p.relative_to(ROOT).as_posix(), n, v) for p in modules() for n, v in literals(p)]
        for file, line, value in left:
            print(f"{file}:{line}: \"{value}\" -> SectionId.{NAMES[value]}")
        return 1 if left else 0
    total = sum(rewrite(p) for p in modules())
    print(f"{total} literals rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
