"""Issue 14 in headless chromium: an exported lab works from a file with the network blocked and no kernel, and
presenter mode (Voilà) hides the code and steps a player with the arrow keys."""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest
from lab_browser import (
    CHROMIUM_FLAGS,
    FIGURE_FRAMES_JS,
    LOCAL_HOSTS,
    MODES,
    SLOW_FACTOR,
    end_process,
    free_port,
    throttle_cpu,
)
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright
from test_browser import chromium_path

from pulsarlab_widgets.classroom.export import export_lab

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "labs"
ARTIFACTS = REPO / ".test-artifacts"
# lab 04: two players, one of them with two views; no Spark, so the export takes seconds
LAB = LABS / "04-failover.ipynb"
# pages with many live FigureWidgets: lab 08 has three players (the most of any lab without Spark); lab 10 has six
# figures (its live views and a three-view player over a real client's run on loopback)
MANY_FIGURE_LABS = [LABS / "08-chunked-messages.ipynb", LABS / "10-watch-your-app.ipynb"]
PAGE_LOADS = 2
VIEWPORT = {"width": 1280, "height": 720}
# a projector and a full-HD screen: presenter mode fits every view and player into each
SCREENS = [VIEWPORT, {"width": 1920, "height": 1080}]
# what presenter mode draws figure text at, at least (the page's body text is 22 px)
PRESENT_FONT_PX = 18
SERVER_START_S = 300  # a bound on the server listening, not a speed: imports take minutes at load ~40
DRAW_MS = 60_000
STEP_MS = 30_000
# Voilà sends a page once the lab has run in the page's kernel: as long as a Run All (lab 10 runs an app of its own)
RUN_ALL_MS = 300_000


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "04-failover.html"
    result = export_lab(LAB, out)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "export-04.json").write_text(
        json.dumps(
            {
                "bytes": result.bytes,
                "seconds": round(result.seconds, 1),
                "players": result.players,
                "figures": result.figures,
            }
        )
    )
    return result


@pytest.fixture
def browser_page(tmp_path, machine):
    """A chromium page whose every request leaves a record; ``allowed(url)`` decides which may load. On the
    ``throttled`` machine its CPU is throttled (`throttle_cpu`)."""
    executable = chromium_path()
    record: dict[str, list[str]] = {"blocked": [], "errors": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        page = context.new_page()
        # navigation, actions and waits for a condition take up to this long (a 10 MB page on a busy machine takes a
        # while); the throttled machine's bound is SLOW_FACTOR times longer
        page.set_default_timeout(DRAW_MS * (SLOW_FACTOR if machine == "throttled" else 1))
        if machine == "throttled":
            throttle_cpu(page)
        page.on("pageerror", lambda err: record["errors"].append(str(err)))
        page.on("console", lambda msg: msg.type == "error" and record["errors"].append(_console_error(msg, record)))

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


@pytest.fixture
def fresh_pages(machine):
    """``new_page(viewport)`` opens a page in a new browser context (nothing cached from an earlier load) that may load only
    loopback, ``data:`` and ``blob:`` URLs; returns the page and its record of blocked requests and errors. On the
    ``throttled`` machine each page's CPU is throttled (`throttle_cpu`)."""
    executable = chromium_path()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        contexts = []

        def new_page(viewport=VIEWPORT):
            record: dict[str, list[str]] = {"blocked": [], "errors": []}
            context = browser.new_context(viewport=viewport)
            contexts.append(context)
            page = context.new_page()
            page.set_default_timeout(DRAW_MS * (SLOW_FACTOR if machine == "throttled" else 1))
            if machine == "throttled":
                throttle_cpu(page)
            page.on("pageerror", lambda err: record["errors"].append(str(err)))
            page.on("console", lambda msg: msg.type == "error" and record["errors"].append(_console_error(msg, record)))

            def handler(r):
                url = r.request.url
                if url.startswith(("data:", "blob:")) or urlsplit(url).hostname in LOCAL_HOSTS:
                    r.continue_()
                else:
                    record["blocked"].append(url)
                    r.abort()

            context.route("**/*", handler)
            return page, record

        try:
            yield new_page
        finally:
            for context in contexts:
                context.close()
            browser.close()


def _console_error(msg, record) -> str:
    """The text of a console error; a failed load of a request this test blocked says so (it is the test's doing)."""
    url = (msg.location or {}).get("url", "")
    if msg.text.startswith("Failed to load resource") and url in record["blocked"]:
        return f"blocked by the test: {url}"
    return msg.text


def _page_errors(record) -> list[str]:
    return [e for e in record["errors"] if not e.startswith("blocked by the test: ")]


def _frame(player) -> int:
    return int(player.get_attribute("data-frame"))


def _figure_data(player) -> str:
    return player.evaluate("root => JSON.stringify(Array.from(root.querySelectorAll('.pl-view')).map(d => d.data))")


@pytest.mark.parametrize("machine", MODES, indirect=True)
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
            ".every(d => d.querySelector('.main-svg'))",
        )
    except PlaywrightError:
        page.screenshot(path=str(ARTIFACTS / "export-not-drawn.png"), full_page=True)
        pytest.fail(f"not every figure was drawn ({drawn.count()} svg); page errors: {record['errors']}")
    assert page.locator(".jp-CodeCell .jp-InputArea").count() == 0, "code is shown without --with-code"
    source = next(c.source for c in nbformat.read(LAB, as_version=4).cells if c.cell_type == "code")
    assert source.splitlines()[0] not in page.locator("body").inner_text(), "code is shown without --with-code"
    assert page.get_by_text("Lab 4", exact=False).first.is_visible(), "the teaching text is missing"
    page.screenshot(path=str(ARTIFACTS / "export-04.png"))

    # the play button of the first player runs through its frames
    first = players.nth(0)
    first.scroll_into_view_if_needed()
    start, before, label = _frame(first), _figure_data(first), first.locator(".pl-label").inner_text()
    first.locator(".updatemenu-button", has_text="play").click()
    page.wait_for_function(
        "el => Number(el.getAttribute('data-frame')) >= %d" % (start + 2), arg=first.element_handle()
    )
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
    page.wait_for_function(
        "el => Number(el.getAttribute('data-frame')) === %d" % (frames - 1), arg=second.element_handle()
    )
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


class PresentServer:
    """``pulsarlab present`` on a free loopback port with a known token (the CLI becomes the Voilà process)."""

    def __init__(self, notebook: Path) -> None:
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}/"
        ARTIFACTS.mkdir(exist_ok=True)
        self.log_path = ARTIFACTS / "present.log"
        self._log = open(self.log_path, "w")
        cmd = [
            sys.executable,
            "-m",
            "pulsarlab",
            "present",
            str(notebook),
            "--port",
            str(self.port),
            "--token",
            self.token,
        ]
        env = dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)

    def status(self, query: str = "") -> int:
        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(self.url + query, timeout=10) as resp:
                return resp.status
        except urllib.error.HTTPError as e:
            return e.code

    def wait_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(
                    f"pulsarlab present exited with {self.proc.returncode}:\n{self.log_path.read_text()[-3000:]}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.3)
        pytest.fail(f"pulsarlab present did not listen on {self.port} within {SERVER_START_S}s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            end_process(self.proc, timeout_s=30)
        self._log.close()


@pytest.fixture(scope="module")
def present_server():
    """One presenter server on lab 04 for the module's page loads (each load runs the lab in a kernel of its own)."""
    server = PresentServer(LAB)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(params=MANY_FIGURE_LABS, ids=lambda p: p.name[:2])
def present_many_figures(request):
    server = PresentServer(request.param)
    server.lab = request.param
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def _player_label(player) -> str:
    return player.locator(".widget-html-content", has_text="frame ").first.inner_text()


@pytest.mark.parametrize("machine", MODES, indirect=True)
def test_presenter_mode_hides_code_and_steps_with_the_arrow_keys(present_server, browser_page):
    page, route, record = browser_page
    route(lambda url: url.startswith(("data:", "blob:")) or urlsplit(url).hostname in LOCAL_HOSTS)
    assert present_server.status() in (302, 401, 403), "the presenter server answers without its token"

    page.goto(f"{present_server.url}?token={present_server.token}", wait_until="domcontentloaded")
    try:
        page.locator(".pulsarlab-player .js-plotly-plot .main-svg").first.wait_for()
    except PlaywrightError:
        page.screenshot(path=str(ARTIFACTS / "present-not-drawn.png"), full_page=True)
        pytest.fail(f"no player drawn; page errors: {record['errors']}\n{present_server.log_path.read_text()[-3000:]}")
    players = page.locator(".pulsarlab-player")
    assert players.count() == 2
    assert "pulsarlab-present" in page.evaluate("document.body.className")
    source = next(c.source for c in nbformat.read(LAB, as_version=4).cells if c.cell_type == "code")
    text = page.locator("body").inner_text()
    assert source.splitlines()[0] not in text, "the code is shown"
    assert page.locator(".jp-CodeCell .jp-InputArea-editor, .jp-CodeCell .highlight").count() == 0
    size = page.evaluate("parseFloat(getComputedStyle(document.querySelector('.jp-RenderedMarkdown p')).fontSize)")
    assert size >= 20, f"markdown text is {size}px, not projector-sized"

    # no focus anywhere: the keys go to the player that fills most of the window
    first_label = _player_label(players.nth(0))
    second = players.nth(1)
    second.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.mouse.move(5, 5)
    figure = second.locator(".js-plotly-plot").first
    label = _player_label(second)
    frame = int(label.split("frame ", 1)[1].split()[0])
    page.wait_for_function(_FIGURES_AT, arg=[second.element_handle(), frame])
    drawn = figure.inner_html()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "([el, f]) => el.innerText.includes('frame ' + (f + 1) + ' of')",
        arg=[second.element_handle(), frame],
    )
    assert _player_label(second) != label
    page.wait_for_function("([el, old]) => el.innerHTML !== old", arg=[figure.element_handle(), drawn])
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "([el, f]) => el.innerText.includes('frame ' + f + ' of')", arg=[second.element_handle(), frame]
    )
    page.keyboard.press("End")
    last = second.evaluate("el => el.innerText.match(/frame \\d+ of 0–(\\d+)/)[1]")
    page.wait_for_function(
        "([el, f]) => el.innerText.includes('frame ' + f + ' of')", arg=[second.element_handle(), last]
    )
    # the first player did not move
    assert _player_label(players.nth(0)) == first_label
    page.screenshot(path=str(ARTIFACTS / "present-04.png"))
    # a classroom without internet: the page asks for nothing beyond the presenter, and the play button's icon
    # comes from Voila's own bundle
    assert record["blocked"] == [], f"the presenter page asked the network for {record['blocked']}"
    icon_font = page.evaluate(
        "() => { const i = document.querySelector('.widget-play i.fa-play');"
        " return i && getComputedStyle(i, '::before').fontFamily; }"
    )
    assert icon_font and "Font Awesome" in icon_font, f"the play button's icon is drawn in {icon_font!r}"
    loaded = page.evaluate(
        "() => Array.from(document.fonts).some(f => f.family.includes('Font Awesome') && f.status === 'loaded')"
    )
    assert loaded, "the icon font did not load"
    assert _page_errors(record) == [], f"page errors: {_page_errors(record)}"


_LAST_FRAME = r"el => el.innerText.match(/frame \d+ of 0–(\d+)/)[1]"
_FIGURE_SVG = "d => Array.from(d.querySelectorAll('svg.main-svg')).map(svg => svg.outerHTML).join('')"


# every figure of a player has drawn frame f (a Player marks each figure with the frame it sent it: data-frame)
_FIGURES_AT = """([p, f]) => { const figures = Array.from(p.querySelectorAll('.pulsarlab-figure-widget'));
  return figures.length > 0 && figures.every(e => e.dataset.frame === String(f)); }"""


def _figures_state(player) -> list[str]:
    """What each plotly figure of a player draws: the SVG plotly made of it."""
    return player.evaluate(f"root => Array.from(root.querySelectorAll('.js-plotly-plot')).map({_FIGURE_SVG})")


def _players_made_by(source: str) -> int:
    """How many players a cell's code shows: ``Player(...)``, ``live.player()`` and a ``ForkView`` (two players)."""
    return len(re.findall(r"\bPlayer\(|\.player\(", source)) + 2 * len(re.findall(r"\bForkView\(", source))


@pytest.mark.parametrize("machine", MODES, indirect=True)
def test_presenter_page_with_many_figures_updates_every_figure_on_each_load(present_many_figures, fresh_pages, machine):
    """Several players or figures on one page: every FigureWidget's front end loads (no "[anywidget] Failed to
    initialize model."), each player's figures follow Home / End, and plotly's widget code is fetched once per page
    load."""
    server = present_many_figures
    name = server.lab.name[:2]
    cells = nbformat.read(server.lab, as_version=4).cells
    expected_players = sum(_players_made_by(c.source) for c in cells if c.cell_type == "code")
    url = f"{server.url}?token={server.token}"
    for load in range(PAGE_LOADS):
        page, record = fresh_pages()
        page.goto(
            url, wait_until="domcontentloaded", timeout=RUN_ALL_MS * (SLOW_FACTOR if machine == "throttled" else 1)
        )
        try:
            page.wait_for_function(
                "() => { const ps = document.querySelectorAll('.pulsarlab-player');"
                " return ps.length >= %d && Array.from(ps).every(p => p.querySelector('.js-plotly-plot .main-svg')); }"
                % expected_players,
            )
        except PlaywrightError:
            page.screenshot(path=str(ARTIFACTS / f"present-{name}-load{load}-not-drawn.png"), full_page=True)
            pytest.fail(f"load {load}: not every player drawn; page errors: {_page_errors(record)}")
        players = page.locator(".pulsarlab-player")
        assert players.count() == expected_players
        for i in range(players.count()):
            player = players.nth(i)
            player.evaluate("e => e.scrollIntoView({block: 'start'})")
            page.mouse.move(5, 5)
            # from the frame it opens on to the other end of its timeline (a live player opens on its last frame):
            # a single step may leave a view's picture as it was (a publish does not move a cursor), the whole
            # timeline changes every view
            last = int(player.evaluate(_LAST_FRAME))
            frame = int(_player_label(player).split("frame ", 1)[1].split()[0])
            # its figures' pictures once each has drawn the frame the label names
            page.wait_for_function(_FIGURES_AT, arg=[player.element_handle(), frame])
            before = _figures_state(player)
            assert before, f"load {load}: player {i} has no figure"
            target = 0 if frame == last else last
            page.keyboard.press("Home" if target == 0 else "End")
            page.wait_for_function(
                "([el, f]) => el.innerText.includes('frame ' + f + ' of')",
                arg=[player.element_handle(), target],
            )
            try:
                page.wait_for_function(_FIGURES_AT, arg=[player.element_handle(), target])
                page.wait_for_function(
                    "([el, old]) => Array.from(el.querySelectorAll('.js-plotly-plot'))"
                    f".map({_FIGURE_SVG}).every((svg, k) => svg !== old[k])",
                    arg=[player.element_handle(), before],
                )
            except PlaywrightError:
                page.screenshot(path=str(ARTIFACTS / f"present-{name}-load{load}-player{i}-stuck.png"))
                pytest.fail(
                    f"load {load}: player {i} went to frame {target} but a figure kept its picture (frames drawn: "
                    f"{player.evaluate(FIGURE_FRAMES_JS)}); page errors: {_page_errors(record)}"
                )
        fetched = page.evaluate(
            "performance.getEntriesByType('resource').filter(e => /pulsarlab\\/static\\/plotly-widget\\.[0-9a-f]{20}\\.js/"
            ".test(e.name)).length"
        )
        assert fetched == 1, f"load {load}: plotly's widget module was fetched {fetched} times"
        assert _page_errors(record) == [], f"load {load}: page errors: {_page_errors(record)}"
        assert [u for u in record["blocked"] if urlsplit(u).hostname in LOCAL_HOSTS] == []
        if load == 0:
            page.screenshot(path=str(ARTIFACTS / f"present-{name}.png"))
        page.close()


_PLAYERS_DRAWN = """() => { const ps = document.querySelectorAll('.pulsarlab-player');
  return ps.length > 0 && Array.from(ps).every(p => p.querySelector('.js-plotly-plot .main-svg')
    && p.querySelector('.widget-readout')); }"""
# the views of the page (cells with a box): their offsets in the scrolling container and heights
_VIEWS = """() => { const s = document.getElementById('rendered_cells');
  const origin = s.getBoundingClientRect().top - s.scrollTop;
  const views = Array.from(s.querySelectorAll('.jp-Cell')).map(c => c.getBoundingClientRect())
    .filter(r => r.height > 0).map(r => [Math.round(r.top - origin), Math.round(r.height)]);
  return {scrollTop: Math.round(s.scrollTop), height: s.clientHeight, views}; }"""
# a player's boxes as [left, top, right, bottom]: controls, the explanation line, figures
_PLAYER_BOXES = """p => { const box = e => { const r = e.getBoundingClientRect();
    return [Math.round(r.left), Math.round(r.top), Math.round(r.right), Math.round(r.bottom)]; };
  return {player: box(p),
    controls: Array.from(p.querySelectorAll('button, .widget-slider, .widget-readout, .widget-dropdown'))
      .filter(e => !e.closest('.js-plotly-plot') && e.getClientRects().length).map(box),
    label: box(Array.from(p.querySelectorAll('.widget-html-content')).find(e => e.innerText.includes('frame '))),
    figures: Array.from(p.querySelectorAll('.js-plotly-plot')).map(box),
    side: p.classList.contains('pl-side')}; }"""
_INSIDE = f"""([p, w, h]) => {{ const b = ({_PLAYER_BOXES})(p);
  return [...b.controls, b.label, ...b.figures].every(([l, t, r, bo]) => l >= 0 && t >= 0 && r <= w && bo <= h); }}"""
_TICK_SIZES = """() => [...new Set(Array.from(document.querySelectorAll('.xtick text, .ytick text'))
  .map(t => parseFloat(getComputedStyle(t).fontSize)))]"""
_FRAME = "p => Number(p.querySelector('.widget-readout').innerText.trim())"


def _scrolled_to(page, act) -> int:
    """Do ``act`` (a key press, a wheel turn) and return the scroller's offset once its scrolling has ended."""
    page.evaluate(
        "() => { window.__scrolled = undefined; const s = document.getElementById('rendered_cells');"
        " s.addEventListener('scrollend', () => { window.__scrolled = Math.round(s.scrollTop); }, {once: true}); }"
    )
    act()
    page.wait_for_function("() => window.__scrolled !== undefined", timeout=15_000)
    return page.evaluate("window.__scrolled")


@pytest.mark.parametrize("screen", SCREENS, ids=lambda v: f"{v['width']}x{v['height']}")
def test_presenter_one_view_snaps_and_every_player_fits_the_screen(present_server, fresh_pages, screen):
    """``?view=one``: every view is exactly one window high, PageDown and the wheel stop on view boundaries, each
    player's controls, explanation and figures are inside the window (lab 04's second player is 1,166 px tall as
    its views draw it), and figure ticks are drawn at projector size."""
    width, height = screen["width"], screen["height"]
    name = f"present-fit-04-{width}x{height}"
    page, record = fresh_pages(screen)
    # Voilà answers once the lab has run in the page's kernel
    page.goto(
        f"{present_server.url}?token={present_server.token}&view=one", wait_until="domcontentloaded", timeout=DRAW_MS
    )
    try:
        page.wait_for_function(_PLAYERS_DRAWN, timeout=DRAW_MS)
    except PlaywrightError:
        page.screenshot(path=str(ARTIFACTS / f"{name}-not-drawn.png"))
        pytest.fail(f"no player drawn; page errors: {_page_errors(record)}")

    state = page.evaluate(_VIEWS)
    assert state["height"] == height
    offsets = [top for top, _h in state["views"]]
    assert [h for _top, h in state["views"]] == [height] * len(offsets), f"views not one screen high: {state}"
    assert offsets == [k * height for k in range(len(offsets))], f"views do not follow each other: {state}"
    first = _scrolled_to(page, lambda: page.keyboard.press("PageDown"))
    assert first in offsets and first > 0, f"PageDown stopped at {first}, not on a view ({offsets[:4]}...)"
    page.mouse.move(width / 2, height / 2)
    second = _scrolled_to(page, lambda: page.mouse.wheel(0, 0.7 * height))
    assert second in offsets and second > first, f"the wheel stopped at {second}, not on the next view"

    players = page.locator(".pulsarlab-player")
    boxes = []
    for i in range(players.count()):
        player = players.nth(i)
        page.evaluate(
            "p => { const s = document.getElementById('rendered_cells'); const v = p.closest('.jp-Cell');"
            " s.scrollTop += v.getBoundingClientRect().top - s.getBoundingClientRect().top; }",
            player.element_handle(),
        )
        try:
            page.wait_for_function(_INSIDE, arg=[player.element_handle(), width, height], timeout=STEP_MS)
        except PlaywrightError:
            page.screenshot(path=str(ARTIFACTS / f"{name}-p{i}-overflows.png"))
            pytest.fail(f"player {i} does not fit {width}x{height}: {player.evaluate(_PLAYER_BOXES)}")
        boxes.append(player.evaluate(_PLAYER_BOXES))
        page.screenshot(path=str(ARTIFACTS / f"{name}-p{i}.png"))
        # a step changes the explanation (its lines) and the views' heights: the player fits again
        frame = player.evaluate(_FRAME)
        page.keyboard.press("ArrowLeft" if frame > 0 else "ArrowRight")
        page.wait_for_function(f"p => ({_FRAME})(p) !== {frame}", arg=player.element_handle(), timeout=STEP_MS)
        try:
            page.wait_for_function(_INSIDE, arg=[player.element_handle(), width, height], timeout=STEP_MS)
        except PlaywrightError:
            page.screenshot(path=str(ARTIFACTS / f"{name}-p{i}-overflows-after-a-step.png"))
            pytest.fail(f"after a step player {i} does not fit {width}x{height}: {player.evaluate(_PLAYER_BOXES)}")
    ticks = page.evaluate(_TICK_SIZES)
    (ARTIFACTS / f"{name}.json").write_text(json.dumps({"players": boxes, "tick_px": ticks}))
    assert ticks and min(ticks) >= PRESENT_FONT_PX, f"tick labels are {ticks} px in presenter mode"
    assert _page_errors(record) == [], f"page errors: {_page_errors(record)}"


def test_presenter_a_click_in_a_player_gives_it_the_keys(present_server, fresh_pages):
    """A click on a player's figure gives it the keys even when another player fills the window; a click on the
    other's explanation line gives them to that one."""
    page, record = fresh_pages()
    page.goto(f"{present_server.url}?token={present_server.token}", wait_until="domcontentloaded", timeout=DRAW_MS)
    page.wait_for_function(_PLAYERS_DRAWN, timeout=DRAW_MS)
    first, second = page.locator(".pulsarlab-player").nth(0), page.locator(".pulsarlab-player").nth(1)
    first.evaluate("e => e.scrollIntoView({block: 'start'})")
    first.locator(".js-plotly-plot .nsewdrag").first.click()
    page.wait_for_function("p => p.contains(document.activeElement)", arg=first.element_handle(), timeout=STEP_MS)
    second.evaluate("e => e.scrollIntoView({block: 'start'})")  # the second player fills the window now
    one, two = first.evaluate(_FRAME), second.evaluate(_FRAME)
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"p => ({_FRAME})(p) === {one + 1}", arg=first.element_handle(), timeout=STEP_MS)

    second.locator(".widget-html-content", has_text="frame ").first.click()
    page.wait_for_function("p => p.contains(document.activeElement)", arg=second.element_handle(), timeout=STEP_MS)
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"p => ({_FRAME})(p) === {two + 1}", arg=second.element_handle(), timeout=STEP_MS)
    assert first.evaluate(_FRAME) == one + 1, "the key stepped the player that lost the focus too"
    assert _page_errors(record) == [], f"page errors: {_page_errors(record)}"
