"""Report section ids are spelled as ``SectionId`` members in reportgen/ (issue #31, item 3); after a merge that
brings new literals, ``python scripts/section_id_literals.py`` rewrites them."""

from __future__ import annotations

import importlib.util

from tests.support.paths import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("section_id_literals", ROOT / "scripts" / "section_id_literals.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_section_id_is_spelled_as_a_literal():
    script = _script()
    left = [(p.relative_to(ROOT).as_posix(), line, value)
            for p in script.modules() for line, value in script.literals(p)]
    assert left == [], "run python scripts/section_id_literals.py"


def test_the_rewrite_turns_a_literal_into_its_member_and_imports_it(tmp_path):
    script = _script()
    module = tmp_path / "planted.py"
    module.write_text('"""A "gpu-memory" in a docstring stays."""\n\nfrom __future__ import annotations\n\n'
                      'from reportgen.report.model import (Section,\n    Text)\n\n\n'
                      'def build():\n    # "batch-size" in a comment stays\n'
                      '    return Section("gpu-memory", "GPU memory"), {"cost": 1}, "data-quality"\n',
                      encoding="utf-8")
    assert [v for _, v in script.literals(module)] == ["gpu-memory", "data-quality"]
    assert script.rewrite(module) == 2
    text = module.read_text(encoding="utf-8")
    assert 'return Section(SectionId.GPU_MEMORY, "GPU memory"), {"cost": 1}, SectionId.DATA_QUALITY' in text
    assert '    Text)\nfrom reportgen.section_ids import SectionId\n' in text
    assert '"""A "gpu-memory" in a docstring stays."""' in text and '# "batch-size" in a comment stays' in text
    compile(text, str(module), "exec")
    assert script.literals(module) == []
