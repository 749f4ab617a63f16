"""`pulsarlab watch` in headless chromium: a notebook in JupyterLab watches `pulsarlab serve` through its admin REST
API while lab 10's real `pulsar-client` application (labs/watch_app.py) runs against it; the live views update as
the workload moves the cursor; the notebook then saves the recording and replays it in a `Player`, which steps;
and `pulsarlab export` of a notebook that loads the recording gives a page whose player draws every view.

Every wait is on the state it means (the DOM showing a later poll, the workload's exit, the kernel idle with every
cell run), each bounded. The kernel is never kept busy while the live views update: the replay cell is added
and run once the workload is done.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from lab_browser import LabServer, end_process, free_port, log_tail
from playwright.sync_api import Error as PlaywrightError
from test_browser import (
    ARTIFACTS,
    DRAWN_JS,
    EXECUTION_STATE_JS,
    KERNEL_IDLE_MS,
    RUN_ALL_MS,
    SERVER_START_S,
    USER_SETTINGS,
    browser_context,  # noqa: F401  (a fixture)
)

import pulsarlab as pl

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "labs" / "watch_app.py"
LIVE_MS = 90_000
WORKLOAD_S = 120

# the live view's status line ("poll N · ..."), its figures' data, and whether they are drawn
LIVE_JS = """() => {
  const root = document.querySelector('.pulsarlab-watch');
  if (!root) return null;
  const status = root.querySelector('.pulsarlab-watch-findings');
  const m = status && status.innerText.match(/poll (\\d+)/);
  const plots = Array.from(root.querySelectorAll('.js-plotly-plot'));
  return {
    poll: m ? Number(m[1]) : -1,
    status: status ? status.innerText : '',
    drawn: plots.filter(p => p.querySelector('svg.main-svg')).length,
    plots: plots.length,
    data: JSON.stringify(plots.map(p => p.data)),
  };
}"""


def _replay_cell(out: Path) -> str:
    """What the test runs once the workload is done (the kernel stays free while the live views update)."""
    return (
        "watcher.poll()  # one poll after the workload, then stop\n"
        "live.stop()\n"
        f"saved = watcher.save({str(out)!r})\n"
        "recording = pl.load_timeline(saved)\n"
        "replay = Player(recording, default_views(subscription='workers'), start=len(recording) - 1)\n"
        "replay"
    )


# append a code cell to the open notebook and run it (JupyterLab's own commands)
RUN_NEW_CELL_JS = """async source => {
  const panel = window.jupyterapp.shell.currentWidget;
  const nb = panel.content;
  panel.model.sharedModel.insertCell(nb.widgets.length, {cell_type: 'code', source});
  nb.activeCellIndex = nb.widgets.length - 1;
  await window.jupyterapp.commands.execute('notebook:run-cell');
}"""


def _notebook(source: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _live_notebook(admin_url: str) -> nbformat.NotebookNode:
    return _notebook(
        "import pulsarlab as pl\n"
        "from pulsarlab.watch import AdminClient, Watcher\n"
        "from pulsarlab_widgets.live_watch import WatchViews, default_views\n"
        "from pulsarlab_widgets.player import Player\n\n"
        f"watcher = Watcher(AdminClient({admin_url!r}), 'orders', interval_s=1.0)\n"
        "live = WatchViews(watcher)\n"
        "live"
    )


def _replay_notebook(recording: Path) -> nbformat.NotebookNode:
    return _notebook(
        "import pulsarlab as pl\n"
        "from pulsarlab_widgets.live_watch import default_views\n"
        "from pulsarlab_widgets.player import Player\n\n"
        f"recording = pl.load_timeline({str(recording)!r})\n"
        "Player(recording, default_views(subscription='workers'), title='a watch of pulsarlab serve, replayed')"
    )


def _serve(port: int, admin_port: int, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "pulsarlab", "serve", "--port", str(port), "--admin-port", str(admin_port)]
    cmd += ["--version", "4.0", "--log-level", "warning"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the ready line, or "" when it exited
    if "listening on" not in line:
        end_process(proc, 10)
        pytest.fail(f"pulsarlab serve did not start: {line!r}\n{log_tail(log)}", pytrace=False)
    return proc


def test_watch_in_jupyterlab_follows_a_workload_and_the_recording_replays_and_exports(
    tmp_path,
    browser_context,  # noqa: F811
):
    ARTIFACTS.mkdir(exist_ok=True)
    port, admin_port = free_port(), free_port()
    serve = _serve(port, admin_port, ARTIFACTS / "watch-serve.log")
    lab_server = None
    workload = None
    try:
        admin = f"http://127.0.0.1:{admin_port}"
        # the topic exists before the watch starts (as on a cluster); the application subscribes later
        req = urllib.request.Request(f"{admin}/admin/v2/persistent/public/default/orders", method="PUT")
        urllib.request.urlopen(req, timeout=10).close()
        out = tmp_path / "watch.plt.jsonl.gz"
        nbformat.write(_live_notebook(admin), tmp_path / "watch.ipynb")

        lab_server = LabServer(tmp_path, tmp_path / "jl", USER_SETTINGS, ARTIFACTS / "watch-jupyterlab.log")
        lab_server.wait_ready(SERVER_START_S)
        pg = browser_context.new_page()
        pg.goto(f"{lab_server.base}/lab/workspaces/watch/tree/watch.ipynb?token={lab_server.token}")
        pg.get_by_text("Python 3 (ipykernel) | Idle", exact=True).wait_for(state="visible", timeout=KERNEL_IDLE_MS)
        pg.get_by_role("menuitem", name="Run", exact=True).click()
        pg.get_by_role("menuitem", name="Run All Cells", exact=True).click()

        # the live views are up and polling: the status line and the backlog figure (the views show the topic's
        # subscription once the application subscribes)
        try:
            pg.wait_for_function(
                f"() => {{ const s = ({LIVE_JS})(); return s && s.poll >= 1 && s.drawn >= 1 && s.plots >= 4; }}",
                timeout=LIVE_MS,
            )
        except PlaywrightError:
            pg.screenshot(path=str(ARTIFACTS / "watch-live-not-drawn.png"))
            pytest.fail(f"the live views were not drawn: {pg.evaluate(LIVE_JS)}", pytrace=False)
        before = pg.evaluate(LIVE_JS)

        # --hold: nacker keeps one redelivered message until a line on stdin, so the consumers are still there
        # however slowly the views poll (on a quick machine the whole workload fits between two polls)
        workload = subprocess.Popen(
            [sys.executable, str(APP), f"pulsar://127.0.0.1:{port}", "--messages", "40", "--hold"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert workload.stdout is not None and workload.stdin is not None
        head = []
        for line in workload.stdout:  # until nacker holds its message (or the app ends without holding)
            head.append(line)
            if line.startswith("holding "):
                break
        assert head and head[-1].startswith("holding "), "".join(head)
        # while it holds, the live views move on: a later poll, and figures showing the application's consumers
        try:
            pg.wait_for_function(
                f"""([poll, data]) => {{ const s = ({LIVE_JS})();
                    return s && s.poll > poll && s.data !== data && s.status.includes('poll')
                        && s.data.includes('steady') && s.data.includes('nacker'); }}""",
                arg=[before["poll"], before["data"]],
                timeout=LIVE_MS,
                polling=200,
            )
        except PlaywrightError:
            pg.screenshot(path=str(ARTIFACTS / "watch-live-not-updated.png"))
            pytest.fail(f"the live views did not show the workload: {pg.evaluate(LIVE_JS)}", pytrace=False)
        during = pg.evaluate(LIVE_JS)
        rest, _ = workload.communicate("\n", timeout=WORKLOAD_S)  # let go of the held message
        printed = "".join(head) + rest
        assert workload.returncode == 0, printed
        assert "all 40 messages acknowledged" in printed
        pg.evaluate(RUN_NEW_CELL_JS, _replay_cell(out))

        try:
            pg.wait_for_function(
                f"""() => {{ const s = ({EXECUTION_STATE_JS})();
                    return s && s.status === 'idle' && s.cells.every(c => c.count !== null || c.errors.length); }}""",
                timeout=RUN_ALL_MS,
                polling=500,
            )
        except PlaywrightError:
            pg.screenshot(path=str(ARTIFACTS / "watch-run-all-timeout.png"))
            pytest.fail(f"the notebook did not finish: {pg.evaluate(EXECUTION_STATE_JS)}", pytrace=False)
        cells = pg.evaluate(EXECUTION_STATE_JS)["cells"]
        assert not [c for c in cells if c["errors"]], cells
        pg.wait_for_function(
            f"() => {{ const d = ({DRAWN_JS})(); return d.players === 1 && d.playersUndrawn === 0; }}", timeout=LIVE_MS
        )
        after = pg.evaluate(LIVE_JS)
        assert after["poll"] > during["poll"] and "workers" in after["data"]
        assert "steady" in after["data"] and "nacker" in after["data"]  # the consumers' lines

        # the replay steps back: its slider moves and its figures follow
        player = pg.locator(".pulsarlab-player").first
        player.scroll_into_view_if_needed()
        readout = player.locator(".widget-readout")
        last = readout.inner_text().strip()
        player.get_by_role("button", name="◀ back", exact=True).click()
        pg.wait_for_function(
            "([el, last]) => el.innerText.trim() !== last", arg=[readout.element_handle(), last], timeout=LIVE_MS
        )
        pg.screenshot(path=str(ARTIFACTS / "watch-jupyterlab.png"))
        pg.close()

        recording = pl.load_timeline(out)
        assert len(recording) >= 3 and recording.kinds()[0] == "admin_polled"
        seen = {c.name for f in recording for _t, s in f.snapshot.subscriptions() for c in s.consumers}
        assert seen >= {"steady", "nacker"}, seen  # the application's consumers, while it ran

        # pulsarlab export of a notebook that loads the recording: an offline page whose player draws every view
        nbformat.write(_replay_notebook(out), tmp_path / "replay.ipynb")
        started = time.monotonic()
        exported = subprocess.run(
            [sys.executable, "-m", "pulsarlab", "export", "replay.ipynb", "--out", "replay.html", "--max-frames", "0"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        export_s = time.monotonic() - started
        assert exported.returncode == 0, exported.stderr
        assert "1 player(s)" in exported.stdout, exported.stdout
        page = browser_context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.goto(f"{lab_server.base}/files/replay.html?token={lab_server.token}")
        page.wait_for_function(
            "() => document.querySelectorAll('.pulsarlab-static-player .pl-view .main-svg').length >= 3",
            timeout=LIVE_MS,
        )
        label = page.locator(".pulsarlab-static-player .pl-label").first.inner_text()
        assert f"of 0–{len(recording) - 1}" in label
        page.screenshot(path=str(ARTIFACTS / "watch-exported.png"), full_page=True)
        assert errors == [] and browser_context.blocked == [], (errors, browser_context.blocked)
        page.close()
    finally:
        if workload is not None and workload.poll() is None:
            end_process(workload, 10)
        if lab_server is not None:
            lab_server.shutdown_kernels()
            lab_server.stop()
        end_process(serve, 15)
    (ARTIFACTS / "watch-browser.json").write_text(
        json.dumps({"polls": len(recording), "export_s": round(export_s, 1)}) + "\n"
    )
