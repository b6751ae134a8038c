"""The package's import graph: no cycle (module-level or lazy imports inside functions), no arrow
from a lower layer up, no private name used across modules. docs/architecture.md draws the layers."""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path
from tests.support.paths import ROOT

PACKAGE = ROOT / "reportgen"

# Low to high. A module may import from its own layer or any lower one. The first parts of a
# module's dotted name (``reportgen.X``) decide its layer.
LAYERS = (
    {"reportgen", "errors", "problems", "atomic", "formatting", "terminal_text", "locking", "resources", "rulebook", "cost",
     "output_set", "workdir", "json_file", "interrupts", "section_ids", "notebook_parameters", "blas_threads",
     "garbage_collector", "environment", "user_file", "json_values", "intervals", "job_processes", "job_usage",
     "thread_usage",
     "kept_file", "command_flags"},
    {"traces", "sources", "cluster"},  # every trace file's reading; where inputs are and how they are laid out;
    # where --scheduler's tasks run (below the readers: the cluster knows nothing of what a task reads)
    {"readers"},  # raw profiler data -> tables
    {"engine"},  # tables -> rule outputs
    {"trace_analysis", "rule_outputs", "trace_ranks", "trace_gpu_analysis", "timeline_view", "diagnosis"},  # the trace model -> its analysis; rule outputs loaded and judged
    {"report"},  # rule outputs -> the renderer-neutral report model
    {"render", "ci_outputs", "recorder"},
    {"pipeline", "notebook"},
    {"compare"},
    {"cli", "__main__"},
)


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    """Each module parsed once for this file's tests (four walks over every module; read, never changed)."""
    return ast.parse(path.read_text())


def _owner(name: str) -> str:
    """The module a dotted import target lives in (``reportgen.a.b.func`` -> ``reportgen.a.b``)."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


@functools.lru_cache(maxsize=None)
def _imports() -> tuple:
    """(importer, imported module, names imported, lazy) for every import of a reportgen module: walked once
    for this file's three tests."""
    return tuple(_each_import())


def _each_import():
    for name, path in MODULES.items():
        tree = _tree(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        lazy_nodes = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                      for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("reportgen"):
                        yield name, _owner(alias.name), [], id(node) in lazy_nodes
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                if not base.startswith("reportgen"):
                    continue
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    if target in MODULES:  # a submodule
                        yield name, target, [], id(node) in lazy_nodes
                    else:
                        yield name, _owner(base), [alias.name], id(node) in lazy_nodes


def _layer(module: str) -> int:
    parts = module.split(".")
    key = parts[1] if len(parts) > 1 else "reportgen"
    for i, layer in enumerate(LAYERS):
        if key in layer:
            return i
    raise AssertionError(f"{module}: in no layer of tests/unit/test_architecture.py (add its package)")


def test_no_import_cycle():
    graph = defaultdict(set)
    for importer, imported, _, _ in _imports():
        if imported != importer:
            graph[importer].add(imported)
    cycles, state, stack = [], {}, []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == 1:
                cycles.append(stack[stack.index(v):] + [v])
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(MODULES):
        if u not in state:
            visit(u)
    assert cycles == []


def test_no_arrow_from_a_lower_layer_up():
    upward = sorted({f"{a} -> {b}" for a, b, _, _ in _imports()
                     if a != b and not b.startswith(a + ".") and _layer(b) > _layer(a)})
    assert upward == []


def test_no_private_name_across_modules():
    crossing = sorted({f"{a} imports {b}.{n}" for a, b, names, _ in _imports() for n in names
                       if n.startswith("_") and not n.startswith("__") and a != b})
    # module._name through an imported module object
    for name, path in MODULES.items():
        tree = _tree(path)
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reportgen"):
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in MODULES:
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("reportgen") and alias.asname:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                crossing.append(f"{name} uses {aliases[node.value.id]}.{node.attr}")
    assert crossing == []


def test_the_layers_name_every_package():
    for module in MODULES:
        _layer(module)
