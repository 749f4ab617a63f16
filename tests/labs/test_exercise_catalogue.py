"""Every exercise of labs 01-10 ships unsolved and has a checker that answers ``...`` with "not answered yet";
its solution lives in `pulsarlab.exercises.solutions`, and every place a checker sends the learner exists."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from pathlib import Path

import pytest

import pulsarlab.exercises as exercises_pkg
from pulsarlab.exercises.check import NOT_ANSWERED
from pulsarlab.exercises.solutions import SOLUTIONS

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "labs"
ANSWER = re.compile(r"^(answer_\d+) = (.*)$", re.M)


def _checkers():
    out = []
    for info in pkgutil.iter_modules(exercises_pkg.__path__):
        module = importlib.import_module(f"pulsarlab.exercises.{info.name}")
        for name, fn in vars(module).items():
            if name.startswith("check_") and callable(fn) and getattr(fn, "__module__", None) == module.__name__:
                out.append(fn)
    return out


CHECKERS = _checkers()


def _stable_anchors(page: Path) -> set[str]:
    """The anchors the guide promises to keep: its ``<a id="...">`` tags."""
    return set(re.findall(r'<a id="([^"]+)"></a>', page.read_text(encoding="utf-8")))


def _answers(path: Path) -> dict[str, str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = {}
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            for name, value in ANSWER.findall("".join(cell["source"])):
                found[name] = value
    return found


def test_every_checker_is_an_exercise():
    """The 37 exercises of labs 01-10 each have a checker (new exercises add theirs, wrapped the same way)."""
    assert len(CHECKERS) >= 37, [c.__name__ for c in CHECKERS]
    for check in CHECKERS:
        assert hasattr(check, "todo") and hasattr(check, "see"), f"{check.__name__} is not wrapped by @exercise"


@pytest.mark.parametrize("check", CHECKERS, ids=lambda c: c.__name__)
def test_every_checker_says_not_answered_yet_on_ellipsis(check):
    result = check(...)
    assert not result.ok and not result.answered
    assert result.message == f"{NOT_ANSWERED}: {check.todo}"


@pytest.mark.parametrize("check", CHECKERS, ids=lambda c: c.__name__)
def test_every_place_a_checker_points_to_exists(check):
    """``see`` names a lab section that the lab has (``## S. title``; by its quoted title where the lab does not
    number its sections), and guide pages and anchors that docs/guide has."""
    lab_ref, *guide = check.see
    number, section = re.match(r"Lab (\d+), sections? (\d+)?", lab_ref).groups()
    (notebook,) = LABS.glob(f"{int(number):02d}-*.ipynb")
    headings = [
        line
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        if cell["cell_type"] == "markdown"
        for line in "".join(cell["source"]).splitlines()
    ]
    if section is not None:
        assert any(h.startswith(f"## {section}. ") for h in headings), f"{notebook.name} has no section {section}"
    else:
        titles = re.findall(r'"([^"]+)"', lab_ref)
        assert titles, f"{lab_ref}: name the section by its number or its quoted title"
        for title in titles:
            assert f"## {title}" in headings, f"{notebook.name} has no section {title!r}"
    assert guide, f"{check.__name__} names no guide page"
    for ref in guide:
        page, _, anchor = ref.partition("#")
        path = REPO / page
        assert path.is_file(), ref
        assert anchor in _stable_anchors(path), f'{ref}: {page} has no stable anchor <a id="{anchor}">'


@pytest.mark.parametrize("lab", sorted(SOLUTIONS))
def test_labs_ship_unsolved_and_every_answer_has_a_solution(lab):
    answers = _answers(LABS / f"{lab}.ipynb")
    assert set(answers) == set(SOLUTIONS[lab]), lab
    assert all(value == "..." for value in answers.values()), f"{lab} ships solved answers: {answers}"
    for name, solution in SOLUTIONS[lab].items():
        assert solution.why.strip(), f"{lab} {name}: say why"


def test_no_lab_outside_the_solutions_has_an_exercise():
    for path in sorted(LABS.glob("*.ipynb")):
        if path.stem not in SOLUTIONS:
            assert not _answers(path), f"{path.name} has exercises but no solutions in pulsarlab/exercises/solutions.py"
