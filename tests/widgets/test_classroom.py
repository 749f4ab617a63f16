"""Issue 14 without a browser: the player's keys, its static frames, the exporter's and presenter's bad-input
handling, and an export of a small lab (a kernel runs it) with and without code."""

from __future__ import annotations

import html
import json
import os
import re
from functools import partial
from pathlib import Path

import nbformat
import pytest
from plotly.io.json import to_json_plotly

from pulsarlab.cli import main
from pulsarlab.scenarios.key_shared import KeySharedScenario
from pulsarlab_widgets.classroom import export
from pulsarlab_widgets.classroom.animation import delta, player_html, player_spec, spec_of, undelta
from pulsarlab_widgets.classroom.export import LabError, export_lab, read_lab, write_atomically
from pulsarlab_widgets.classroom.present import kernel_startup, presentation
from pulsarlab_widgets.player import Player, render
from pulsarlab_widgets.views import hash_range_view

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "labs" / "04-failover.ipynb"


def scenario(kind: str = "auto_split") -> KeySharedScenario:
    sc = KeySharedScenario(kind)
    for name in ("c1", "c2", "c3"):
        sc.add(name)
    sc.remove("c2")
    return sc


def write_notebook(path: Path, *sources: str, markdown: str = "# A small lab") -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(markdown)] + [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


def decoded(frames, i):
    """Frame i of a view's frames (0 whole, later ones deltas from the one before)."""
    frame = frames[0]
    for d in frames[1 : i + 1]:
        frame = undelta(frame, d)
    return frame


def test_delta_round_trips_and_shrinks_a_growing_history():
    history = [
        {"data": [{"x": list(range(n)), "y": [i * i for i in range(n)], "name": "c1"}], "layout": {"title": f"t{n}"}}
        for n in range(200, 240)
    ]
    previous = None
    size = 0
    for frame in history:
        d = frame if previous is None else delta(previous, frame)
        assert undelta(previous, d) == frame if previous is not None else d == frame
        size += len(json.dumps(d))
        previous = frame
    assert size < sum(len(json.dumps(f)) for f in history) / 10
    assert delta([1, 2], [3]) == [3] and delta({"a": 1}, {"b": 2}) == {"$dict": {"b": 2}}
    assert undelta({"a": 1}, {"$dict": {"b": 2}}) == {"b": 2}


def plain(obj):
    return json.loads(to_json_plotly(obj))


# -- the player's keys and static frames --------------------------------------------------------------------------
def test_keys_step_play_and_jump_like_the_buttons():
    sc = scenario()
    player = Player(sc.timeline, hash_range_view)
    last = len(sc.timeline) - 1
    player.press("ArrowRight")
    player.press("ArrowRight")
    assert player.index == 2
    player.press("ArrowLeft")
    assert player.index == 1
    player.press("End")
    assert player.index == last
    player.press(" ")  # at the end: starts again from the first frame
    assert player.index == 0 and player.play.playing
    player.press(" ")
    assert not player.play.playing
    player.press("Home")
    assert player.index == 0
    player.press("ArrowLeft")  # at the start: stays
    assert player.index == 0
    with pytest.raises(ValueError, match="ArrowRight"):
        player.press("q")
    assert player.keyboard in player.children and "pulsarlab-player" in player._dom_classes
    player.keyboard._received(player.keyboard, {"key": "ArrowRight"}, [])  # what the browser sends
    assert player.index == 1


def test_static_frames_are_the_figures_the_player_draws_stepping_forward():
    sc = scenario()
    player = Player(
        sc.timeline, [hash_range_view, partial(hash_range_view, title="again")], start=2, title="three join, one leaves"
    )
    spec = player_spec(player)
    n = len(sc.timeline)
    assert spec["start"] == 2 and len(spec["labels"]) == n and len(spec["views"]) == 2
    for v, view in enumerate(player.views):
        assert len(spec["views"][v]["frames"]) == n
        for i in (0, 1, n // 2, n - 1):
            expected = render(view, sc.timeline, i, i - 1 if i else None).to_plotly_json()
            expected["layout"].pop("template", None)
            got = decoded(spec["views"][v]["frames"], i)
            assert plain(got) == plain({"data": expected["data"], "layout": expected["layout"]}), (v, i)
    for i in range(n):
        assert html.escape(sc.timeline[i].explanation) in spec["labels"][i]
        assert f"frame {i} of 0–{n - 1}" in spec["labels"][i]
    assert spec["indices"] == list(range(n))
    few = player_spec(player, max_frames=4)
    assert few["indices"][0] == 0 and few["indices"][-1] == n - 1 and 2 in few["indices"] and len(few["indices"]) <= 5
    assert few["start"] == few["indices"].index(2) and "of the" in few["labels"][0]
    k = few["indices"][1]
    jumped = render(player.views[0], sc.timeline, k, few["indices"][0]).to_plotly_json()  # as a jump from the last
    jumped["layout"].pop("template", None)
    assert plain(decoded(few["views"][0]["frames"], 1)) == plain({"data": jumped["data"], "layout": jumped["layout"]})
    page = player_html(player, "p1")
    assert spec_of(page)["labels"] == spec["labels"] and "three join, one leaves" in page
    assert page.count("</script>") == 1  # the frames' JSON cannot close its script tag early


# -- bad input ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, content, message",
    [
        ("missing.ipynb", None, "no such file"),
        ("notes.txt", "hello", "not a notebook"),
        ("broken.ipynb", "{not json", "not a readable Jupyter notebook"),
        ("other.ipynb", "nb", "not a pulsarlab lab"),
    ],
)
def test_a_missing_or_non_lab_notebook_is_refused_and_nothing_is_written(tmp_path, capsys, name, content, message):
    path = tmp_path / name
    if content == "nb":
        write_notebook(path, "import pandas as pd\nprint(pd.__version__)")
    elif content is not None:
        path.write_text(content)
    with pytest.raises(LabError, match=message):
        read_lab(path)
    out = tmp_path / "out" / "page.html"
    out.parent.mkdir()
    assert main(["export", str(path), "--out", str(out)]) == 1
    assert message in capsys.readouterr().err
    assert list(out.parent.iterdir()) == []
    assert main(["present", str(path), "--port", "0"]) == 2
    assert message in capsys.readouterr().err


def test_export_arguments_are_checked(tmp_path, capsys):
    assert main(["export", str(LAB)]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["export", str(LAB), str(LAB), "--out", str(tmp_path / "x.html")]) == 2
    with pytest.raises(LabError, match="name it .html"):
        export_lab(LAB, tmp_path / "page.txt")
    with pytest.raises(LabError, match="does not exist"):
        export_lab(LAB, tmp_path / "no" / "page.html")
    assert not (tmp_path / "no").exists()


def test_a_failed_write_leaves_the_old_page_and_no_temporary_file(tmp_path, monkeypatch):
    out = tmp_path / "page.html"
    out.write_text("old page")

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(export.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_atomically(out, "new page")
    assert out.read_text() == "old page" and os.listdir(tmp_path) == ["page.html"]


def test_presenter_listens_on_loopback_with_a_token_unless_told_otherwise():
    p = presentation(LAB, port=0)
    assert "--Voila.ip=127.0.0.1" in p.argv and "--strip_sources=True" in p.argv
    assert "--template=pulsarlab-present" in p.argv
    token = next(a.split("=", 1)[1] for a in p.argv if a.startswith("--Voila.token="))
    assert len(token) >= 24 and p.url.endswith(f"?token={token}") and p.cwd == LAB.parent
    assert presentation(LAB, port=0, token="t0k").url.endswith("?token=t0k")
    open_p = presentation(LAB, port=9000, no_token=True, one_view=True)
    assert "--Voila.token=" in open_p.argv and open_p.url == "http://127.0.0.1:9000/?view=one"
    with pytest.raises(LabError, match="not a loopback address"):
        presentation(LAB, host="0.0.0.0")
    assert "--Voila.ip=0.0.0.0" in presentation(LAB, host="0.0.0.0", port=9000, allow_remote=True).argv
    with pytest.raises(LabError, match="exclude each other"):
        presentation(LAB, token="a", no_token=True)
    with pytest.raises(LabError, match="0..65535"):
        presentation(LAB, port=70000)


# -- an export (runs a kernel) --------------------------------------------------------------------------------------
SMALL_LAB = (
    "import ipywidgets as widgets\nfrom pulsarlab.scenarios.key_shared import KeySharedScenario\n"
    "from pulsarlab_widgets.player import Player\nfrom pulsarlab_widgets.views import hash_range_view\n"
    "sc = KeySharedScenario('auto_split')\nfor name in ('c1', 'c2'):\n    sc.add(name)",
    "Player(sc.timeline, hash_range_view, title='two join')",
    "widgets.VBox([widgets.HTML('<i>an html widget</i>'), widgets.IntSlider()])",
    "hash_range_view(sc.timeline[-1].snapshot, []).show()\nprint('printed text')",
)


@pytest.mark.notebook
def test_export_writes_one_offline_page_with_players_and_hides_code_unless_asked(tmp_path, capfd):
    lab = write_notebook(tmp_path / "small.ipynb", *SMALL_LAB, markdown="# Small lab\nThe teaching text.")
    out = tmp_path / "small.html"
    result = export_lab(lab, out)
    said = capfd.readouterr()
    assert "without encryption" not in said.err + said.out, "the kernel's TCP warning reached the terminal"
    page = out.read_text()
    assert result.players == 1 and result.figures == 1 and result.bytes == len(page.encode())
    assert "The teaching text." in page and "printed text" in page and "<i>an html widget</i>" in page
    assert "needs a running kernel" not in page and "works in the lab with a running kernel" in page
    assert "KeySharedScenario" not in page.split("<body", 1)[1]
    # nothing loads from elsewhere: no script or link with an address, no url() in the styles (the browser test
    # opens the page with the network blocked)
    assert re.findall(r"<script\b[^>]*\bsrc=", page) == [] and re.findall(r"<link\b[^>]*\bhref=", page) == []
    styles = " ".join(re.findall(r"<style[^>]*>(.*?)</style>", page, flags=re.S))
    assert re.findall(r"url\(\s*['\"]?(?:https?:)?//", styles) == [] and "@import" not in styles
    assert page.count('define("plotly"') + page.count("Plotly=") <= 2  # plotly.js inlined once
    assert "application/vnd.jupyter.widget" not in page
    player = page[page.index('<div class="pulsarlab-static-player"') :]
    assert spec_of(player)["labels"][0].startswith("<b>frame 0 of 0–")
    with_code = export_lab(lab, tmp_path / "small-code.html", with_code=True)
    assert "KeySharedScenario" in with_code.out.read_text().split("<body", 1)[1]


@pytest.mark.notebook
def test_a_lab_whose_cell_fails_is_not_exported(tmp_path):
    lab = write_notebook(tmp_path / "fails.ipynb", "import pulsarlab\nx = 1", "raise RuntimeError('boom in cell')")
    out = tmp_path / "fails.html"
    out.write_text("the previous page")
    with pytest.raises(LabError, match=r"(?s)cell 3 of the lab failed .*RuntimeError: boom in cell"):
        export_lab(lab, out)
    assert out.read_text() == "the previous page" and sorted(os.listdir(tmp_path)) == ["fails.html", "fails.ipynb"]


def test_the_presenter_kernels_start_up_file_is_its_versions_own(tmp_path, monkeypatch):
    """Two versions of the lab presenting on one machine (a teacher's upgrade beside a running presenter, two
    checkouts) each keep the start-up file their kernels run: it is named by what it imports."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    ours = kernel_startup()
    other = ours.with_name("kernel_startup.py")  # what an older version wrote, importing a module gone since
    other.write_text('__import__("pulsarlab_widgets.present_kernel")\n')
    assert kernel_startup() == ours != other
    imported = re.fullmatch(r'__import__\("([\w.]+)"\)\n', ours.read_text().replace("'", '"'))
    assert imported is not None
    __import__(imported.group(1))  # the module exists in this version
    ours.write_text('__import__("pulsarlab_widgets.present_kernel")\n')  # clobbered: written back on next start
    assert kernel_startup().read_text() != other.read_text()
