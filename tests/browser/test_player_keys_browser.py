"""The player's keyboard in JupyterLab (headless chromium): a click anywhere in a player, on a figure or on the
explanation line, gives it the keys (→ steps it one frame); Escape hands the focus back to the notebook, whose own
shortcuts work again and whose keys no longer reach the player. The views keep plotly's own text size here."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from lab_browser import CHROMIUM_FLAGS, LabServer, LabServerError, log_tail
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright
from test_browser import SERVER_START_S, chromium_path

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "labs"
ARTIFACTS = REPO / ".test-artifacts"
LAB = LABS / "04-failover.ipynb"  # two players, no Spark
SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}
KERNEL_IDLE_MS = 120_000
RUN_ALL_MS = 300_000
STEP_MS = 30_000

FRAME_JS = "p => Number(p.querySelector('.widget-readout').innerText.trim())"
FOCUS_IN_JS = "p => p.contains(document.activeElement)"
ACTIVE_CELL_JS = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"
PLAYERS_DRAWN_JS = """() => { const ps = document.querySelectorAll('.pulsarlab-player');
  return ps.length >= 2 && Array.from(ps).every(p => p.querySelector('.js-plotly-plot .main-svg')
    && p.querySelector('.widget-readout')); }"""


@pytest.fixture(scope="module")
def lab_page(tmp_path_factory):
    """Lab 04 after Run All in JupyterLab, in a 1280×720 chromium page."""
    server = LabServer(LABS, tmp_path_factory.mktemp("jupyterlab"), SETTINGS, ARTIFACTS / "jupyterlab-keys.log")
    try:
        try:
            server.wait_ready(SERVER_START_S)
        except LabServerError as e:
            pytest.fail(str(e), pytrace=False)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(
                f"{server.base}/lab/workspaces/keys/tree/{quote(LAB.name)}?token={server.token}",
                wait_until="domcontentloaded",
            )
            try:
                page.get_by_text("Python 3 (ipykernel) | Idle", exact=True).wait_for(timeout=KERNEL_IDLE_MS)
                page.get_by_role("menuitem", name="Run", exact=True).click()
                page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
                page.wait_for_function(PLAYERS_DRAWN_JS, timeout=RUN_ALL_MS, polling=500)
            except PlaywrightError:
                ARTIFACTS.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "keys-not-drawn.png"))
                pytest.fail(f"lab 04 did not run in JupyterLab\n{log_tail(server.log_path)}", pytrace=False)
            try:
                yield page
            finally:
                browser.close()
    finally:
        server.shutdown_kernels()
        server.stop()


def _press_and_wait_for_frame(page, player, key: str, frame: int) -> None:
    page.keyboard.press(key)
    try:
        page.wait_for_function(
            f"([p, f]) => ({FRAME_JS})(p) === f", arg=[player.element_handle(), frame], timeout=STEP_MS
        )
    except PlaywrightError:
        pytest.fail(f"{key} left the player at frame {player.evaluate(FRAME_JS)}, not {frame}", pytrace=False)


@pytest.mark.parametrize("where", ["figure", "explanation"])
def test_a_click_in_a_player_gives_it_the_keys(lab_page, where):
    page = lab_page
    player = page.locator(".pulsarlab-player").first
    player.evaluate("p => p.scrollIntoView({block: 'start'})")
    target = (
        player.locator(".js-plotly-plot .nsewdrag").first
        if where == "figure"
        else player.locator(".widget-html-content", has_text="frame ").first
    )
    target.click()
    page.wait_for_function(FOCUS_IN_JS, arg=player.element_handle(), timeout=STEP_MS)
    frame = player.evaluate(FRAME_JS)
    cell = page.evaluate(ACTIVE_CELL_JS)
    _press_and_wait_for_frame(page, player, "ArrowRight", frame + 1)
    _press_and_wait_for_frame(page, player, "ArrowLeft", frame)
    assert player.evaluate(FOCUS_IN_JS), "the player lost the focus to its own keys"
    assert page.evaluate(ACTIVE_CELL_JS) == cell, "the notebook moved its active cell on the player's keys"


def test_escape_gives_the_keys_back_to_the_notebook(lab_page):
    page = lab_page
    player = page.locator(".pulsarlab-player").first
    player.evaluate("p => p.scrollIntoView({block: 'start'})")
    player.locator(".js-plotly-plot .nsewdrag").first.click()
    page.wait_for_function(FOCUS_IN_JS, arg=player.element_handle(), timeout=STEP_MS)
    page.keyboard.press("Escape")
    page.wait_for_function(
        "p => document.activeElement.matches('.jp-Cell') && document.activeElement.contains(p)",
        arg=player.element_handle(),
        timeout=STEP_MS,
    )
    frame = player.evaluate(FRAME_JS)
    page.keyboard.press("ArrowRight")  # the notebook's key now: it must not reach the player
    # the click's message to the kernel follows any message the key sent, so the frame tells whether one did
    player.get_by_role("button", name="step ▶", exact=True).click()
    page.wait_for_function(f"p => ({FRAME_JS})(p) !== {frame}", arg=player.element_handle(), timeout=STEP_MS)
    assert player.evaluate(FRAME_JS) == frame + 1, "a key pressed after Escape still stepped the player"
    page.keyboard.press("Escape")
    page.wait_for_function("() => document.activeElement.matches('.jp-Cell')", timeout=STEP_MS)
    # JupyterLab's own shortcut in command mode: ↓ selects the next cell
    cell = page.evaluate(ACTIVE_CELL_JS)
    page.keyboard.press("ArrowDown")
    page.wait_for_function(f"() => ({ACTIVE_CELL_JS})() === {cell + 1}", timeout=STEP_MS)


def test_views_keep_plotlys_text_size_in_jupyterlab(lab_page):
    sizes = lab_page.evaluate(
        "() => [...new Set(Array.from(document.querySelectorAll('.pulsarlab-player .xtick text,"
        " .pulsarlab-player .ytick text')).map(t => parseFloat(getComputedStyle(t).fontSize)))]"
    )
    assert sizes == [12], f"tick labels in JupyterLab are {sizes} px: presenter mode's size leaked into the lab"
