"""The model's import graph has no cycle, counting imports made inside functions.

Builds the graph from the source with `ast` (every ``import`` and ``from ... import`` anywhere in a module, at
module level or inside a function or class), resolves each to the pulsarlab module it names, and checks that the
strongly connected components are all single modules. Imports under ``if TYPE_CHECKING:`` are left out: they are
never executed and exist only for annotations. `lint-imports` (configured in pyproject.toml) checks the layer
contracts; this test checks what import-linter does not: cycles inside a layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = {"pulsarlab": REPO / "pulsarlab", "pulsarlab_widgets": REPO / "widgets"}


def _module_files() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for name, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            parts = [name, *path.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool):
    """Every module name an import statement of ``tree`` names, skipping ``if TYPE_CHECKING:`` bodies."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, tuple(alias.name for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))


def import_graph() -> dict[str, set[str]]:
    """Module -> the pulsarlab modules it imports (a ``from pkg import sub`` counts as importing ``pkg.sub``)."""
    modules = _module_files()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        for target, names in _imports(tree, name, path.name == "__init__.py"):
            for candidate in [f"{target}.{n}" for n in names] + [target]:
                if candidate in modules and candidate != name:
                    graph[name].add(candidate)
                    break
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
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
                    work.append((child, iter(sorted(graph[child]))))
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


def test_the_graph_sees_function_level_and_package_imports():
    graph = import_graph()
    assert "pulsarlab.managed_ledger.cursor" in graph["pulsarlab.managed_ledger.ledger"]
    assert "pulsarlab.broker.dispatch" in {m.rsplit(".", 1)[0] for m in graph["pulsarlab.broker.subscription"]}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_pulsarlab_modules():
    found = cycles(import_graph())
    assert not found, "import cycles (counting imports inside functions):\n" + "\n".join(
        " <-> ".join(component) for component in found
    )
