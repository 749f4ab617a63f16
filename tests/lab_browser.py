"""JupyterLab and headless chromium as the browser tests and ``bench/widgets.py`` drive them (no pytest here).

`LabServer` runs one ``jupyter lab`` on loopback with a random token and a config, runtime, settings and workspace
folder of its own; `CHROMIUM_FLAGS` are the flags Debian's chromium runs with here, `LOCAL_HOSTS` the hosts a page
may reach (every other request is blocked). A slow, busy machine made on purpose: `throttle_cpu` (chromium's CDP
``Emulation.setCPUThrottlingRate``) and `BusyProcesses` (CPU-bound processes beside the kernel). `KernelTraffic`
counts what a page receives over its kernel websockets.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


def end_process(proc: subprocess.Popen, timeout_s: float) -> None:
    """SIGTERM ``proc`` and wait up to ``timeout_s`` seconds for it to end; kill it if it has not."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# a slow, busy machine (issue 20): chromium's CPU 6 times slower, two processes that each keep a core busy
THROTTLE_RATE = 6
BUSY_PROCESSES = 2
BUSY_LIMIT_S = 3600  # coreutils' timeout ends a busy process that outlives its test run however that run ends
# a browser test run as the machine is, and throttled (the `machine` fixture of tests/conftest.py)
MODES = ["as-is", "throttled"]
# the throttled run's waits are this many times longer (each waits for an event; these are only their upper bounds)
SLOW_FACTOR = 3


# the frame each plotly figure of a player has drawn (a Player marks each figure with the frame it sent it:
# data-frame, set by the front end once plotly applied that frame's updates)
FIGURE_FRAMES_JS = "p => Array.from(p.querySelectorAll('.pulsarlab-figure-widget'), e => e.dataset.frame)"


class BusyProcesses:
    """``count`` processes that each spin one CPU beside the kernel and the browser while the context is open."""

    def __init__(self, count: int = BUSY_PROCESSES, limit_s: int = BUSY_LIMIT_S) -> None:
        self.count = count
        self.limit_s = limit_s
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> BusyProcesses:
        spin = [sys.executable, "-c", "while True: pass"]
        try:
            for _ in range(self.count):
                self.procs.append(subprocess.Popen(["timeout", str(self.limit_s), *spin]))
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for proc in self.procs:
            end_process(proc, timeout_s=5)
        self.procs = []

    def __exit__(self, *exc: object) -> None:
        self.stop()


def throttle_cpu(page: Any, rate: float = THROTTLE_RATE) -> Any:
    """Make chromium run ``page``'s scripts, layout and paint ``rate`` times slower (CDP); returns the session."""
    session = page.context.new_cdp_session(page)
    session.send("Emulation.setCPUThrottlingRate", {"rate": rate})
    return session


class KernelTraffic:
    """What a page receives over its kernel websockets: every frame's size, and the size of each widget's state
    message (the ``comm_open`` that creates its model in the browser; ``figure`` when it is a plotly figure's)."""

    def __init__(self, page: Any) -> None:
        self.bytes = 0
        self.frames = 0
        self.widget_states: list[int] = []
        self.figure_states: list[int] = []
        self.largest_message = 0
        self.large_messages: list[int] = []  # over 1 MB
        page.on("websocket", self._socket)

    def _socket(self, ws: Any) -> None:
        if "/api/kernels/" in ws.url:
            ws.on("framereceived", self._frame)

    def _frame(self, payload: str | bytes) -> None:
        data = payload.encode() if isinstance(payload, str) else payload
        self.bytes += len(data)
        self.frames += 1
        self.largest_message = max(self.largest_message, len(data))
        if len(data) > 1_000_000:
            self.large_messages.append(len(data))
        if b"comm_open" in data and b"jupyter.widget" in data:
            self.widget_states.append(len(data))
            if b"_widget_data" in data:
                self.figure_states.append(len(data))

    def summary(self) -> dict[str, int]:
        return {
            "ws_bytes": self.bytes,
            "ws_frames": self.frames,
            "widgets": len(self.widget_states),
            "widget_state_max": max(self.widget_states, default=0),
            "figures": len(self.figure_states),
            "figure_state_max": max(self.figure_states, default=0),
            "figure_state_bytes": sum(self.figure_states),
            "largest_message": self.largest_message,
        }


class LabServerError(RuntimeError):
    """``jupyter lab`` exited or did not answer in time (the message ends with its log's tail)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path: Path, lines: int = 40) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


class LabServer:
    """One `jupyter lab` on loopback with a random token, its own config, runtime, settings and workspaces; the
    user settings are ``settings`` (path under the settings folder -> JSON value), its output goes to ``log_path``."""

    def __init__(self, root_dir: Path, workdir: Path, settings: dict[str, Any], log_path: Path) -> None:
        self.root_dir = root_dir
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        settings_dir = workdir / "user-settings"
        for rel, value in settings.items():
            (settings_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (settings_dir / rel).write_text(json.dumps(value))
        (workdir / "config").mkdir()
        (workdir / "runtime").mkdir()
        log_path.parent.mkdir(parents=True, exist_ok=True)
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
            f"--LabApp.user_settings_dir={settings_dir}",
            f"--LabApp.workspaces_dir={workdir / 'workspaces'}",
            f"--FileCheckpoints.root_dir={workdir / 'checkpoints'}",
        ]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT, cwd=root_dir)

    def api(self, path: str, method: str = "GET") -> bytes:
        req = urllib.request.Request(
            f"{self.base}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.read()

    def wait_ready(self, timeout_s: float = 90) -> None:
        """Until ``/api/status`` answers; `LabServerError` when the server exits or ``timeout_s`` pass."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LabServerError(f"jupyter lab exited with {self.proc.returncode}:\n{log_tail(self.log_path)}")
            try:
                json.loads(self.api("/api/status"))
                return
            except (OSError, ValueError):
                time.sleep(0.5)
        raise LabServerError(
            f"jupyter lab did not answer on {self.base} within {timeout_s}s:\n{log_tail(self.log_path)}"
        )

    def shutdown_kernels(self) -> None:
        """End every session and its kernel (a Spark lab's kernel holds a JVM of about 1 GB)."""
        for session in json.loads(self.api("/api/sessions")):
            self.api(f"/api/sessions/{session['id']}", method="DELETE")
        for kernel in json.loads(self.api("/api/kernels")):
            self.api(f"/api/kernels/{kernel['id']}", method="DELETE")

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.api("/api/shutdown", method="POST")
            except OSError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                end_process(self.proc, timeout_s=15)
        self._log.close()
