"""The Key_Shared lab opens in JupyterLab, runs all cells in headless Debian chromium and draws its figures."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
LABS = REPO / "labs"
NOTEBOOK = "01-key-shared.ipynb"
FIGURE_TITLES = ("Consistent-hash ring", "Hash ranges")
ARTIFACTS = REPO / ".test-artifacts"
SCREENSHOT = REPO / "docs" / "screenshot-lab.png"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
SERVER_START_S = 90
KERNEL_IDLE_MS = 180_000
RUN_ALL_MS = 600_000
USER_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}

# Finished when every non-empty code cell has an execution count or an output holds an error, and the kernel is idle.
EXECUTION_STATE_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.context) return null;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = [];
  for (const cell of panel.context.model.cells) {
    if (cell.type !== 'code') continue;
    const errors = [];
    for (let i = 0; i < cell.outputs.length; i++) {
      const out = cell.outputs.get(i).toJSON();
      if (out.output_type === 'error') errors.push(out.ename + ': ' + out.evalue);
    }
    cells.push({source: cell.sharedModel.getSource(), count: cell.executionCount, errors});
  }
  return {status: kernel ? kernel.status : 'no kernel', cells};
}"""


def chromium_path() -> str:
    path = shutil.which("chromium") or ("/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None)
    if path is None:
        pytest.fail(
            "Debian's chromium is not installed (no `chromium` on PATH, no /usr/bin/chromium): "
            "run `make chromium` (apt-get install chromium) or `make test`",
            pytrace=False,
        )
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _log_tail(path: Path, lines: int = 40) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


class LabServer:
    def __init__(self, root_dir: Path, workdir: Path) -> None:
        self.root_dir = root_dir
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        settings = workdir / "user-settings"
        for rel, value in USER_SETTINGS.items():
            (settings / rel).parent.mkdir(parents=True, exist_ok=True)
            (settings / rel).write_text(json.dumps(value))
        (workdir / "config").mkdir()
        (workdir / "runtime").mkdir()
        ARTIFACTS.mkdir(exist_ok=True)
        self.log_path = ARTIFACTS / "jupyterlab.log"
        env = dict(
            os.environ,
            JUPYTER_CONFIG_DIR=str(workdir / "config"),
            JUPYTER_RUNTIME_DIR=str(workdir / "runtime"),
            JUPYTER_DATA_DIR=str(workdir / "data"),
            SPARK_LOCAL_IP="127.0.0.1",
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
            PYDEVD_DISABLE_FILE_VALIDATION="1",
        )
        cmd = [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={root_dir}",
            "--LabApp.extension_manager=readonly",
            "--LabApp.expose_app_in_browser=True",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={workdir / 'workspaces'}",
            f"--FileCheckpoints.root_dir={workdir / 'checkpoints'}",
        ]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT, cwd=root_dir)

    def api(self, path: str, method: str = "GET") -> bytes:
        req = urllib.request.Request(
            f"{self.base}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.read()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(
                    f"jupyter lab exited with {self.proc.returncode}:\n{_log_tail(self.log_path)}", pytrace=False
                )
            try:
                json.loads(self.api("/api/status"))
                return
            except (OSError, ValueError):
                time.sleep(0.5)
        pytest.fail(f"jupyter lab did not answer on {self.base} within {SERVER_START_S}s:\n{_log_tail(self.log_path)}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.api("/api/shutdown", method="POST")
            except OSError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self._log.close()


@pytest.fixture
def lab_server(tmp_path):
    server = LabServer(LABS, tmp_path)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture
def page(tmp_path):
    executable = chromium_path()
    blocked: list[str] = []
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=executable,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 1000},
        )

        def only_local(route):
            url = route.request.url
            host = urlsplit(url).hostname
            if url.startswith(("data:", "blob:")) or host in LOCAL_HOSTS:
                route.continue_()
            else:
                blocked.append(url)
                route.abort()

        context.route("**/*", only_local)
        pg = context.pages[0] if context.pages else context.new_page()
        console: list[str] = []
        pg.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
        pg.on("pageerror", lambda err: console.append(f"pageerror: {err}"))
        try:
            yield pg
        finally:
            ARTIFACTS.mkdir(exist_ok=True)
            (ARTIFACTS / "browser-console.log").write_text(
                "\n".join(console + [f"blocked: {u}" for u in blocked]) + "\n"
            )
            context.close()


def _screenshot(pg, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    pg.screenshot(path=str(path))
    return path


def _wait_for_run_all(pg) -> list[dict]:
    try:
        pg.wait_for_function(
            f"""() => {{
              const s = ({EXECUTION_STATE_JS})();
              if (!s || s.status !== 'idle') return false;
              const code = s.cells.filter(c => c.source.trim());
              return code.some(c => c.errors.length) || code.every(c => c.count !== null);
            }}""",
            timeout=RUN_ALL_MS,
            polling=500,
        )
    except PlaywrightError as exc:
        _screenshot(pg, "lab-timeout.png")
        state = pg.evaluate(EXECUTION_STATE_JS)
        pytest.fail(f"Run All did not finish: {exc}\nstate: {json.dumps(state)[:3000]}", pytrace=False)
    return pg.evaluate(EXECUTION_STATE_JS)["cells"]


def test_lab_runs_and_draws_key_shared_figures(lab_server, page):
    notebook = LABS / NOTEBOOK
    assert notebook.is_file(), f"{notebook} is missing"
    stored = notebook.read_bytes()

    page.goto(f"{lab_server.base}/lab/tree/{NOTEBOOK}?token={lab_server.token}", wait_until="domcontentloaded")
    try:
        page.get_by_text("Python 3 (ipykernel) | Idle", exact=True).wait_for(state="visible", timeout=KERNEL_IDLE_MS)
    except PlaywrightError:
        _screenshot(page, "lab-no-kernel.png")
        pytest.fail(
            f"the status bar never read 'Python 3 (ipykernel) | Idle'\n{_log_tail(lab_server.log_path)}", pytrace=False
        )

    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    cells = _wait_for_run_all(page)

    failed = [c for c in cells if c["errors"]]
    assert not failed, "cells raised in JupyterLab:\n" + "\n\n".join(
        f"{c['source']}\n-> {'; '.join(c['errors'])}" for c in failed
    )
    unrun = [c["source"][:80] for c in cells if c["source"].strip() and c["count"] is None]
    assert not unrun, f"cells left unexecuted: {unrun}"

    titles_drawn = page.locator(".js-plotly-plot .gtitle")
    figures = {}
    for title in FIGURE_TITLES:
        found = page.locator(".js-plotly-plot").filter(has=page.locator(".gtitle", has_text=title)).first
        try:
            found.wait_for(state="attached", timeout=60_000)
        except PlaywrightError:
            _screenshot(page, "lab-no-figure.png")
            pytest.fail(
                f"no plotly figure titled {title!r}; titles drawn: {titles_drawn.all_text_contents()}", pytrace=False
            )
        assert found.locator("svg.main-svg").count() >= 1, f"the figure titled {title!r} has no SVG"
        figures[title] = found
    (ARTIFACTS / "figure-titles.txt").write_text("\n".join(titles_drawn.all_text_contents()) + "\n")

    figures[FIGURE_TITLES[0]].evaluate("e => e.scrollIntoView({block: 'center'})")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    shot = _screenshot(page, "screenshot-lab.png")
    if not SCREENSHOT.exists() or os.environ.get("PULSARLAB_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)

    assert notebook.read_bytes() == stored, f"JupyterLab rewrote {notebook}"
