"""Every test module of a slow tier carries its marker, so ``make test-fast`` (``-m "not (browser or spark or
notebook or serve)"``) starts no browser, Spark session, notebook kernel or ``pulsarlab serve``.

A module's tier is read from what it imports: a module that imports the thing a tier starts must say
``pytestmark = pytest.mark.<tier>`` (or mark each of its tests). The modules sit in folders that mirror the code
(tests/README.md says which folder takes a new module); the helpers they share stay at the top of ``tests/``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

# the imports that start a slow thing, by the tier whose marker they need
TIER_IMPORTS = {
    "browser": {"playwright", "lab_browser"},
    "notebook": {"nbclient"},
    "spark": {"pyspark"},
    "serve": {"pulsar", "serve_support", "soak_clients"},
}


def _imports(tree: ast.Module) -> set[str]:
    """The modules imported, as written (``pulsar.schema``, a data class of the real client, is not ``pulsar``, its
    client), plus each one's top package unless a submodule was named."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names | {n.split(".")[0] for n in names if n.split(".")[0] not in ("pulsar",)}


def _markers(tree: ast.Module) -> set[str]:
    """The ``pytest.mark.X`` names the module's source uses (module-level or on its tests)."""
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "pytest"
    }


MODULES = sorted(TESTS.rglob("test_*.py"))
README = (TESTS / "README.md").read_text(encoding="utf-8")


def test_the_tiers_are_the_markers_pyproject_declares(pytestconfig):
    declared = {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}
    assert set(TIER_IMPORTS) <= declared


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_a_module_that_starts_a_slow_thing_carries_its_tier(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported, marked = _imports(tree), _markers(tree)
    missing = sorted(tier for tier, starts in TIER_IMPORTS.items() if imported & starts and tier not in marked)
    assert not missing, (
        f"{path.name} imports {sorted(imported & set().union(*TIER_IMPORTS.values()))} but is not marked {missing}"
    )


def test_every_test_module_sits_in_a_folder_of_the_tree():
    """A module added at the top of ``tests/`` goes into its folder (tests/README.md: browser, serve, spark, watch
    first, then the package it tests)."""
    folders = {row.split("`")[1].rstrip("/") for row in README.splitlines() if row.startswith("| `")}
    folders |= {"browser", "serve", "spark", "watch"}
    misplaced = sorted(
        str(p.relative_to(TESTS)) for p in MODULES if p.parent.relative_to(TESTS).as_posix() not in folders
    )
    assert not misplaced, f"place these as tests/README.md says: {misplaced}"


def test_a_test_module_imported_by_another_sits_beside_it():
    """pytest puts a module's own folder on ``sys.path`` (rootdir-relative ``prepend`` import), so ``from test_browser
    import ...`` resolves only beside test_browser.py; and every module's name is unique across the tree."""
    by_stem = {p.stem: p for p in MODULES}
    assert len(by_stem) == len(MODULES), "two test modules share a name"
    apart = []
    for path in MODULES:
        for name in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            other = by_stem.get(name)
            if other is not None and other.parent != path.parent:
                apart.append(f"{path.relative_to(TESTS)} imports {other.relative_to(TESTS)}")
    assert not apart, apart
