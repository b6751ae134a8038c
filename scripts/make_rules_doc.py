#!/usr/bin/env python
"""(Re)write the rule table of docs/rules.md from the rulebook (``reportgen/rulebook.py``).

    python scripts/make_rules_doc.py [--check]

``--check`` exits 1 when docs/rules.md is not what the rulebook gives (tests/e2e/test_rules_doc.py runs it).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reportgen.rulebook import RULES  # noqa: E402

DOC = ROOT / "docs" / "rules.md"
HEAD = """# The rules

Generated from `reportgen/rulebook.py` by `scripts/make_rules_doc.py` (do not edit by hand; a test
checks it is current). The order is SageMaker's evaluation order. *Lane*: the engine runs the rules
in two threads; `events` rules build big temporaries from the framework event table and run one
after another. *Summary*: the rule only summarises (never triggers) and is not listed in the rules
summary table. How to add a rule: [adding-a-rule.md](adding-a-rule.md).

| # | rule | module (`reportgen/engine/rules/`) | parameters (`reportgen/engine/params.py`) | lane | summary | what it checks | what to do when it fires |
|---:|---|---|---|---|---|---|---|
"""


def render() -> str:
    rows = [f"| {i} | {r.name} | `{r.module}.py` | `{r.params}` | {r.lane} | {'yes' if r.summary_only else ''} "
            f"| {r.description or ''} | {r.recommendation or ''} |" for i, r in enumerate(RULES, 1)]
    return HEAD + "\n".join(rows) + "\n"


def main() -> int:
    text = render()
    if "--check" in sys.argv[1:]:
        current = DOC.read_text() if DOC.exists() else ""
        if current != text:
            print(f"{DOC.relative_to(ROOT)} is not current: run python scripts/make_rules_doc.py")
            return 1
        return 0
    DOC.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
