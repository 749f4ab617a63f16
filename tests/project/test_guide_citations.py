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

REPO = Path(__file__).resolve().parents[2]
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


# --- issue 22: every reference to a lab, a section or a guide anchor resolves ----------------------------------

LAB_REF = re.compile(r"\b[Ll]abs? (\d{1,2})\b(?:(?:,? §| §|, section |,? \(?section )(\d+))?")
NN_REF = re.compile(r"(?<![\w§.])(\d\d) §(\d+)(?:-§(\d+))?((?:, §\d+(?:-§\d+)?)*)")
OWN_SECTION = re.compile(r"(?<![Ll]ab \d)(?<![Ll]ab \d\d)(?<!, )\b[Ss]ection (\d+)\b")
TITLED = re.compile(r"(?:\b[Ll]ab (\d{1,2}),? (?:§|section )|(?<![\w§.])(\d\d) §)(\d+) \(?\"([^\"]+)\"")
ANCHOR_LINK = re.compile(r"(?:docs/guide/|\]\()([a-z0-9-]+\.md)#([a-z0-9-]+)")


def _lab_cells() -> dict[int, list[tuple[int, dict]]]:
    """Per lab number, its cells with the number of the ``## k.`` section each is in."""
    labs = {}
    for path in sorted((REPO / "labs").glob("[0-9][0-9]-*.ipynb")):
        section, cells = 0, []
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            text = "".join(cell["source"])
            if cell["cell_type"] == "markdown" and (heading := re.search(r"^## (\d+)\.", text, re.M)):
                section = int(heading[1])
            cells.append((section, cell))
        labs[int(path.name[:2])] = cells
    return labs


LAB_CELLS = _lab_cells()


def _normal(text: str) -> str:
    return " ".join(text.replace("`", "").replace("\\'", "'").replace('"', "'").lower().split())


def _texts() -> list[tuple[str, str, int | None]]:
    """(name, text, the lab it belongs to) of every text a reader reads: labs' markdown, docs, README, and the
    docstrings and comments of pulsarlab/ and widgets/ (whole files: a reference in code text must resolve too)."""
    out = []
    for number, cells in LAB_CELLS.items():
        markdown = "\n".join("".join(c["source"]) for _, c in cells if c["cell_type"] == "markdown")
        out.append((f"lab {number:02d}", " ".join(markdown.split()), number))
    for path in sorted([*(REPO / "docs").rglob("*.md"), REPO / "README.md"]):
        out.append((str(path.relative_to(REPO)), " ".join(path.read_text(encoding="utf-8").split()), None))
    for path in sorted([*(REPO / "pulsarlab").rglob("*.py"), *(REPO / "widgets").rglob("*.py")]):
        out.append((str(path.relative_to(REPO)), " ".join(path.read_text(encoding="utf-8").split()), None))
    return out


TEXTS = _texts()


def _references(text: str, own: int | None) -> list[tuple[int, int | None, str]]:
    found = [(int(m[1]), int(m[2]) if m[2] else None, m[0]) for m in LAB_REF.finditer(text)]
    for m in NN_REF.finditer(text):
        for k in [m[2], m[3], *re.findall(r"§(\d+)", m[4] or "")]:
            if k:
                found.append((int(m[1]), int(k), m[0]))
    if own is not None:
        found += [(own, int(m[1]), m[0]) for m in OWN_SECTION.finditer(text)]
    return found


def test_every_lab_and_section_reference_resolves():
    sections = {n: {s for s, _ in cells} - {0} for n, cells in LAB_CELLS.items()}
    checked = 0
    for name, text, own in TEXTS:
        for lab, section, what in _references(text, own):
            checked += 1
            assert lab in sections, f"{name}: {what!r} names a lab that does not exist"
            assert section is None or section in sections[lab], f"{name}: {what!r}: lab {lab} has no section {section}"
    assert checked >= 300, checked


def test_a_section_cited_with_its_title_has_that_title():
    checked = 0
    for name, text, _ in TEXTS:
        for m in TITLED.finditer(text):
            lab, section, title = int(m[1] or m[2]), int(m[3]), m[4]
            body = " ".join(
                "".join(c["source"]) for s, c in LAB_CELLS[lab] if s == section and c["cell_type"] == "markdown"
            )
            checked += 1
            assert _normal(title) in _normal(body), f"{name}: {m[0]!r}: lab {lab} §{section} has no such heading"
    assert checked >= 90, checked


def test_every_guide_anchor_link_resolves():
    checked = 0
    for name, text, _ in TEXTS:
        for page, anchor in ANCHOR_LINK.findall(text):
            if page in ("architecture.md", "learning-goals.md", "sweeps.md", "timelines.md"):
                continue  # pages outside the guide use heading slugs, not <a id> anchors
            checked += 1
            assert _resolves(page, anchor), f"{name} links to docs/guide/{page}#{anchor}, which does not exist"
    assert checked >= 200, checked


@pytest.mark.parametrize("package", ["pulsarlab", "widgets"])
def test_no_code_text_cites_a_file_the_reader_does_not_have(package):
    """Docstrings and comments cite Pulsar's classes, docs/guide/ anchors or docs/architecture.md: never the
    project's private reference ("reference §"), its old design notes ("design.md") or "../shared"."""
    cited = [
        f"{path.relative_to(REPO)}:{n}"
        for path in sorted((REPO / package).rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "reference §" in line or "design.md" in line or "../shared" in line or "shared/reference" in line
    ]
    assert not cited, cited
