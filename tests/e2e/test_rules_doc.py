"""docs/rules.md is what the rulebook makes (``scripts/make_rules_doc.py --check`` in a child process)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT


def test_docs_rule_table_is_current():
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_rules_doc.py"), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout
