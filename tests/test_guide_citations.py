"""What a learner reads cites the lab's own guide (docs/guide/<page>.md#<anchor>) or Pulsar's class and PIP names,
never a "reference §" the learner does not have: event explanations, diagnosis findings, exercise checkers and
the labs themselves. Every guide address they cite exists."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pulsarlab.event_catalogue import AREAS, catalogue
from pulsarlab.importers.diagnose import Finding

REPO = Path(__file__).resolve().parents[1]
GUIDE_REF = re.compile(r"docs/guide/([a-z0-9-]+\.md)(?:#([a-z0-9-]+))?")
EVENTS = catalogue()


def _resolves(page: str, anchor: str | None) -> bool:
    path = REPO / "docs" / "guide" / page
    return path.is_file() and (anchor is None or f'<a id="{anchor}"></a>' in path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("area, event", EVENTS, ids=[f"{a}.{e.name}" for a, e in EVENTS])
def test_event_explanations_cite_no_reference_section(area, event):
    for text in (event.rule, event.template):
        assert "§" not in text, f"{area}.{event.name}: {text!r}"
    for page, anchor in GUIDE_REF.findall(event.rule):
        assert _resolves(page, anchor or None), (
            f"{area}.{event.name} cites docs/guide/{page}#{anchor}, which is missing"
        )


@pytest.mark.parametrize("module", AREAS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_event_explainers_cite_no_reference_section(module):
    """Explainer functions build their text in code: the whole module must not say "§"."""
    assert "§" not in Path(module.__file__).read_text(encoding="utf-8")


def test_many_events_cite_a_guide_section():
    cited = [e for _, e in EVENTS if "docs/guide/" in e.rule]
    assert len(cited) >= 40, len(cited)


def test_diagnosis_findings_cite_guide_sections():
    source = (REPO / "pulsarlab" / "importers" / "diagnose.py").read_text(encoding="utf-8")
    refs = re.findall(r'"(docs/guide/[^"]+)"', source)
    assert len(refs) >= 15
    for ref in refs:
        page, anchor = GUIDE_REF.fullmatch(ref).groups()
        assert _resolves(page, anchor), ref
    assert "reference" in Finding.__dataclass_fields__
    assert not re.search(r'"§[0-9]', source)


@pytest.mark.parametrize("path", sorted((REPO / "labs").glob("*.ipynb")), ids=lambda p: p.name)
def test_labs_cite_no_reference_section(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    text = "".join("".join(c["source"]) for c in cells)
    assert "reference §" not in text
    for page, anchor in GUIDE_REF.findall(text):
        assert _resolves(page, anchor or None), f"{path.name} cites docs/guide/{page}#{anchor}"


def test_exercise_checkers_cite_no_reference_section():
    for path in (REPO / "pulsarlab" / "exercises").glob("*.py"):
        assert "§" not in path.read_text(encoding="utf-8"), path.name


def test_views_cite_no_reference_section():
    for path in sorted((REPO / "widgets").rglob("*.py")):
        assert "reference §" not in path.read_text(encoding="utf-8"), path.relative_to(REPO)
