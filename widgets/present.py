"""`pulsarlab present`: a lab served as an app for a projector: code hidden, big text, players on the keyboard.

Models no Pulsar class. Runs Voilà (voila-dashboards/voila, a Jupyter project): it executes the notebook in a
fresh kernel per visitor, shows the markdown and the outputs with the code stripped, and keeps every ipywidget live
(the players step, FigureWidgets update). Voilà is chosen because it renders exactly the notebook the lab ships
(no rewrite as a dashboard, unlike Panel/Streamlit/Solara apps), is maintained under the Jupyter umbrella with
JupyterLab's own widget manager, and is templated with nbconvert's Jinja templates, which is where the presenter
look lives (``templates/voila/templates/pulsarlab-present``): projector-sized fonts, a hint line, and "one view per
screen" (key ``v`` or ``?view=one``: every cell fills the window and scrolling snaps between them). The keys
→ / ← / space / Home / End reach the player that fills most of the window (`pulsarlab_widgets.keys`).

Figures load plotly's widget code once per page, not once per figure: the bundle is served as a static file
(`plotly_assets`), the template preloads it and the kernel's FigureWidgets reuse it (`pulsarlab_widgets.present_kernel`
says why: anywidget otherwise drops the updates of figures that loaded late).

The server listens on 127.0.0.1 and asks for a random token unless told otherwise; a non-loopback address needs
``allow_remote`` (each visitor's page runs the lab's code in a kernel on this machine).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import secrets
import shlex
import shutil
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from pulsarlab_widgets.export import LabError, read_lab
from pulsarlab_widgets.plotly_module import SERVED_ENV, bundle_path

TEMPLATE = "pulsarlab-present"
TEMPLATES = Path(__file__).with_name("templates")
# where the page finds plotly's widget module (the template preloads the same path)
PLOTLY_MODULE = f"voila/templates/{TEMPLATE}/static/plotly-widget.js"


@dataclass(frozen=True)
class Presentation:
    """How to start the presenter server: the command, its environment additions, its folder and the URL."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    url: str


def plotly_assets() -> Path:
    """A Jupyter data folder holding plotly's widget bundle at the presenter template's static path, plus the kernel
    start-up file; made once per plotly bundle under the user's cache folder (a hard link, or a copy where links fail)."""
    bundle = bundle_path()
    if not bundle.is_file():
        raise LabError(f"plotly's widget bundle is missing ({bundle}); reinstall plotly")
    key = hashlib.sha256(f"{bundle.resolve()}:{bundle.stat().st_size}:{bundle.stat().st_mtime_ns}".encode())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = cache / "pulsarlab" / "present" / key.hexdigest()[:16]
    static = root / "voila" / "templates" / TEMPLATE / "static"
    target = static / "plotly-widget.js"
    startup = root / "kernel_startup.py"
    if target.exists() and startup.exists():
        return root
    static.mkdir(parents=True, exist_ok=True)
    partial = static / f".plotly-widget.{os.getpid()}.js"
    try:
        os.link(bundle, partial)  # Voilà's static handler refuses symbolic links out of its folders
    except OSError:
        shutil.copyfile(bundle, partial)
    os.replace(partial, target)
    partial = root / f".kernel_startup.{os.getpid()}.py"
    # run by each kernel's IPython (PYTHONSTARTUP) without leaving a name in the lab's namespace
    partial.write_text('__import__("pulsarlab_widgets.present_kernel")\n')
    os.replace(partial, startup)
    return root


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def presentation(
    notebook: Path | str,
    port: int = 8866,
    host: str = "127.0.0.1",
    token: str | None = None,
    no_token: bool = False,
    allow_remote: bool = False,
    one_view: bool = False,
) -> Presentation:
    """The Voilà command that presents ``notebook`` (checked to be a lab) on ``host:port`` (0: a free port);
    prepares the served plotly module (`plotly_assets`) on the way."""
    notebook = Path(notebook)
    read_lab(notebook)
    if not allow_remote and not _loopback(host):
        raise LabError(
            f"--host {host} is not a loopback address: the presented lab runs code on this machine "
            "for every visitor; pass --allow-remote to serve it to the network anyway"
        )
    if not 0 <= port <= 65535:
        raise LabError(f"--port must be 0..65535, got {port}")
    if no_token and token:
        raise LabError("--no-token and --token exclude each other")
    port = port or free_port(host)
    token = "" if no_token else (token or secrets.token_urlsafe(24))
    argv = [
        sys.executable,
        "-m",
        "voila",
        notebook.name,
        f"--Voila.ip={host}",
        f"--port={port}",
        "--Voila.port_retries=0",
        "--no-browser",
        f"--template={TEMPLATE}",
        "--strip_sources=True",
        "--theme=light",
        f"--Voila.token={token}",
    ]
    assets = plotly_assets()
    paths = (str(TEMPLATES), str(assets), os.environ.get("JUPYTER_PATH"))
    env = {
        "JUPYTER_PATH": os.pathsep.join(p for p in paths if p),
        "PYTHONSTARTUP": str(assets / "kernel_startup.py"),
        SERVED_ENV: PLOTLY_MODULE,
    }
    shown = f"[{host}]" if ":" in host else host
    query = [f"token={token}"] if token else []
    if one_view:
        query.append("view=one")
    url = f"http://{shown}:{port}/" + ("?" + "&".join(query) if query else "")
    return Presentation(argv, env, notebook.resolve().parent, url)


def run(p: Presentation) -> int:
    """Start the server and replace this process with it (Ctrl-C stops it)."""
    print(f"pulsarlab present: open {p.url}", flush=True)
    print(f"pulsarlab present: {shlex.join(p.argv[2:])}", flush=True)
    os.chdir(p.cwd)
    env = dict(os.environ, **p.env)
    os.execve(p.argv[0], p.argv, env)
    return 1  # pragma: no cover  (execve does not return)


__all__ = ["PLOTLY_MODULE", "Presentation", "plotly_assets", "presentation", "run"]
