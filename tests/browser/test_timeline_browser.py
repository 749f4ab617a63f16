"""Issue 14 in headless chromium: a timeline saved here reloads in another process (the kernel that exports a
notebook loading the file, as a colleague would) to a player whose every frame draws as the recording's, and a
ForkView draws both branches of a fork opened at the first divergence, which its label marks, with every frame
before it the same on both sides. The page is the exported one (`pulsarlab export`): it needs no kernel and
every request beyond the file is blocked. (Live widgets in Voilà are not used: there, in this environment, some
anywidget models log "Failed to initialize model" and such a FigureWidget keeps its first figure while its
player's label steps on, so a comparison of frames would measure that, not the file.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
import test_classroom_browser as classroom
from lab_browser import MODES
from playwright.sync_api import Error as PlaywrightError
from plotly.io.json import to_json_plotly
from test_classroom_browser import ARTIFACTS, DRAW_MS

from pulsarlab.scenarios.fork import Change, fork, record_row
from pulsarlab.scenarios.spec import ScenarioSpec
from pulsarlab_widgets.classroom.export import export_lab
from pulsarlab_widgets.player import render
from pulsarlab_widgets.views.cursor import cursor_view

pytestmark = pytest.mark.browser
browser_page = classroom.browser_page  # the chromium page fixture: ``route(allowed)`` blocks and records the rest

# a short Key_Shared run (45 frames): every frame is stepped in the browser
ROW = {
    "messages": 3,
    "keys": 2,
    "consumers": 2,
    "subscription_type": "Key_Shared",
    "seeds": 3,
    "publish_rate_per_s": 200,
    "receiver_queue_size": 5,
}
FORK_AT = 8
STEP_MS = 15_000
HEADER = re.compile(r"frame \d+ of 0–\d+")

# what a player's figure shows: per trace its name, points, hover texts and legend switch; the title; annotations
FIGURE_JS = """el => {
  const gd = el.querySelector('.js-plotly-plot');
  const list = v => v == null ? [] : (typeof v === 'string' ? [v] : Array.from(v));
  const lay = gd.layout || {};
  const title = lay.title == null ? null : (typeof lay.title === 'string' ? lay.title : (lay.title.text ?? null));
  return JSON.stringify({
    traces: gd.data.map(t => [t.name ?? null, list(t.x), list(t.y), list(t.hovertext), t.showlegend ?? null]),
    title: title,
    annotations: (lay.annotations || []).map(a => a.text ?? null),
  });
}"""


def expected_figure(timeline, i: int, since: int | None) -> dict:
    """What FIGURE_JS reads from a player showing frame ``i`` after frame ``since``, computed here from
    ``timeline`` (the recording, not the file)."""
    fig = json.loads(to_json_plotly(render(cursor_view, timeline, i, since)))

    def listed(v):
        return [] if v is None else [v] if isinstance(v, str) else list(v)

    layout = fig.get("layout", {})
    title = layout.get("title")
    return {
        "traces": [
            [t.get("name"), listed(t.get("x")), listed(t.get("y")), listed(t.get("hovertext")), t.get("showlegend")]
            for t in fig["data"]
        ],
        "title": title.get("text") if isinstance(title, dict) else title,
        "annotations": [a.get("text") for a in layout.get("annotations", [])],
    }


def _notebook(timeline: Path) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A saved timeline and a fork, in the browser"),
        nbformat.v4.new_code_cell(
            "import pulsarlab as pl\n"
            "from pulsarlab.scenarios.fork import Change, fork\n"
            "from pulsarlab_widgets.fork import ForkView\n"
            "from pulsarlab_widgets.player import Player\n"
            "from pulsarlab_widgets.views.cursor import cursor_view\n\n"
            f"loaded = pl.load_timeline({str(timeline)!r})"
        ),
        nbformat.v4.new_code_cell('Player(loaded, [cursor_view], title="loaded from the file")'),
        nbformat.v4.new_code_cell(
            f'result = fork(loaded, {FORK_AT}, Change("consumer_leaves", consumer="c1"))\n'
            "ForkView(result, [cursor_view])"
        ),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The recording (made here), its file, and the exported page of a notebook that loads the file."""
    folder = tmp_path_factory.mktemp("timeline")
    row = next(ScenarioSpec.from_dict(ROW).rows())
    _result, rec = record_row(row)
    path = rec.save(folder / "run.plt.jsonl.gz")
    notebook = folder / "timeline.ipynb"
    nbformat.write(_notebook(path), notebook)
    result = export_lab(notebook, folder / "timeline.html")
    assert result.players == 3  # the loaded timeline's, and the fork view's two
    return result.out, rec


def _open(page, route, record, out: Path) -> None:
    route(lambda url: url.startswith(("file:", "data:", "blob:")))
    page.goto(out.resolve().as_uri())
    try:
        page.wait_for_function(
            "() => document.querySelectorAll('.pulsarlab-static-player .pl-view .main-svg').length >= 3",
            timeout=DRAW_MS,
        )
    except PlaywrightError:
        page.screenshot(path=str(ARTIFACTS / "timeline-not-drawn.png"), full_page=True)
        pytest.fail(f"the players were not drawn; page errors: {record['errors']}")


def _wait_frame(page, players, i: int) -> None:
    for p in players:
        page.wait_for_function(
            "([el, i]) => el.getAttribute('data-frame') === String(i)", arg=[p.element_handle(), i], timeout=STEP_MS
        )


def _label(player) -> str:
    """The frame's label without its 'frame i of 0–last' header (the two sides of a fork differ in length)."""
    return HEADER.sub("", player.locator(".pl-label").inner_text())


def _wait_figure(page, player, expected: dict, what: str, record) -> None:
    """Wait until the player's figure shows ``expected`` (the frame's update is applied after its label's)."""
    try:
        page.wait_for_function(
            "([el, want]) => (" + FIGURE_JS + ")(el) === JSON.stringify(JSON.parse(want))",
            arg=[player.element_handle(), json.dumps(expected, ensure_ascii=False, separators=(",", ":"))],
            timeout=STEP_MS,
        )
    except PlaywrightError:
        shown = json.loads(player.evaluate(FIGURE_JS))
        (ARTIFACTS / "timeline-figure-differs.json").write_text(json.dumps([expected, shown], indent=1))
        pytest.fail(f"{what}: the figure differs from the recording (timeline-figure-differs.json); page: {record}")


def _no_errors(record) -> None:
    assert record["blocked"] == [], f"the page asked the network for {record['blocked']}"
    assert record["errors"] == [], f"page errors: {record['errors']}"


def _press(page, player, key: str) -> None:
    player.locator(".pl-label").click()  # the keys go to the player with the focus
    page.keyboard.press(key)


@pytest.mark.parametrize("machine", MODES, indirect=True)
def test_a_saved_timeline_reloads_in_another_process_to_identical_frames(exported, browser_page):
    out, rec = exported
    page, route, record = browser_page
    _open(page, route, record, out)
    loaded = page.locator(".pulsarlab-static-player").nth(0)
    last = len(rec) - 1
    assert f"frame 0 of 0–{last}" in loaded.locator(".pl-label").inner_text()
    for i in range(last + 1):  # every frame, stepped with →: the recording's figure, time, event and explanation
        if i:
            _press(page, loaded, "ArrowRight")
        _wait_frame(page, [loaded], i)
        text = _label(loaded)
        assert rec[i].explanation in text, f"frame {i}: the loaded player shows another explanation"
        if rec[i].kind is not None:
            assert f"t = {rec[i].time} ms · {rec[i].kind}" in text
        _wait_figure(page, loaded, expected_figure(rec, i, i - 1 if i else None), f"frame {i}", record)
    loaded.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "timeline-reloaded.png"))
    _no_errors(record)


@pytest.mark.parametrize("machine", MODES, indirect=True)
def test_a_fork_view_opens_at_the_divergence_and_nothing_differs_before_it(exported, browser_page):
    out, rec = exported
    expected = fork(rec, FORK_AT, Change("consumer_leaves", consumer="c1"))
    d, branch_frames = expected.first_divergence, expected.branch
    assert d is not None and d >= FORK_AT
    page, route, record = browser_page
    _open(page, route, record, out)
    players = page.locator(".pulsarlab-static-player")
    base, branch = players.nth(1), players.nth(2)
    label = page.get_by_text("fork at frame", exact=False).first
    label.scroll_into_view_if_needed()

    # opened at the divergence, which the label marks; the two sides show what each timeline holds there
    _wait_frame(page, [base, branch], d)
    assert f"first divergence at frame {d}" in label.inner_text()
    marked = page.locator("b", has_text="the branches differ here")
    assert marked.count() == 1 and marked.first.is_visible(), "the divergence is not marked"
    left, right = expected_figure(rec, d, d - 1), expected_figure(branch_frames, d, d - 1)
    _wait_figure(page, base, left, f"base frame {d}", record)
    _wait_figure(page, branch, right, f"branch frame {d}", record)
    assert (_label(base), left) != (_label(branch), right), f"frame {d} is marked but both sides show the same"
    assert branch_frames[d].explanation in _label(branch) and rec[d].explanation in _label(base)
    page.screenshot(path=str(ARTIFACTS / "fork-view.png"))

    # both sides step back to frame 0: every frame before the divergence is the same on both
    for i in range(d - 1, -1, -1):
        _press(page, base, "ArrowLeft")
        _press(page, branch, "ArrowLeft")
        _wait_frame(page, [base, branch], i)
        want = expected_figure(rec, i, i - 1 if i else None)
        assert want == expected_figure(branch_frames, i, i - 1 if i else None)
        _wait_figure(page, base, want, f"base frame {i}", record)
        _wait_figure(page, branch, want, f"branch frame {i}", record)
        assert _label(base) == _label(branch), f"the labels differ at frame {i}, before {d}"
    # the branch runs on to its own end
    _press(page, branch, "End")
    _wait_frame(page, [branch], len(branch_frames) - 1)
    assert branch_frames[len(branch_frames) - 1].explanation in _label(branch)
    _no_errors(record)
