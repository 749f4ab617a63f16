"""Every test module of a slow tier carries its marker, so ``make test-fast`` (``-m "not (browser or spark or
notebook or serve)"``) starts no browser, Spark session, notebook kernel or ``pulsarlab serve``.

A module's tier is read from what it imports: a module that imports the thing a tier starts must say
``pytestmark = pytest.mark.<tier>`` (or mark each of its tests)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

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


MODULES = sorted(TESTS.glob("test_*.py"))


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
