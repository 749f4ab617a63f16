"""docs/architecture.md is a true map: its layer diagram is the ``layers`` import contract of pyproject.toml, line for
line; every module of the package sits in a layer; every module, file and package the page names exists; and every
package of the code is named on it."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
CONTRACTS = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
LAYERS = next(c for c in CONTRACTS if c["type"] == "layers")
MODEL = next(c for c in CONTRACTS if c["name"].startswith("The model "))
CLASSROOM = next(c for c in CONTRACTS if c.get("forbidden_modules") == ["pulsarlab_widgets.classroom"])
# where a file the page names may live (the page names files of the code, the labs, tests, benches and docs)
ROOTS = ("pulsarlab", "widgets", "labs", "tests", "bench", "docs", "jupyter")
MODULE_COLUMN = re.compile(r"(pulsarlab(?:_widgets)?(?:\.\w+)?|\.\w+)((?:\s*[|,]\s*\.\w+)*)(,?)")
RULE = "──"


def _diagram() -> tuple[list[tuple[set[str], str]], int]:
    """The layers the page's diagram draws, top to bottom, as (modules, ``|`` or ``:``), and how many lie above the
    rule that starts the model. A line whose module column ends with a comma goes on on the next line."""
    block = PAGE.split("## Layers", 1)[1].split("```", 2)[1]
    layers: list[tuple[set[str], str]] = []
    above = None
    pending = ""
    for line in block.splitlines():
        if RULE in line:
            above = len(layers)
            continue
        text = (pending + " " + line.strip()).strip() if pending else line.strip()
        match = MODULE_COLUMN.match(text)
        if not match:
            continue
        if match[3]:  # the column goes on on the next line
            pending = match[0]
            continue
        pending = ""
        column = match[1] + match[2]
        names = [n.strip() for n in re.split(r"[|,]", column)]
        base = "pulsarlab_widgets" if names[0] == "pulsarlab_widgets" else "pulsarlab"
        modules = {n if n.startswith("pulsarlab") else base + n for n in names}
        layers.append((modules, ":" if "," in column else "|"))
    assert above is not None, "the diagram has no rule line for the model"
    return layers, above


def _contract_layers() -> list[tuple[set[str], str]]:
    out = []
    for layer in LAYERS["layers"]:
        delimiter = ":" if ":" in layer else "|"
        out.append(({m.strip() for m in layer.split(delimiter)}, delimiter))
    return out


DIAGRAM, ABOVE_THE_MODEL = _diagram()


def test_the_diagram_is_the_layers_contract():
    assert DIAGRAM == _contract_layers()


def test_every_module_of_the_package_is_in_a_layer():
    """import-linter's ``exhaustive`` needs a container, and the views are a second top-level package: say it here."""
    layered = set().union(*(modules for modules, _ in DIAGRAM))
    top = {f"pulsarlab.{p.stem}" for p in (REPO / "pulsarlab").glob("*.py") if p.stem != "__init__"}
    top |= {f"pulsarlab.{p.parent.name}" for p in (REPO / "pulsarlab").glob("*/__init__.py")}
    assert top | {"pulsarlab_widgets"} == layered


def test_the_model_contract_covers_every_layer_below_the_rule():
    model = set().union(*(modules for modules, _ in DIAGRAM[ABOVE_THE_MODEL:]))
    assert set(MODEL["source_modules"]) == model


def test_the_classroom_contract_covers_every_other_module_of_the_views():
    views = {p.stem for p in (REPO / "widgets").glob("*.py") if p.stem != "__init__"}
    views |= {p.parent.name for p in (REPO / "widgets").glob("*/__init__.py")} - {"classroom"}
    assert set(CLASSROOM["source_modules"]) == {f"pulsarlab_widgets.{v}" for v in views}


def _named_paths() -> set[str]:
    """Every file (``x.py``, ``dir/x.py``, ``static/x.js``, ...) and folder (``dir/``) the page names: in backquotes,
    and the ``.py`` files of its diagrams."""
    quoted = re.findall(r"`([^`\s]+)`", PAGE)
    blocks = PAGE.split("```")[1::2]
    names = {q for q in quoted if re.fullmatch(r"[\w./-]*\w\.(?:py|js|json|md)|[\w/.-]+/", q)}
    names |= {n for b in blocks for n in re.findall(r"[\w/]+\.py\b", b)}
    return names - {"labs/*.ipynb"}


FILES = [
    str(p.relative_to(REPO))
    for root in ROOTS
    for p in (REPO / root).rglob("*")
    if "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts
]
FILE_SET = {f"/{f}" for f in FILES} | {f"/{f}/" for f in [*ROOTS, *FILES] if (REPO / f).is_dir()}
NAMED_PATHS = sorted(_named_paths())


@pytest.mark.parametrize("name", NAMED_PATHS)
def test_every_file_the_page_names_exists(name):
    """A bare name (``ledger.py``) or a partial path (``dispatch/shared.py``, ``delayed/``) names a file the repository
    has at the end of some path."""
    assert any(f.endswith("/" + name) for f in FILE_SET), f"docs/architecture.md names {name}, which is not there"


DOTTED = sorted(set(re.findall(r"(?<![\w/.])pulsarlab(?:_widgets)?(?:\.[A-Za-z_]\w*)+", PAGE)))


def _module_path(dotted: str) -> Path | None:
    top, *rest = dotted.split(".")
    base = REPO / ("widgets" if top == "pulsarlab_widgets" else "pulsarlab") / Path(*rest) if rest else None
    if base is None:
        return REPO / ("widgets" if top == "pulsarlab_widgets" else "pulsarlab")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@pytest.mark.parametrize("name", DOTTED)
def test_every_module_the_page_names_exists(name):
    """``pulsarlab.x.y`` is a module, or a module's attribute (``pulsarlab.load_timeline``,
    ``pulsarlab_widgets.live_watch.WatchViews``)."""
    if _module_path(name):
        return
    module, attribute = name.rsplit(".", 1)
    assert _module_path(module), f"docs/architecture.md names {name}: no module {module}"
    assert hasattr(importlib.import_module(module), attribute), f"docs/architecture.md names {name}: no {attribute}"


PACKAGES = sorted(
    (".".join(["pulsarlab_widgets" if p.parts[0] == "widgets" else "pulsarlab", *p.parts[1:]]), str(p))
    for root in ("pulsarlab", "widgets")
    for p in (q.parent.relative_to(REPO) for q in (REPO / root).rglob("__init__.py"))
)


@pytest.mark.parametrize("dotted, path", PACKAGES, ids=[d for d, _ in PACKAGES])
def test_every_package_is_named_on_the_page(dotted, path):
    """By its import name, or as a folder (``dispatch/``, ``pulsarlab/serve/``) that ends its path; a top-level
    package by the modules of it the page names."""
    folders = [n for n in NAMED_PATHS if n.endswith("/")]
    named = dotted in DOTTED or any(("/" + path + "/").endswith("/" + f) for f in folders)
    named |= "." not in dotted and any(d.startswith(dotted + ".") for d in DOTTED)
    assert named, f"docs/architecture.md does not name the package {dotted} ({path}/)"
