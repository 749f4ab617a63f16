"""The view-model package `pulsarlab.snapshot`: one import path per public name, no module `__getattr__`, and its
modules import each other in one direction only (base <- chunks, delayed, redelivery <- lab <- timeline_file <- recorder)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

SNAPSHOT = Path(__file__).resolve().parents[2] / "pulsarlab" / "snapshot"
MODULES = ["base", "chunks", "delayed", "redelivery", "lab", "frame", "timeline_file", "recorder"]


def _module(name: str):
    return importlib.import_module(f"pulsarlab.snapshot.{name}")


def _defined_names(tree: ast.Module) -> set[str]:
    """Names a module defines at top level (classes, functions, assignments), not names it imports."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


@pytest.mark.parametrize("name", MODULES)
def test_every_public_name_is_defined_where_it_is_exported(name):
    module = _module(name)
    assert not hasattr(module, "__getattr__"), f"pulsarlab.snapshot.{name} has a module __getattr__"
    defined = _defined_names(ast.parse((SNAPSHOT / f"{name}.py").read_text()))
    reexported = [public for public in module.__all__ if public not in defined]
    assert not reexported, f"pulsarlab.snapshot.{name} exports names it imports: {reexported}"
    for public in module.__all__:
        obj = getattr(module, public)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__module__ == module.__name__


def test_the_package_re_exports_nothing():
    package = importlib.import_module("pulsarlab.snapshot")
    assert not getattr(package, "__all__", ())
    assert not hasattr(package, "__getattr__")
    init = ast.parse((SNAPSHOT / "__init__.py").read_text())
    assert not [n for n in init.body if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_snapshot_modules_import_each_other_in_one_direction():
    """Counting imports inside functions: a module imports only modules before it in MODULES."""
    for i, name in enumerate(MODULES):
        tree = ast.parse((SNAPSHOT / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pulsarlab.snapshot."):
                target = node.module.rsplit(".", 1)[1]
                assert target in MODULES[:i], f"pulsarlab.snapshot.{name} imports {node.module}"
