"""`pulsarlab export`: a lab executed and written as one self-contained HTML page that works without Python.

Models no Pulsar class. Runs the notebook top to bottom in a fresh kernel (nbclient), then asks that kernel for a
static form of every widget it displayed: a `Player` becomes plotly figures with its frames, a slider and a play
button (`pulsarlab_widgets.classroom.animation`), a FigureWidget its figure, an HTML widget its text, a box its children;
controls that need a kernel (buttons, sliders outside a player) become a short note. Plotly figures shown with
``fig.show()`` are drawn by the same page script. nbconvert's HTML exporter writes the page with JupyterLab's look
through the template ``templates/pulsarlab_export``, which loads nothing from the network (no require.js, MathJax,
mermaid or widget manager from a CDN) and inlines plotly.js once. Code cells are hidden unless ``with_code``.

Simplifies: the labs use no LaTeX, so the page carries no MathJax ($…$ would show as typed); standard error
(warnings) is left out of the page. The output is written to a temporary file next to the target and renamed, so
a failed export leaves no half-written page.
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
PLOTLY_MIME = "application/vnd.plotly.v1+json"
STATIC_MIME = "application/vnd.pulsarlab.static-widgets+json"
TEMPLATES = Path(__file__).with_name("templates")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
LAB_IMPORT = re.compile(r"^\s*(?:from|import)\s+pulsarlab(?:_widgets)?\b", re.MULTILINE)
CELL_TIMEOUT_S = 900
NEEDS_KERNEL = (
    '<p class="pulsarlab-static-note">(an interactive control: it works in the lab with a running kernel, '
    "<code>make lab</code>)</p>"
)

_SETUP_CELL = "import plotly.io as _pio\n_pio.renderers.default = 'plotly_mimetype'\ndel _pio"
_COLLECT_CELL = (
    "from pulsarlab_widgets.classroom.export import publish_static_widgets\n"
    "publish_static_widgets({ids!r}, {max_frames!r})"
)


class LabError(Exception):
    """A lab that cannot be exported or presented: a missing or non-lab notebook, a cell that fails, a bad target."""


@dataclass(frozen=True)
class ExportResult:
    notebook: Path
    out: Path
    bytes: int
    seconds: float
    players: int
    figures: int


# -- kernel side ------------------------------------------------------------------------------------------------
def static_widget_html(widget: Any, max_frames: int | None = 200) -> str:
    """HTML that stands for ``widget`` in a page without a kernel (a short note for a control that needs one)."""
    import ipywidgets as widgets
    import plotly.graph_objects as go

    from pulsarlab_widgets.classroom.animation import figure_html, player_html
    from pulsarlab_widgets.keys import PlayerKeys
    from pulsarlab_widgets.player import Player

    if isinstance(widget, Player):
        return player_html(widget, max_frames=max_frames)
    if isinstance(widget, go.FigureWidget):
        return figure_html(go.Figure(widget))
    if isinstance(widget, PlayerKeys):
        return ""
    if isinstance(widget, (widgets.HTML, widgets.HTMLMath)):
        return f"<div>{widget.value}</div>"
    if isinstance(widget, widgets.Label):
        return f"<div>{html.escape(str(widget.value))}</div>"
    if isinstance(widget, widgets.Output):
        return "".join(_output_html(o) for o in widget.outputs)
    if isinstance(widget, widgets.Box):
        inner = "".join(static_widget_html(c, max_frames) for c in widget.children)
        while NEEDS_KERNEL * 2 in inner:  # a row of controls gets one note
            inner = inner.replace(NEEDS_KERNEL * 2, NEEDS_KERNEL)
        return inner
    if isinstance(widget, (widgets.ValueWidget, widgets.Button)):
        return NEEDS_KERNEL
    return ""


def _output_html(output: dict) -> str:
    from pulsarlab_widgets.classroom.animation import figure_html

    if output.get("output_type") == "stream":
        return "" if output.get("name") == "stderr" else f"<pre>{html.escape(output.get('text', ''))}</pre>"
    data = output.get("data") or {}
    if PLOTLY_MIME in data:
        return figure_html(data[PLOTLY_MIME])
    if WIDGET_MIME in data:
        return _static_for_id(data[WIDGET_MIME].get("model_id"))
    if "text/html" in data:
        return data["text/html"]
    if "text/plain" in data:
        return f"<pre>{html.escape(data['text/plain'])}</pre>"
    return ""


def _static_for_id(model_id: Any, max_frames: int | None = 200) -> str:
    from ipywidgets.widgets.widget import _instances

    widget = _instances.get(model_id)
    if widget is None:
        return NEEDS_KERNEL
    return static_widget_html(widget, max_frames) or NEEDS_KERNEL


def publish_static_widgets(model_ids: list[str], max_frames: int | None = 200) -> None:
    """Display (in the exporting kernel) the static HTML of each widget id, for the exporter to put in its place."""
    from IPython.display import display

    display({STATIC_MIME: {mid: _static_for_id(mid, max_frames) for mid in model_ids}}, raw=True)


# -- exporter side ------------------------------------------------------------------------------------------------
def read_lab(path: Path) -> Any:
    """The notebook at ``path`` if it is a lab: a Jupyter notebook whose code imports pulsarlab."""
    import nbformat

    if not path.exists():
        raise LabError(f"{path}: no such file")
    if not path.is_file():
        raise LabError(f"{path}: not a file")
    if path.suffix != ".ipynb":
        raise LabError(f"{path}: not a notebook (a lab is an .ipynb file, e.g. labs/01-key-shared.ipynb)")
    try:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
    except Exception as e:  # nbformat raises JSON, validation and reader errors of several kinds
        raise LabError(f"{path}: not a readable Jupyter notebook ({type(e).__name__}: {e})") from None
    if not any(c.cell_type == "code" and LAB_IMPORT.search(c.source) for c in nb.cells):
        raise LabError(f"{path}: not a pulsarlab lab (no code cell imports pulsarlab)")
    return nb


def _widget_ids(nb: Any) -> list[str]:
    ids = []
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            mid = (out.get("data") or {}).get(WIDGET_MIME, {}).get("model_id")
            if mid:
                ids.append(mid)
    return ids


def kernel_transport(folder: str) -> Any:
    """The kernel's channels as local (IPC) sockets in ``folder`` where the system has them: over TCP the kernel
    warns on the export's terminal that its traffic is not encrypted, although it listens on loopback only."""
    from traitlets.config import Config

    if os.name != "posix":
        return Config()
    # an absolute socket path: the kernel runs in the lab's folder, the export in another
    return Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(folder, "kernel")}})


def execute(nb: Any, cwd: Path, timeout: int = CELL_TIMEOUT_S, max_frames: int | None = 200) -> dict[str, str]:
    """Run ``nb`` in place in a fresh kernel started in ``cwd``; the static HTML of every widget it displayed."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    for key, value in (
        ("SPARK_LOCAL_IP", "127.0.0.1"),
        ("PYSPARK_PYTHON", sys.executable),
        ("PYSPARK_DRIVER_PYTHON", sys.executable),
        ("PYDEVD_DISABLE_FILE_VALIDATION", "1"),
    ):
        os.environ.setdefault(key, value)
    nb.cells.insert(0, nbformat.v4.new_code_cell(_SETUP_CELL))
    sockets = tempfile.TemporaryDirectory(prefix="pulsarlab-kernel-")
    client = NotebookClient(
        nb,
        config=kernel_transport(sockets.name),
        kernel_name="python3",
        timeout=timeout,
        startup_timeout=180,
        allow_errors=False,
        record_timing=False,
        resources={"metadata": {"path": str(cwd)}},
    )
    current = {"index": 0}
    client.on_cell_start = lambda cell, cell_index: current.update(index=cell_index)
    try:
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
            collect = nbformat.v4.new_code_cell(_COLLECT_CELL.format(ids=_widget_ids(nb), max_frames=max_frames))
            nb.cells.append(collect)
            client.execute_cell(collect, len(nb.cells) - 1)
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as e:
        cell = nb.cells[current["index"]]
        first = cell.source.strip().splitlines()[0][:100] if cell.source.strip() else ""
        detail = ANSI.sub("", str(e)).strip().splitlines()
        # the setup cell is at 0, so the index is the failing cell's place in the lab counting from 1
        raise LabError(
            f"cell {current['index']} of the lab failed ({type(e).__name__}) at: {first}\n" + "\n".join(detail[-12:])
        ) from None
    finally:
        nb.cells.pop(0)
        sockets.cleanup()
    collect = nb.cells.pop()
    for out in collect.get("outputs", []):
        if STATIC_MIME in (out.get("data") or {}):
            return dict(out["data"][STATIC_MIME])
    raise LabError(f"the kernel did not hand back its widgets: {json.dumps(collect.get('outputs'))[:500]}")


def make_static(nb: Any, widgets_html: dict[str, str]) -> tuple[int, int]:
    """Replace widget and plotly outputs by their static HTML and drop standard error; (players, figures) made."""
    from pulsarlab_widgets.classroom.animation import figure_html

    players = figures = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                continue
            data = out.get("data")
            if data is not None and WIDGET_MIME in data:
                static = widgets_html.get(data[WIDGET_MIME].get("model_id"), NEEDS_KERNEL)
                players += static.count('class="pulsarlab-static-player"')
                figures += static.count('class="pulsarlab-static-figure"')
                out["data"] = {"text/html": static}
            elif data is not None and PLOTLY_MIME in data:
                out["data"] = {"text/html": figure_html(data[PLOTLY_MIME])}
                figures += 1
            kept.append(out)
        cell["outputs"] = kept
    nb.metadata.pop("widgets", None)
    return players, figures


def to_html(nb: Any, with_code: bool = False) -> str:
    """The executed, static notebook as one page (nbconvert, template ``pulsarlab_export``)."""
    from nbconvert import HTMLExporter
    from plotly.offline import get_plotlyjs

    from pulsarlab_widgets.classroom.animation import page_css, page_script

    exporter = HTMLExporter(
        template_name="pulsarlab_export",
        extra_template_basedirs=[str(TEMPLATES)],
        exclude_input=not with_code,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    resources = {"pulsarlab": {"plotly_js": get_plotlyjs(), "player_js": page_script(), "css": page_css()}}
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return body


def write_atomically(out: Path, text: str) -> None:
    """Write ``text`` to ``out`` through a temporary file in the same folder, renamed into place."""
    folder = out.parent
    if not folder.is_dir():
        raise LabError(f"{out}: the folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a page is for sharing
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def export_lab(
    notebook: Path | str,
    out: Path | str,
    with_code: bool = False,
    timeout: int = CELL_TIMEOUT_S,
    max_frames: int | None = 200,
) -> ExportResult:
    """Execute the lab ``notebook`` and write it to ``out`` as one self-contained HTML page; a player carries at
    most ``max_frames`` frames, evenly spread (None: all; a long recording makes a big, slow page)."""
    started = time.perf_counter()
    notebook, out = Path(notebook), Path(out)
    if max_frames is not None and max_frames < 2:
        raise LabError(f"--max-frames must be at least 2, got {max_frames}")
    if out.suffix.lower() not in (".html", ".htm"):
        raise LabError(f"{out}: the page is HTML; name it .html")
    if out.exists() and out.is_dir():
        raise LabError(f"{out}: is a folder")
    if not out.parent.is_dir():
        raise LabError(f"{out}: the folder {out.parent} does not exist")
    nb = read_lab(notebook)
    nb.metadata.setdefault("title", _title(nb, notebook))
    widgets_html = execute(nb, notebook.resolve().parent, timeout, max_frames)
    players, figures = make_static(nb, widgets_html)
    page = to_html(nb, with_code)
    write_atomically(out, page)
    return ExportResult(notebook, out, len(page.encode()), time.perf_counter() - started, players, figures)


def write_site_index(folder: Path, pages: list[Path]) -> Path:
    """``folder/index.html``: a plain list of links to the exported pages (relative, so the folder can move)."""
    import nbformat

    items = []
    for page in sorted(pages, key=lambda p: p.name):
        title = page.stem
        source = Path("labs") / f"{page.stem}.ipynb"
        if source.is_file():
            title = _title(nbformat.read(source, as_version=4), source)
        items.append(f'<li><a href="{html.escape(page.name)}">{html.escape(title)}</a></li>')
    text = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>pulsarlab labs</title></head>'
        '<body style="font: 18px/1.5 sans-serif; max-width: 50em; margin: 2em auto"><h1>pulsarlab labs</h1>'
        f"<p>Each page works offline, without Python.</p><ul>{''.join(items)}</ul></body></html>\n"
    )
    index = folder / "index.html"
    write_atomically(index, text)
    return index


def _title(nb: Any, path: Path) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


__all__ = [
    "write_site_index",
    "LabError",
    "ExportResult",
    "export_lab",
    "publish_static_widgets",
    "read_lab",
    "static_widget_html",
]
