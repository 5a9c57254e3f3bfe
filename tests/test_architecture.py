"""The package's shape, as docs/architecture.md promises it to the next person who changes it.

- No import cycle between neuron_lint's modules. An import inside a function counts (it runs
  too, only later); an import under ``if TYPE_CHECKING:`` does not (it never runs).
- No module over 450 lines, no class over 250, no function over 100.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "neuron_lint"
MAX_MODULE, MAX_CLASS, MAX_FUNCTION = 450, 250, 100


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.AST):
    """Every import statement that can run, skipping the bodies of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _known(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {t for a in node.names if (t := _known(a.name))}
    base = node.module or ""
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    targets = set()
    for alias in node.names:  # `from . import x` imports the submodule x, not the package
        target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else _known(base)
        if target:
            targets.add(target)
    return targets


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges = set()
        for node in _runtime_imports(tree):
            edges |= _imported(module, path, node)
        edges.discard(module)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle_through_three_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_modules():
    graph = import_graph()
    found = cycles(graph)
    described = [" -> ".join(f"{m} (imports {sorted(graph[m] & set(c))})" for m in c) for c in found]
    assert not found, "import cycles:\n" + "\n".join(described)


def _sizes():
    for module, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        yield "module", module, len(text.splitlines()), MAX_MODULE
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                yield "class", f"{module}.{node.name}", node.end_lineno - node.lineno + 1, MAX_CLASS
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield "function", f"{module}.{node.name}", node.end_lineno - node.lineno + 1, MAX_FUNCTION


@pytest.mark.parametrize("kind", ["module", "class", "function"])
def test_no_module_class_or_function_over_its_size_limit(kind):
    over = [f"{name}: {lines} lines (limit {limit})" for k, name, lines, limit in _sizes()
            if k == kind and lines > limit]
    assert not over, "\n".join(over)


#: The only modules at the top of the package; everything else lives in a sub-package by job
#: (docs/architecture.md says which).
TOP_LEVEL = {"__init__", "__main__", "api", "model", "errors", "codemod"}
JOB_PACKAGES = {"cli", "config", "catalog", "io", "engine", "checks", "suppress", "manifests", "fixes", "output", "report", "server"}


def test_the_package_is_organised_in_sub_packages_by_job():
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert modules - TOP_LEVEL == set(), "a module at the top: put it in the package whose job it is"
    assert packages == JOB_PACKAGES, "a package was added or removed: say so in docs/architecture.md"
    documented = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    assert [name for name in sorted(packages) if f"`{name}/`" not in documented] == []
