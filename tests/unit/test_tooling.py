"""The linter and the type checker stay wired: installed by the test extra, run by .ci/run before the tests,
and the modules its config names still exist (a renamed module would silently leave the strict list)."""

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, a dependency there
    import tomli as tomllib

from tests.support.paths import ROOT


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_test_extra_installs_ruff_and_mypy():
    extra = _pyproject()["project"]["optional-dependencies"]["test"]
    names = {req.split(">")[0].split("=")[0].split(";")[0].strip() for req in extra}
    assert {"ruff", "mypy"} <= names


def _lines(*path: str) -> list[str]:
    return [line.strip() for line in ROOT.joinpath(*path).read_text(encoding="utf-8").splitlines()]


def test_ci_runs_the_linter_and_the_type_checker_before_the_first_test():
    lines = _lines(".ci", "run")
    ruff, mypy = lines.index(".venv/bin/ruff check reportgen tests"), lines.index(".venv/bin/mypy")
    first_test = lines.index("bash scripts/test.sh")
    assert lines.index("bash scripts/setup.sh --test") < ruff < first_test and mypy < first_test
    assert not any(line.startswith(".venv/bin/python -m pytest") for line in lines)  # the tests: only through it


def test_ci_runs_the_readmes_test_command_which_runs_every_lane_once_over_the_cores():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup, tests = "bash scripts/setup.sh --test", "bash scripts/test.sh"
    assert f"```bash\n{setup} && {tests}\n```" in readme
    ci = _lines(".ci", "run")
    assert ci.index(setup) < ci.index(tests)
    runs = [line for line in _lines("scripts", "test.sh") if line.startswith(".venv/bin/python -m pytest")]
    assert runs == [".venv/bin/python -m pytest tests/unit -n auto --dist loadfile",
                    '.venv/bin/python -m pytest -m "not unit" -n auto --dist loadfile']
    extra = _pyproject()["project"]["optional-dependencies"]["test"]
    assert any(req.startswith("pytest-xdist") for req in extra)  # what -n needs


def test_every_module_the_type_checker_config_names_is_a_module_of_the_package():
    overrides = _pyproject()["tool"]["mypy"]["overrides"]
    strict = [o for o in overrides if o.get("disallow_untyped_defs")]
    assert len(strict) == 1 and {"reportgen.json_file", "reportgen.report.views"} <= set(strict[0]["module"])
    for module in (name for override in overrides for name in override["module"]):
        path = ROOT / (module.replace(".", "/") + ".py")
        assert path.is_file() or (ROOT / module.replace(".", "/") / "__init__.py").is_file(), module
