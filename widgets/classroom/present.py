"""`pulsarlab present`: a lab served as an app for a projector: code hidden, big text, players on the keyboard.

Models no Pulsar class. Runs Voilà (voila-dashboards/voila, a Jupyter project): it executes the notebook in a
fresh kernel per visitor, shows the markdown and the outputs with the code stripped, and keeps every ipywidget live
(the players step, FigureWidgets update). Voilà is chosen because it renders exactly the notebook the lab ships
(no rewrite as a dashboard, unlike Panel/Streamlit/Solara apps), is maintained under the Jupyter umbrella with
JupyterLab's own widget manager, and is templated with nbconvert's Jinja templates, which is where the presenter
look lives (``templates/voila/templates/pulsarlab-present``): projector-sized fonts, a hint line, and "one view per
screen" (key ``v`` or ``?view=one``: every cell fills the window and scrolling snaps between them). The keys
→ / ← / space / Home / End reach the player that fills most of the window (`pulsarlab_widgets.keys`).

Figures load plotly's widget code once per page, not once per figure: Voilà runs with the bundle served as a static
file (`pulsarlab_widgets.plotly_server`, the same handler the Jupyter server runs for JupyterLab), the template starts
loading it while the kernel still executes the lab, and every FigureWidget of the kernel uses it
(`pulsarlab_widgets.classroom.present_kernel`, started by `kernel_startup`).

The server listens on 127.0.0.1 and asks for a random token unless told otherwise; a non-loopback address needs
``allow_remote`` (each visitor's page runs the lab's code in a kernel on this machine).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import secrets
import shlex
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from pulsarlab_widgets.classroom import present_kernel
from pulsarlab_widgets.classroom.export import LabError, read_lab, write_atomically
from pulsarlab_widgets.classroom.present_kernel import PRESENT_ENV
from pulsarlab_widgets.plotly_module import bundle_path

TEMPLATE = "pulsarlab-present"
TEMPLATES = Path(__file__).with_name("templates")

PRESENT_KERNEL_MODULE = present_kernel.__name__


@dataclass(frozen=True)
class Presentation:
    """How to start the presenter server: the command, its environment additions, its folder and the URL."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    url: str


def kernel_startup() -> Path:
    """The kernel start-up file (``PYTHONSTARTUP``) that makes every FigureWidget use the page's served plotly module;
    written once under the user's cache folder, named by its contents, so another version of the lab presenting on
    the same machine (whose file imports another module) never rewrites the one this version's kernels run."""
    bundle = bundle_path()
    if not bundle.is_file():
        raise LabError(f"plotly's widget bundle is missing ({bundle}); reinstall plotly")
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pulsarlab" / "present"
    text = f"__import__({PRESENT_KERNEL_MODULE!r})\n"
    startup = root / f"kernel_startup-{hashlib.sha256(text.encode()).hexdigest()[:12]}.py"
    if not startup.exists() or startup.read_text() != text:
        root.mkdir(parents=True, exist_ok=True)
        # run by each kernel's IPython (PYTHONSTARTUP) without leaving a name in the lab's namespace
        write_atomically(startup, text)
    return startup


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
    """The Voilà command (Voilà serving plotly's widget bundle, `pulsarlab_widgets.plotly_server`) that presents
    ``notebook`` (checked to be a lab) on ``host:port`` (0: a free port)."""
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
        "pulsarlab_widgets.plotly_server",
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
    paths = (str(TEMPLATES), os.environ.get("JUPYTER_PATH"))
    env = {
        "JUPYTER_PATH": os.pathsep.join(p for p in paths if p),
        "PYTHONSTARTUP": str(kernel_startup()),
        PRESENT_ENV: "1",
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


__all__ = ["Presentation", "kernel_startup", "presentation", "run"]
