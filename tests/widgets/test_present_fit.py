"""Presenter mode's fit on the Python side: a player tells the page the heights its views drew, draws each frame at
the heights the page asks for (never taller than the view drew it), and goes back to the views' own when the page
asks for none; presenter kernels draw figure text at 18 px, other kernels keep plotly's."""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio
import pytest
from test_figure_layout import ring_scenario

from pulsarlab_widgets.fit import PRESENT_FONT_PX, present_figures
from pulsarlab_widgets.player import Player, render
from pulsarlab_widgets.views.hash_range import hash_range_view
from pulsarlab_widgets.views.ring import ring_view


def _own_heights(player: Player) -> list[int]:
    return [render(v, player.timeline, player.index).layout.height for v in player.views]


def test_a_player_draws_its_frames_at_the_heights_the_page_asks_for():
    player = Player(ring_scenario().timeline, [ring_view, hash_range_view], start=2, prefetch=False)
    own = _own_heights(player)
    assert player.fit.natural == own
    assert [f.layout.height for f in player.figures] == own

    asked = [own[0] // 2, own[1] + 500]
    player.fit.heights = asked  # as the page sets it; a figure is never drawn taller than its view drew it
    assert [f.layout.height for f in player.figures] == [own[0] // 2, own[1]]
    player.step()
    own = _own_heights(player)
    assert player.fit.natural == own
    assert [f.layout.height for f in player.figures] == [min(o, a) for o, a in zip(own, asked)]

    player.fit.heights = []
    assert [f.layout.height for f in player.figures] == own


@pytest.fixture
def default_template():
    saved = pio.templates.default
    yield
    pio.templates.default = saved


def test_presenter_kernels_draw_figure_text_at_projector_size(default_template):
    assert go.Figure().layout.template.layout.font.size in (None, 12)
    present_figures()
    present_figures()  # twice (a second import in the kernel) changes nothing more
    assert pio.templates.default == "pulsarlab_present"
    assert pio.templates["pulsarlab_present"].layout.colorway == pio.templates["plotly"].layout.colorway
    fig = ring_view(ring_scenario().timeline[2].snapshot, [])
    assert fig.layout.template.layout.font.size == PRESENT_FONT_PX
