"""Issue 14 in headless chromium: an exported lab works from a file with the network blocked and no kernel, and
presenter mode (Voilà) hides the code and steps a player with the arrow keys."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright
from test_browser import CHROMIUM_FLAGS, LOCAL_HOSTS, chromium_path

from pulsarlab_widgets.export import export_lab

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
LABS = REPO / "labs"
ARTIFACTS = REPO / ".test-artifacts"
# lab 04: two players, one of them with two views; no Spark, so the export takes seconds
LAB = LABS / "04-failover.ipynb"
SERVER_START_S = 90
DRAW_MS = 60_000


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "04-failover.html"
    result = export_lab(LAB, out)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "export-04.json").write_text(json.dumps({"bytes": result.bytes, "seconds": round(result.seconds, 1),
                                                          "players": result.players, "figures": result.figures}))
    return result


@pytest.fixture
def browser_page(tmp_path):
    """A chromium page whose every request leaves a record; ``allowed(url)`` decides which may load."""
    executable = chromium_path()
    record: dict[str, list[str]] = {"blocked": [], "errors": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        page = context.new_page()
        page.on("pageerror", lambda err: record["errors"].append(str(err)))
        page.on("console", lambda msg: msg.type == "error" and record["errors"].append(msg.text))

        def route(allowed):
            def handler(r):
                if allowed(r.request.url):
                    r.continue_()
                else:
                    record["blocked"].append(r.request.url)
                    r.abort()

            context.route("**/*", handler)

        try:
            yield page, route, record
        finally:
            context.close()
            browser.close()


def _frame(player) -> int:
    return int(player.get_attribute("data-frame"))


def _figure_data(player) -> str:
    return player.evaluate("root => JSON.stringify(Array.from(root.querySelectorAll('.pl-view')).map(d => d.data))")


def test_exported_page_draws_and_steps_offline_without_a_kernel(exported, browser_page):
    page, route, record = browser_page
    route(lambda url: url.startswith(("file:", "data:", "blob:")))
    page.goto(exported.out.resolve().as_uri())

    players = page.locator(".pulsarlab-static-player")
    figures = page.locator(".pulsarlab-static-figure")
    assert players.count() == exported.players >= 2
    assert figures.count() == exported.figures
    drawn = page.locator(".pulsarlab-static-player .pl-view .main-svg, .pulsarlab-static-figure .main-svg")
    try:
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('.pl-view, .pulsarlab-static-figure'))"
            ".every(d => d.querySelector('.main-svg'))", timeout=DRAW_MS)
    except PlaywrightError:
        page.screenshot(path=str(ARTIFACTS / "export-not-drawn.png"), full_page=True)
        pytest.fail(f"not every figure was drawn ({drawn.count()} svg); page errors: {record['errors']}")
    assert page.locator(".jp-CodeCell .jp-InputArea").count() == 0, "code is shown without --with-code"
    assert "import" not in page.locator("body").inner_text(), "code is shown without --with-code"
    assert page.get_by_text("Lab 4", exact=False).first.is_visible(), "the teaching text is missing"
    page.screenshot(path=str(ARTIFACTS / "export-04.png"))

    # the play button of the first player runs through its frames
    first = players.nth(0)
    first.scroll_into_view_if_needed()
    start, before, label = _frame(first), _figure_data(first), first.locator(".pl-label").inner_text()
    first.locator(".updatemenu-button", has_text="play").click()
    page.wait_for_function("el => Number(el.getAttribute('data-frame')) >= %d" % (start + 2), arg=first.element_handle(),
                           timeout=30_000)
    first.locator(".updatemenu-button", has_text="pause").click()
    assert _figure_data(first) != before, "the figures did not change while playing"
    assert first.locator(".pl-label").inner_text() != label, "the explanation did not change while playing"

    # the slider of the second player (two views) jumps to its last frames; both views follow
    second = players.nth(1)
    second.scroll_into_view_if_needed()
    frames = second.evaluate("root => root.pulsarlab.frames")
    start, before = _frame(second), _figure_data(second)
    rail = second.locator(".slider-rail-rect").first.bounding_box()
    page.mouse.click(rail["x"] + rail["width"] - 2, rail["y"] + rail["height"] / 2)
    page.wait_for_function("el => Number(el.getAttribute('data-frame')) === %d" % (frames - 1),
                           arg=second.element_handle(), timeout=10_000)
    after = json.loads(_figure_data(second))
    assert len(after) == 2 and after != json.loads(before)
    # and its keys: Home, then → steps one frame
    second.locator(".pl-label").click()
    page.keyboard.press("Home")
    assert _frame(second) == 0
    page.keyboard.press("ArrowRight")
    assert _frame(second) == 1

    assert record["blocked"] == [], f"the page asked the network for {record['blocked']}"
    assert record["errors"] == [], f"page errors: {record['errors']}"


